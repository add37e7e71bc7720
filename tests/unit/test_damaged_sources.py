"""A truncated PDF (a drill document made by `tests.support.drills.make_docs`, its tail cut off)
through the split and the collector (sandboxed MuPDF, no Celery needed): MuPDF repairs it; every
page says `repaired`, and a page that comes out empty is refused (`source_damaged`), never
accepted as blank. A source that is not there ends in `source_missing`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.drills import make_docs
from pagefleet.workers.collect.document import collect_held
from pagefleet.workers.model import JobSpec
from pagefleet.workers.settings import get_settings
from pagefleet.workers.split.pages import split_document
from pagefleet.workers.store.storage import LocalStorage


def truncated(folder: Path, before_object: int, pages: int = 3) -> Path:
    """A drill document cut just before its object `before_object`: 6 loses every page's text
    (the content streams come after the page objects), 10 the last two pages' text."""
    source = make_docs(folder, 1, pages, tag="cut")[0]
    data = source.read_bytes()
    cut = folder / f"truncated-before-{before_object}.pdf"
    cut.write_bytes(data[: data.index(f"\n{before_object} 0 obj".encode()) + 1])
    return cut


def run(pdf: Path, out: Path, **options) -> tuple[dict, dict]:
    """Split and collect in place; (document.json, report.json)."""
    settings = get_settings()
    spec = JobSpec(
        job_id=f"t-{pdf.stem}",
        source=str(pdf),
        filename=pdf.name,
        storage=LocalStorage(out).url,
        artifact_prefix="doc",
        options={"structure": False, **options},
    )
    outcome = split_document(spec, settings)
    assert outcome.error is None and outcome.held is not None, outcome
    collect_held(spec, settings, outcome.held)
    read = lambda name: json.loads((out / "doc" / name).read_text(encoding="utf-8"))  # noqa: E731
    return read("document.json"), read("report.json")


def test_a_truncated_pdf_with_nothing_left_is_refused_not_blank(tmp_path: Path) -> None:
    document, report = run(truncated(tmp_path, 6), tmp_path / "out")
    assert document["status"] == "failed" and document["page_count"] == 3
    for page in document["pages"]:
        assert page["route"] == "failed" and page["quality"]["reasons"] == ["source_damaged"], page
        assert "repaired" in page["quality"]["warnings"] and page["layer"]["repaired"] is True
    assert report["warnings"]["repaired"] == 3 and report["needs_review"] == [1, 2, 3]


def test_a_truncated_pdf_keeps_what_it_could_read(tmp_path: Path) -> None:
    document, report = run(truncated(tmp_path, 10), tmp_path / "out")
    routes = [page["route"] for page in document["pages"]]
    assert routes == ["text_layer", "failed", "failed"] and document["status"] == "needs_review"
    assert "Drill" in document["pages"][0]["text"]
    assert all("repaired" in page["quality"]["warnings"] for page in document["pages"])
    assert [page["quality"]["reasons"] for page in document["pages"][1:]] == [
        ["source_damaged"]
    ] * 2


def test_forced_ocr_does_not_accept_a_damaged_page_blank(tmp_path: Path) -> None:
    document, _ = run(truncated(tmp_path, 6), tmp_path / "out", ocr="force")
    assert {page["route"] for page in document["pages"]} == {"failed"}


def test_an_intact_file_says_nothing_of_repairs(tmp_path: Path) -> None:
    document, report = run(make_docs(tmp_path, 1, 2, tag="whole")[0], tmp_path / "out")
    assert document["status"] == "accepted" and "repaired" not in report["warnings"]


def test_a_source_that_is_not_there_is_source_missing(tmp_path: Path) -> None:
    gone = tmp_path / "gone.pdf"
    spec = JobSpec(
        job_id="t-gone",
        source=str(gone),
        filename=gone.name,
        storage=LocalStorage(tmp_path).url,
        artifact_prefix="doc",
    )
    outcome = split_document(spec, get_settings())
    assert outcome.error is not None and outcome.error["code"] == "source_missing"
    assert json.loads((tmp_path / "doc" / "error.json").read_text())["code"] == "source_missing"
