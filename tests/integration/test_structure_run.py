"""Structure end to end: `pagefleet run` over documents with known structure (and the project's
other fixtures) writes chunks.jsonl for every accepted document; every citation replays through
the page's edit map; refused pages never reach a chunk; reparse finds what an older pipeline made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pagefleet.routing.structure.offsets import citation_replays

pytestmark = pytest.mark.integration
PAGEFLEET = str(Path(sys.executable).parent / "pagefleet")


@pytest.fixture(scope="module")
def run_out(
    structure_dir: Path, fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    out = tmp_path_factory.mktemp("out")
    inputs = [str(p) for p in sorted(structure_dir.glob("*.pdf"))]
    inputs += [
        str(fixtures_dir / n)
        for n in ("born_digital_hebrew.pdf", "born_digital_arabic.pdf", "visual_order_hebrew.pdf")
        if (fixtures_dir / n).exists()
    ]
    proc = subprocess.run(
        [PAGEFLEET, "run", *inputs, "--out", str(out), "--ocr", "off", "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode in (0, 2), proc.stderr[-3000:]
    return out


def test_every_output_holds_to_the_published_schemas(run_out: Path) -> None:
    """docs/schemas/: document.json and every chunks.jsonl line of a real run validate."""
    from tests.unit.test_docs_schemas import check_outputs

    folders = sorted(p.parent for p in run_out.glob("*/document.json"))
    assert len(folders) >= 7
    assert sum(check_outputs(folder) for folder in folders) > 0


def test_every_accepted_document_has_chunks_whose_citations_replay(run_out: Path) -> None:
    documents = sorted(run_out.glob("*/document.json"))
    assert len(documents) >= 7
    for path in documents:
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert doc["schema_version"] == 2
        chunks = [
            json.loads(line)
            for line in (path.parent / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        pages = {p["number"]: p for p in doc["pages"]}
        accepted = {n for n, p in pages.items() if not p["needs_review"]}
        if doc["status"] == "accepted":
            assert chunks, path
        for chunk in chunks:
            assert set(chunk["pages"]) <= accepted
            for cite in chunk["citations"]:
                page = pages[cite["page"]]
                assert citation_replays(
                    page["raw_text"], page["edits"], page["text"], cite["start"], cite["end"]
                )
        for page in pages.values():
            for block in page["blocks"]:
                assert page["text"][block["start"] : block["end"]] == block["text"]


def test_structure_of_a_hebrew_report(run_out: Path) -> None:
    doc = json.loads((run_out / "he_report_tables" / "document.json").read_text(encoding="utf-8"))
    first = doc["pages"][0]
    kinds = [b["type"] for b in first["blocks"]]
    assert kinds[0] == "header" and kinds[-1] == "footer" and "table" in kinds
    table = next(b for b in first["blocks"] if b["type"] == "table")["table"]
    assert table["rows"][0] == [
        "סעיף",
        "2023",
        "2024",
        "שינוי",
    ]  # logical order: rightmost column first
    assert table["rows"][-1] == ["מספר עובדים", "312", "298", "-4.5%"]
    md = (run_out / "he_report_tables" / "document.md").read_text(encoding="utf-8")
    assert "# דוח שנתי לבעלי המניות" in md and "| סעיף | 2023 | 2024 | שינוי |" in md
    assert "עמוד 1" not in md  # the running footer stays out of Markdown
    chunks = (run_out / "he_report_tables" / "chunks.jsonl").read_text(encoding="utf-8")
    assert (
        "עמוד 1" not in chunks
        and '"headings": ["דוח שנתי לבעלי המניות", "תוצאות כספיות"]' in chunks
    )


def test_reparse_dry_run_lists_older_documents(run_out: Path) -> None:
    proc = subprocess.run(
        [PAGEFLEET, "reparse", str(run_out), "--below-version", "99", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "he_report_tables/document.json: pipeline" in proc.stderr
    assert "document(s) chosen" in proc.stderr


def test_structure_off_gives_text_only_blocks_and_still_chunks(
    structure_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            PAGEFLEET,
            "run",
            str(structure_dir / "he_report_tables.pdf"),
            "--out",
            str(out),
            "--ocr",
            "off",
            "--workers",
            "1",
            "--no-structure",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads((out / "he_report_tables" / "document.json").read_text(encoding="utf-8"))
    assert doc["options"]["structure"] is False
    assert all(not p["blocks"] for p in doc["pages"])  # no layout gathered, no tables checked
    assert (out / "he_report_tables" / "chunks.jsonl").read_text(encoding="utf-8").strip()
