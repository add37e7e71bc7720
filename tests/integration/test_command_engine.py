"""`command:NAME` in a real fleet: a site's OCR program, configured in PAGEFLEET_OCR__COMMANDS and
named in a chain, receives the absolute PDF path and the 1-based page number, prints Markdown, and
its output is accepted through the same gate as any engine's."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from tests.conftest import PrivateFleet, wait_for_job
from pagefleet.workers.settings import Options
from pagefleet.workers.store.storage import LocalStorage
from pagefleet.workers.split.submit import enqueue, spec_for_path

pytestmark = pytest.mark.integration
PROGRAM = """#!{python}
import json, os, sys
with open(os.environ["SPY"], "w") as spy:
    json.dump(sys.argv[1:], spy)
print("# מכתב")
print()
print("שלום עולם. זהו עמוד שנקרא בידי תוכנת הזיהוי של האתר, והוא עובר את אותו שער איכות כמו כל מנוע אחר.")
"""


def test_site_command_reads_the_page_through_the_gate(fixtures_dir: Path, tmp_path: Path) -> None:
    program = tmp_path / "site-ocr"
    program.write_text(PROGRAM.format(python=sys.executable), encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    spy = tmp_path / "argv.json"
    chain = '["command:site", "tesseract:heb+eng"]'
    env = {
        "PAGEFLEET_OCR__COMMANDS": json.dumps(
            {"site": {"argv": [str(program)], "timeout_s": 60, "env": {"SPY": str(spy)}}}
        ),
        "PAGEFLEET_OCR__CHAINS__CPU_HE": chain,
        "PAGEFLEET_OCR__CHAINS__CPU_DEFAULT": chain,
    }
    pdf = fixtures_dir / "image_only_hebrew_scan.pdf"
    out = tmp_path / "out"
    with PrivateFleet(tmp_path, env, (("split,collect", 1), ("cpu", 1))):
        spec = spec_for_path(str(pdf), LocalStorage(out).url, "doc", Options())
        enqueue(spec)
        info = wait_for_job(spec.job_id)
    assert info["status"] == "accepted", info
    page = json.loads((out / "doc" / "document.json").read_text())["pages"][0]
    assert (
        page["engine"] == "command:site"
        and page["route"] == "ocr"
        and page["attempts"][-1]["accepted"]
    )
    assert "שלום עולם" in page["text"] and page["script"] == "he"
    assert json.loads(spy.read_text()) == [str(pdf.resolve()), "1"]
