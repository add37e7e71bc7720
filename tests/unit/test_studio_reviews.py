"""Review studio decisions: review.json beside the artifacts (document.json untouched), the export,
document.reviewed.md, and the risk order / next-flagged / unresolved rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pagefleet.workers.store.artifacts import markdown
from pagefleet.workers.cli.studio import reviews, risk
from pagefleet.workers.cli.studio.library import Library
from pagefleet.workers.model import (
    Attempt,
    DocumentRecord,
    PageRecord,
    Quality,
    ReviewPreview,
    RouterInfo,
    SourceInfo,
)

ROUTER = RouterInfo(source="text_layer", script="he")


def _accepted(
    n: int, text: str, *, warnings: list[str] | None = None, confidence: float | None = None
) -> PageRecord:
    return PageRecord(
        number=n,
        script="he",
        direction="rtl",
        router=ROUTER,
        route="ocr" if confidence else "text_layer",
        engine="pymupdf",
        text=text,
        markdown=text,
        raw_text=text,
        ocr_confidence=confidence,
        quality=Quality(ok=True, warnings=warnings or []),
        attempts=[Attempt(engine="pymupdf", accepted=True, rung="text_layer")],
    )


def _refused(n: int, preview: str | None, reasons: list[str]) -> PageRecord:
    return PageRecord(
        number=n,
        router=ROUTER,
        route="review_required" if preview else "failed",
        needs_review=True,
        raw_text=preview or "",
        quality=Quality(ok=False, reasons=reasons),
        review_preview=ReviewPreview(
            engine="pymupdf", text=preview, markdown=preview, reasons=reasons
        )
        if preview
        else None,
        attempts=[Attempt(engine="pymupdf", accepted=False, reasons=reasons, rung="text_layer")],
    )


def _document() -> DocumentRecord:
    pages = [
        _accepted(1, "שלום 2024"),
        _refused(2, None, ["no_text"]),
        _accepted(3, "עמוד", warnings=["tatweel"]),
        _refused(4, "ùìåí òåìí", ["latin1_mojibake"]),
        _accepted(5, "טקסט", confidence=52.0),
        _accepted(6, "טוב", confidence=93.0),
    ]
    return DocumentRecord(
        pipeline_version="t",
        job_id="j1",
        status="needs_review",
        page_count=len(pages),
        source=SourceInfo(filename="x.pdf", bytes=10, sha256="a" * 64),
        pages=pages,
    )


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Library, Any, dict[str, Any], Path]:
    folder = tmp_path / "out" / "x"
    folder.mkdir(parents=True)
    doc = _document().model_dump(mode="json")
    (folder / "document.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    (folder / "document.md").write_text(markdown(_document()), encoding="utf-8")
    library = Library.open(str(tmp_path / "out"))
    return library, library.find("x"), doc, folder


def test_risk_order_refused_then_warnings_then_low_confidence() -> None:
    pages = _document().model_dump(mode="json")["pages"]
    order = [p["number"] for p in risk.risk_order(pages, low_confidence=75.0)]
    assert order == [2, 4, 3, 5, 1, 6]
    assert [risk.rank(p, 75.0) for p in pages] == [3, 0, 1, 0, 2, 3]


def test_next_flagged_walks_refused_pages_and_wraps() -> None:
    pages = _document().model_dump(mode="json")["pages"]
    assert risk.next_flagged(pages, None) == 2
    assert risk.next_flagged(pages, 2) == 4
    assert risk.next_flagged(pages, 4) == 2
    assert risk.next_flagged(pages, 3, step=-1) == 2
    assert risk.next_flagged(pages, 2, step=-1) == 4
    assert risk.next_flagged([p for p in pages if not risk.is_refused(p)], 1) is None


def test_decision_writes_review_json_and_never_document_json(stored) -> None:
    library, ref, doc, folder = stored
    before = (folder / "document.json").read_bytes()
    reviews.decide(library, ref, doc, 4, "flag", "first look")
    made = reviews.decide(library, ref, doc, 4, "approve", "  mojibake of cp1255; text checked  ")
    assert (folder / "document.json").read_bytes() == before
    saved = json.loads((folder / "review.json").read_text(encoding="utf-8"))
    assert saved["pages"]["4"]["decision"] == "approve" and saved["pages"]["4"]["note"] == made.note
    assert made.note == "mojibake of cp1255; text checked" and made.reasons == ["latin1_mojibake"]
    assert [h["decision"] for h in saved["history"]] == ["flag", "approve"]
    assert saved["document"] == {"job_id": "j1", "sha256": "a" * 64, "filename": "x.pdf"}
    with pytest.raises(reviews.ReviewError):
        reviews.decide(library, ref, doc, 99, "approve", "")


def test_unresolved_and_stats_follow_decisions(stored) -> None:
    library, ref, doc, _ = stored
    reviews.decide(library, ref, doc, 2, "flag", "blank scan")
    decisions = reviews.load(library, ref).pages
    stats = risk.page_stats(doc["pages"], decisions, 75.0)
    assert stats["unresolved"] == 3 and stats["flagged"] == 1 and stats["risk"]["refused"] == 2
    assert [p["number"] for p in doc["pages"] if risk.unresolved(p, decisions, 75.0)] == [3, 4, 5]


def test_export_is_one_json_with_every_page(stored) -> None:
    library, ref, doc, _ = stored
    reviews.decide(library, ref, doc, 4, "approve", "ok")
    out = reviews.export(ref, doc, reviews.load(library, ref))
    assert out["document"] == "x" and len(out["pages"]) == 6
    assert out["pages"][3] | {"decided_at": None} == {
        "page": 4,
        "route": "review_required",
        "refused": True,
        "reasons": ["latin1_mojibake"],
        "warnings": [],
        "decision": "approve",
        "note": "ok",
        "decided_at": None,
        "reviewer": "",
        "reason": "",
        "corrected": False,
        "stale": False,
    }
    json.dumps(out)


def test_release_lets_approved_previews_through_with_the_decision_recorded(stored) -> None:
    library, ref, doc, folder = stored
    with pytest.raises(reviews.ReviewError, match="nothing to release"):
        reviews.release(library, ref, doc)
    with pytest.raises(reviews.ReviewError, match="no text to approve"):
        reviews.decide(library, ref, doc, 2, "approve", "no preview to release")
    reviews.decide(library, ref, doc, 4, "approve", "evil --> <script>", reviewer="dana")
    done = reviews.release(library, ref, doc)
    assert done.pages == [4]
    text = (folder / "document.reviewed.md").read_text(encoding="utf-8")
    original = (folder / "document.md").read_text(encoding="utf-8")
    assert "ùìåí òåìí" in text and "ùìåí òåìí" not in original
    assert "page 4 was review_required (reasons=latin1_mojibake); approved by a reviewer" in text
    assert (
        "evil - -> <script>" in text and "evil -->" not in text
    )  # the note cannot close the comment
    assert "pagefleet: page 2 failed; reasons=no_text; text withheld" in text
    assert text.replace(
        text[text.index("<!-- page 4 -->") : text.index("<!-- page 5 -->")], ""
    ) == original.replace(
        original[original.index("<!-- page 4 -->") : original.index("<!-- page 5 -->")], ""
    )
    assert json.loads((folder / "review.json").read_text(encoding="utf-8"))["released"][
        "pages"
    ] == [4]


def test_decisions_from_another_run_are_marked_stale(stored) -> None:
    from pagefleet.workers.cli.studio.state import Studio
    from pagefleet.workers.cli.studio.web import _document_context
    from pagefleet.workers.settings import StudioSettings

    library, ref, doc, folder = stored
    studio = Studio(library, StudioSettings(), broker=None)
    reviews.decide(library, ref, doc, 4, "approve", "")
    assert _document_context(studio, "x", False)["stale"] is False
    saved = json.loads((folder / "review.json").read_text(encoding="utf-8"))
    saved["document"]["job_id"] = "an-earlier-run"
    (folder / "review.json").write_text(json.dumps(saved), encoding="utf-8")
    context = _document_context(studio, "x", True)
    assert context["stale"] is True and [r["page"]["number"] for r in context["rows"]] == [2, 3, 5]
