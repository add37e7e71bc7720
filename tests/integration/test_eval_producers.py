"""`make eval-producers` end to end on two fpdf2 pages: the real embedded fleet beside PyMuPDF and
arafix, the Markdown page and the closing line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.eval_producers import main
from fixtures.make_producer_docs import generate

pytestmark = pytest.mark.integration


def test_eval_producers_scores_the_fleet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    generate(docs, producers=("fpdf2",), scripts=("he", "ar"), fonts=("dejavu",))
    md = tmp_path / "producers.md"
    args = ["--docs", str(docs), "--work", str(tmp_path / "work"), "--markdown", str(md)]
    assert main([*args, "--systems", "fleet,pymupdf,arafix"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    found = re.fullmatch(r"producers_wer fleet=(\S+) best_peer=(\S+) refused=(\d+)/(\d+)", last)
    assert found, last
    assert found.group(4) == "2"
    if found.group(3) != "2":  # the fleet accepted something: its text was scored
        assert 0.0 <= float(found.group(1)) < 1.0
    assert 0.0 <= float(found.group(2)) < 1.0
    page = md.read_text(encoding="utf-8")
    assert "| fpdf2 | he | 1 |" in page and "| fpdf2 | ar | 1 |" in page and last in page
    records = json.loads((tmp_path / "work" / "pages.json").read_text(encoding="utf-8"))
    assert {r["system"] for r in records} == {"fleet", "pymupdf", "arafix"}
    assert [r["document"] for r in records if r["system"] == "arafix"] == ["fpdf2-ar-dejavu"]
