"""bench/profile_small.py: a real split of one-page documents (a private Redis, the warm sandbox)
timed by section, and the sandbox's floor beside it: MuPDF alone reading the same documents. No
timing is asserted."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest

from bench import profile_small
from tests.conftest import CORPUS, ROOT
from tests.support.pdfs import text_pages


def test_the_floor_reads_every_file_and_is_a_time_a_document(tmp_path: Path) -> None:
    files = [text_pages(tmp_path / "one.pdf", 1), text_pages(tmp_path / "three.pdf", 3)]
    floor = profile_small.mupdf_floor(files, passes=1)
    assert math.isfinite(floor) and floor > 0
    with pytest.raises(pymupdf.FileNotFoundError):  # every file is opened: a missing one is not skipped
        profile_small.mupdf_floor([*files, tmp_path / "missing.pdf"], passes=1)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not beside the checkout")
def test_a_profile_of_eight_documents_prints_every_section_and_the_floor() -> None:
    # its own process: the profile replaces functions of the fleet's modules with timed ones
    run = subprocess.run([sys.executable, "bench/profile_small.py", str(CORPUS), "--docs", "8"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout.splitlines()
    head = re.fullmatch(r"8 one-page documents: wall (\S+) ms, parent CPU (\S+) ms a document; sandbox \(its server "
                        r"and children\) (\S+) ms; Redis commands (\S+) a document", out[0])
    assert head and all(float(x) > 0 for x in head.groups())
    for _, _, label in profile_small.SECTIONS:
        assert any(line.startswith(f"  {label}") for line in out[1:-1]), label
    floor = re.fullmatch(r"the sandbox's floor: MuPDF alone, open \+ get_text\(\) of each in one process "
                         r"\(best of 2\) (\S+) ms a document", out[-1])
    assert floor and float(floor.group(1)) > 0
