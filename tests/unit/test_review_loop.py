"""The review loop's domain logic (pagefleet.workers.review): corrections as edit maps on raw_text, decisions
with their hash and revision, the reviewed artifacts built from document.json + review.json, the
local write that loses no concurrent decision, and reparse skipping reviewed pages."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pagefleet.routing.edits import Edit, apply_edits, verify_edits
from pagefleet.workers.cli.reparse import Criteria, why_reparse
from pagefleet.workers.model import (
    Attempt,
    Block,
    DocumentRecord,
    PageRecord,
    Quality,
    ReviewPreview,
    RouterInfo,
    SourceInfo,
    TableData,
)
from pagefleet.workers.review import corrections, decisions, reviewed, store
from pagefleet.workers.review.decisions import ReviewConflict, ReviewError
from pagefleet.workers.store.artifacts import markdown
from pagefleet.workers.store.storage import LocalStorage

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"
ROUTER = RouterInfo(source="text_layer", script="he")
RAW_AMOUNTS = (
    "טבלה\n00.511₪\nעכבר 1"  # a visual-order layer: the amount reversed, the rest repaired
)
SHOWN_AMOUNTS = "טבלה\n00.511₪\nעכבר 1"
TABLE_TEXT = "דוח\nסעיף 2023\nהכנסות 1,250.4\nהוצאות 830.1"


def _edit(raw: str, start: int, end: int, new: str, kind: str, shift: int = 0) -> dict[str, Any]:
    return Edit(start, end, new, kind, start + shift, start + shift + len(new)).to_dict()


def _pages() -> list[PageRecord]:
    raw1 = "שלום  עולם 2024"
    edits1 = [_edit(raw1, 4, 6, " ", "whitespace")]
    table = Block(
        type="table",
        text=TABLE_TEXT[4:],
        start=4,
        end=len(TABLE_TEXT),
        direction="rtl",
        bbox=[50.0, 100.0, 500.0, 200.0],
        table=TableData(
            rows=[["סעיף", "2023"], ["הכנסות", "1,250.4"], ["הוצאות", "830.1"]], header_rows=1
        ),
    )
    heading = Block(type="heading", text="דוח", start=0, end=3, direction="rtl", level=1)
    return [
        PageRecord(
            number=1,
            script="he",
            direction="rtl",
            router=ROUTER,
            route="text_layer_repaired",
            engine="pymupdf",
            raw_text=raw1,
            edits=edits1,
            text=apply_edits(raw1, [Edit.from_dict(e) for e in edits1]),
            markdown="שלום עולם 2024",
            quality=Quality(ok=True),
            attempts=[Attempt(engine="pymupdf", accepted=True, rung="text_layer")],
        ),
        PageRecord(
            number=2,
            script="he",
            direction="rtl",
            router=ROUTER,
            route="review_required",
            needs_review=True,
            raw_text=RAW_AMOUNTS,
            quality=Quality(ok=False, reasons=["table_unrecovered"]),
            review_preview=ReviewPreview(
                engine="pymupdf", text=SHOWN_AMOUNTS, markdown=SHOWN_AMOUNTS
            ),
        ),
        PageRecord(
            number=3,
            router=ROUTER,
            route="failed",
            needs_review=True,
            quality=Quality(ok=False, reasons=["no_text"]),
        ),
        PageRecord(
            number=4,
            script="he",
            direction="rtl",
            router=ROUTER,
            route="text_layer",
            engine="pymupdf",
            raw_text=TABLE_TEXT,
            text=TABLE_TEXT,
            markdown="# דוח",
            blocks=[heading, table],
            quality=Quality(ok=True),
        ),
    ]


def _doc() -> dict[str, Any]:
    pages = _pages()
    record = DocumentRecord(
        pipeline_version="t",
        job_id="j1",
        status="needs_review",
        page_count=len(pages),
        source=SourceInfo(filename="x.pdf", bytes=10, sha256="a" * 64),
        pages=pages,
    )
    return record.model_dump(mode="json")


def _decide(
    review: decisions.ReviewFile,
    doc: dict[str, Any],
    number: int,
    verdict: str,
    *,
    text: str | None = None,
    reason: str = "",
    revision: int | None = None,
    who: str = "dana",
) -> decisions.ReviewFile:
    page = doc["pages"][number - 1]
    edits = None
    if text is not None:
        edits = corrections.corrected_edits(
            page["raw_text"], decisions.base_edits(page), decisions.base_text(page), text
        )
    made = decisions.new_decision(page, verdict, reviewer=who, reason=reason, edits=edits)
    return decisions.record(review, doc, made, revision)


def test_a_correction_is_an_edit_map_on_raw_text_composed_with_the_pages_own() -> None:
    page = _doc()["pages"][0]
    corrected = "שלום עולם 2025\nשורה חדשה"
    edits = corrections.corrected_edits(page["raw_text"], page["edits"], page["text"], corrected)
    assert apply_edits(page["raw_text"], [Edit.from_dict(e) for e in edits]) == corrected
    assert [e["kind"] for e in edits] == ["whitespace", "review"]
    assert edits[0] == page["edits"][0]  # the repair is kept as it was
    rng = random.Random(55)
    for _ in range(200):  # any correction of a repaired text replays, whatever it touches
        chars = list(page["text"])
        for _ in range(rng.randint(1, 5)):
            at, op = rng.randrange(len(chars) + 1), rng.random()
            if op < 0.4:
                chars.insert(at, rng.choice("א1 \n₪x"))
            elif at < len(chars):
                chars[at : at + 1] = [] if op < 0.7 else [rng.choice("ב2 ")]
        new = "".join(chars)
        made = corrections.corrected_edits(page["raw_text"], page["edits"], page["text"], new)
        assert verify_edits(page["raw_text"], made, new).ok
        assert all(e["end"] > e["start"] for e in made if "review" in e["kind"]), (
            "a review edit covers raw text"
        )


def test_table_cells_become_text_changes_and_the_grid_follows() -> None:
    doc = _doc()
    page = doc["pages"][3]
    block = page["blocks"][1]
    rows = [list(r) for r in block["table"]["rows"]]
    rows[1][1] = "1,250.9"
    text = corrections.cells_to_text(page["text"], block, rows)
    assert text == TABLE_TEXT.replace("1,250.4", "1,250.9")
    review = _decide(decisions.ReviewFile(), doc, 4, "approve", text=text)
    built = reviewed.build(doc, review)
    moved = built.document["pages"][3]["blocks"]
    assert moved[1]["table"]["rows"][1] == ["הכנסות", "1,250.9"] and moved[1]["text"] == text[4:]
    assert "| הכנסות | 1,250.9 |" in built.markdown
    rows[2][0] = "missing"
    block = {
        **block,
        "table": {**block["table"], "rows": [*block["table"]["rows"][:2], ["לא קיים", "830.1"]]},
    }
    with pytest.raises(ReviewError, match="not in the page text"):
        corrections.cells_to_text(page["text"], block, rows)


def test_the_reviewed_artifacts_let_approved_pages_through_and_leave_rejected_pages_out() -> None:
    doc = _doc()
    fixed = "טבלה\n₪115.00\nעכבר 1"
    review = _decide(decisions.ReviewFile(), doc, 2, "approve", text=fixed)
    review = _decide(review, doc, 3, "reject", reason="a blank form")
    built = reviewed.build(doc, review)
    pages = built.document["pages"]
    assert [p["route"] for p in pages] == [
        "text_layer_repaired",
        "reviewed",
        "rejected",
        "text_layer",
    ]
    approved = pages[1]
    assert (
        approved["text"] == fixed
        and approved["review_preview"] is None
        and not approved["needs_review"]
    )
    assert (
        apply_edits(approved["raw_text"], [Edit.from_dict(e) for e in approved["edits"]]) == fixed
    )
    assert {e["kind"] for e in approved["edits"]} == {"review"}
    assert approved["review"] | {"at": "", "text_sha256": ""} == {
        "decision": "approve",
        "reviewer": "dana",
        "at": "",
        "note": "",
        "reason": "",
        "corrected": True,
        "text_sha256": "",
        "revision": 1,
        "stale": False,
    }
    assert (
        pages[2]["review"]["reason"] == "a blank form"
        and pages[2]["text"] == ""
        and pages[2]["raw_text"] == ""
    )
    assert built.summary | {"decided_at": None} == {
        "status": "accepted_after_review",
        "reviewed": 1,
        "corrected": 1,
        "rejected": 1,
        "flagged": 0,
        "pending": 0,
        "stale": 0,
        "approved_pages": [2],
        "corrected_pages": [2],
        "rejected_pages": [3],
        "pending_pages": [],
        "stale_pages": [],
        "decided_at": None,
    }
    assert built.document["status"] == "accepted_after_review"
    assert "₪115.00" in built.markdown and "corrected and approved by a reviewer" in built.markdown
    assert "page 3 rejected by a reviewer" in built.markdown and "no_text" not in built.markdown
    parts = built.text.split("\f")
    assert len(parts) == 4 and parts[1] == fixed and parts[2] == ""
    cited = {c["page"] for chunk in built.chunks for c in chunk["citations"]}
    assert cited == {1, 2, 4}
    assert [c["reviewed"] for c in built.chunks if 2 in c["pages"]] == [True]
    assert all(c["reviewed_by"] == ["dana"] for c in built.chunks if 2 in c["pages"])
    document_schema = json.loads((SCHEMAS / "document.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(built.document, document_schema)
    chunk_schema = json.loads((SCHEMAS / "chunks.schema.json").read_text(encoding="utf-8"))
    for chunk in built.chunks:
        jsonschema.validate(chunk, chunk_schema)


def test_decisions_need_what_they_stand_on() -> None:
    doc = _doc()
    with pytest.raises(ReviewError, match="needs a reason"):
        _decide(decisions.ReviewFile(), doc, 3, "reject")
    with pytest.raises(ReviewError, match="must be one of"):
        _decide(decisions.ReviewFile(), doc, 3, "delete")
    with pytest.raises(ReviewConflict, match="parsed again"):
        decisions.new_decision(doc["pages"][1], "approve", reviewer="x", text_sha256="0" * 64)
    review = _decide(decisions.ReviewFile(), doc, 2, "flag", revision=0, who="ann")
    with pytest.raises(ReviewConflict, match="decided meanwhile by ann"):
        _decide(review, doc, 2, "approve", revision=0, who="bob")
    assert _decide(review, doc, 2, "approve", revision=1).pages["2"].revision == 2


def test_a_reflag_or_a_reparse_takes_the_page_out_again(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    doc = _doc()
    storage.put_json("d/document.json", doc)
    storage.put_text("d/document.md", markdown(DocumentRecord.model_validate(doc)))
    storage.put_json("d/report.json", {"status": "needs_review", "needs_review": [2, 3]})
    assert reviewed.apply(storage, "d") is None  # no review.json: nothing written
    store.update(
        storage, "d", lambda r: _decide(r, doc, 2, "approve", text="טבלה\n₪115.00\nעכבר 1")
    )
    assert reviewed.apply(storage, "d")["reviewed"] == 1
    assert "₪115.00" in (tmp_path / "d" / "text.reviewed.txt").read_text(encoding="utf-8")
    store.update(storage, "d", lambda r: _decide(r, doc, 2, "flag"))
    summary = reviewed.apply(storage, "d")
    assert summary["status"] == "needs_review" and summary["pending_pages"] == [2, 3]
    assert "₪115.00" not in (tmp_path / "d" / "document.reviewed.md").read_text(encoding="utf-8")
    assert "₪115.00" not in (tmp_path / "d" / "chunks.jsonl").read_text(encoding="utf-8")
    store.update(storage, "d", lambda r: _decide(r, doc, 2, "approve"))
    assert (
        json.loads((tmp_path / "d" / "report.json").read_text(encoding="utf-8"))["status"]
        == "needs_review"
    )
    doc["pages"][1]["review_preview"]["text"] = (
        "טבלה\n00.511₪\nעכבר 2"  # parsed again: another text
    )
    storage.put_json("d/document.json", doc)
    summary = reviewed.apply(storage, "d")
    assert (
        summary["stale_pages"] == [2] and summary["reviewed"] == 0 and 2 in summary["pending_pages"]
    )
    page = json.loads((tmp_path / "d" / "document.reviewed.json").read_text(encoding="utf-8"))[
        "pages"
    ][1]
    assert page["route"] == "review_required" and page["review"]["stale"] is True


def test_concurrent_local_writes_lose_nothing_and_one_reviewer_of_a_page_wins(
    tmp_path: Path,
) -> None:
    storage = LocalStorage(tmp_path)
    doc = _doc()
    results: dict[str, str] = {}
    start = threading.Barrier(6)

    def reviewer(name: str, number: int, verdict: str) -> None:
        start.wait()
        try:
            store.update(
                storage,
                "d",
                lambda r: _decide(
                    r,
                    doc,
                    number,
                    verdict,
                    revision=0,
                    who=name,
                    reason="blank" if verdict == "reject" else "",
                ),
            )
            results[name] = "saved"
        except ReviewConflict as exc:
            results[name] = str(exc)

    jobs = [
        ("a", 1, "approve"),
        ("b", 2, "flag"),
        ("c", 4, "approve"),
        ("d", 3, "reject"),
        ("e", 3, "flag"),
        ("f", 3, "reject"),
    ]
    threads = [threading.Thread(target=reviewer, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    saved = store.load(storage, "d")
    assert sorted(saved.pages) == ["1", "2", "3", "4"]
    assert [results[n] for n in "abc"] == ["saved"] * 3
    page3 = [n for n in "def" if results[n] == "saved"]
    assert len(page3) == 1 and saved.pages["3"].reviewer == page3[0]
    assert all("decided meanwhile" in results[n] for n in "def" if n not in page3)
    assert len(saved.history) == 4


def test_reparse_skips_reviewed_pages_unless_asked() -> None:
    doc = _doc()
    review = _decide(decisions.ReviewFile(), doc, 2, "approve")
    review = _decide(review, doc, 3, "reject", reason="blank")
    dumped = review.model_dump(mode="json")
    assert why_reparse(doc, Criteria(route="review_required"), dumped) == []
    assert why_reparse(doc, Criteria(route="failed"), dumped) == []
    assert why_reparse(doc, Criteria(route="review_required", include_reviewed=True), dumped) == [
        "route review_required on pages [2]"
    ]
    flagged = _decide(decisions.ReviewFile(), doc, 2, "flag").model_dump(mode="json")
    assert why_reparse(doc, Criteria(route="review_required"), flagged) == [
        "route review_required on pages [2]"
    ]


def test_the_studio_corrects_again_from_the_correction_text_and_grid_together(
    tmp_path: Path,
) -> None:
    from pagefleet.workers.cli.studio import editor, reviews
    from pagefleet.workers.cli.studio.library import Library

    doc = _doc()
    storage = LocalStorage(tmp_path / "out")
    storage.put_json("x/document.json", doc)
    library = Library.open(str(tmp_path / "out"))
    ref = library.find("x")
    first = TABLE_TEXT.replace("830.1", "830.7")
    reviews.decide(library, ref, doc, 4, "approve", reviewer="dana", text=first, revision=0)
    view = editor.context(doc["pages"][3], reviews.load(library, ref))
    assert view["shown_text"] == first and view["revision"] == 1
    assert view["tables"][0]["rows"][2] == ["הוצאות", "830.7"]
    form = {
        f"cell-{view['tables'][0]['index']}-1-1": "1,250.9",
        "text": first.replace("דוח", 'דו"ח'),
    }
    cells = editor.cells_from_form(doc["pages"][3], reviews.load(library, ref), form)
    made = reviews.decide(
        library, ref, doc, 4, "approve", reviewer="dana", text=form["text"], cells=cells, revision=1
    )
    final = apply_edits(doc["pages"][3]["raw_text"], [Edit.from_dict(e) for e in made.edits])
    assert final == 'דו"ח\nסעיף 2023\nהכנסות 1,250.9\nהוצאות 830.7'
    with pytest.raises(ReviewConflict):
        reviews.decide(library, ref, doc, 4, "flag", reviewer="bob", revision=1)
    page = json.loads(
        (tmp_path / "out" / "x" / "document.reviewed.json").read_text(encoding="utf-8")
    )["pages"][3]
    assert page["text"] == final and page["blocks"][1]["table"]["rows"][1] == ["הכנסות", "1,250.9"]


def test_the_collector_never_fails_a_document_for_its_review_json(tmp_path: Path, caplog) -> None:
    storage = LocalStorage(tmp_path)
    storage.put_json("d/document.json", _doc())
    storage.put_json(
        "d/review.json",
        {"schema_version": 2, "pages": {"2": {"page": 2, "decision": "erase", "at": ""}}},
    )
    assert reviewed.after_collect(storage, "d") is None
    assert "review.json not applied" in caplog.text
    assert not (tmp_path / "d" / "document.reviewed.json").exists()


def test_concurrent_studio_decisions_leave_the_artifacts_of_the_last_review(tmp_path: Path) -> None:
    from pagefleet.workers.cli.studio import reviews
    from pagefleet.workers.cli.studio.library import Library

    doc = _doc()
    LocalStorage(tmp_path / "out").put_json("x/document.json", doc)
    library = Library.open(str(tmp_path / "out"))
    ref = library.find("x")
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def decide(number: int, verdict: str) -> None:
        start.wait()
        try:
            reviews.decide(
                library,
                ref,
                doc,
                number,
                verdict,
                reviewer=f"r{number}",
                reason="blank",
                revision=0,
            )
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [
        threading.Thread(target=decide, args=job)
        for job in ((1, "approve"), (2, "approve"), (3, "reject"), (4, "flag"))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    written = json.loads(
        (tmp_path / "out" / "x" / "document.reviewed.json").read_text(encoding="utf-8")
    )
    assert [p.get("review", {}).get("decision") for p in written["pages"]] == [
        "approve",
        "approve",
        "reject",
        "flag",
    ]
    assert (
        json.loads((tmp_path / "out" / "x" / "report.json").read_text(encoding="utf-8"))["status"]
        == "accepted_after_review"
    )


def test_a_page_nothing_read_takes_the_typed_text_and_is_chunked() -> None:
    doc = _doc()
    typed = "עמוד שהוקלד ביד\nשורה 2"
    built = reviewed.build(doc, _decide(decisions.ReviewFile(), doc, 3, "approve", text=typed))
    page = built.document["pages"][2]
    assert page["route"] == "reviewed" and page["text"] == typed and page["raw_text"] == typed
    assert page["edits"] == [] and page["edit_map"]["gap"] == "typed_in_review"
    assert any(3 in c["pages"] and "שורה 2" in c["text"] for c in built.chunks)
