"""The collector's page-by-page assembly (pagefleet/workers/collect/assembly.py) writes the bytes the document built
whole would: document.json as pydantic serializes the whole DocumentRecord, document.md, text.txt
and chunks.jsonl as the whole-document functions make them; and it holds only the pages a chunk
still open may cite, never the document."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pagefleet.routing.structure.chunking import ChunkRules, chunk_document
from pagefleet.workers.store import artifacts
from pagefleet.workers.collect import assembly, chunks
from pagefleet.workers.collect.assembly import Assembly
from pagefleet.workers.collect.chunks import _page_in, replays
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
from pagefleet.workers.store.storage import LocalStorage

HEB = "פסקה ארוכה על חוזה השכירות והתנאים שלו " * 6


def _page(n: int) -> PageRecord:
    """Page kinds in turn: Hebrew prose with a heading and a table, a refused page with a preview,
    an OCR page, a failed one, an accepted page without blocks, Arabic prose."""
    router = RouterInfo(source="text_layer", script="he", margin=0.25)
    kind = n % 6
    if kind == 1:
        text = f"כותרת {n}\n{HEB}\nשם | סכום"
        blocks = [
            Block(
                type="heading",
                text=f"כותרת {n}",
                level=1,
                direction="rtl",
                start=0,
                end=len(f"כותרת {n}"),
            ),
            Block(
                type="paragraph",
                text=HEB,
                direction="rtl",
                start=len(f"כותרת {n}") + 1,
                end=len(f"כותרת {n}") + 1 + len(HEB),
                bbox=[1.0, 2.5, 300.0, 400.125],
            ),
            Block(
                type="table",
                text="שם | סכום",
                direction="rtl",
                start=len(text) - 9,
                end=len(text),
                table=TableData(rows=[["שם", "סכום"], ["א", "1"]], markdown="| שם | סכום |"),
            ),
        ]
        return PageRecord(
            number=n,
            script="he",
            direction="rtl",
            router=router,
            route="text_layer",
            text=text,
            markdown=f"# כותרת {n}\n\n{HEB}",
            raw_text=text,
            quality=Quality(ok=True, warnings=["table_suspected"]),
            blocks=blocks,
            layer={"chars": 300, "coverage": 1 / 3},
        )
    if kind == 2:
        return PageRecord(
            number=n,
            router=router,
            route="review_required",
            needs_review=True,
            quality=Quality(ok=False, reasons=["reversed_rtl"], metrics={"score": 0.1}),
            attempts=[
                Attempt(
                    engine="text_layer", accepted=False, reasons=["reversed_rtl"], rung="text_layer"
                )
            ],
            review_preview=ReviewPreview(engine="tesseract", text="תצוגה", markdown="תצוגה"),
        )
    if kind == 3:
        return PageRecord(
            number=n,
            router=router,
            route="ocr",
            engine="tesseract",
            text="טקסט מסריקה\n" * 40,
            ocr_confidence=0.91,
            quality=Quality(ok=True),
            attempts=[Attempt(engine="tesseract", accepted=True, seconds=1.5)],
        )
    if kind == 4:
        return PageRecord(
            number=n,
            router=router,
            route="failed",
            quality=Quality(ok=False, reasons=["no_text"]),
            attempts=[
                Attempt(engine="tesseract", accepted=False, reasons=["engine_timeout"], detail="t")
            ],
        )
    if kind == 5:
        return PageRecord(
            number=n,
            router=router,
            route="text_layer",
            text=f'plain page {n}\twith tab "q" \\ 😀',
            quality=Quality(ok=True),
        )
    return PageRecord(
        number=n,
        script="ar",
        direction="rtl",
        router=router,
        route="text_layer_repaired",
        text="مرحبا بالعالم " * 30,
        markdown="مرحبا بالعالم " * 30,
        quality=Quality(ok=True),
    )


def _head(pages: int) -> DocumentRecord:
    return DocumentRecord(
        pipeline_version="0.2.0",
        job_id="j1",
        status="accepted",
        page_count=pages,
        options={"structure": True, "chunk_chars": 1000},
        source=SourceInfo(filename="a.pdf", bytes=10, sha256="ab" * 32, uri="/in/a.pdf"),
        pages=[],
    )


def _assemble(tmp_path: Path, pages: list[PageRecord]) -> tuple[Path, dict]:
    head = _head(len(pages))
    built = Assembly(str(tmp_path / "spool"), head)
    for chunk in chunks.replayed((built.add(p) for p in pages), head):
        built.chunk(chunk)
    rolled = built.pages.file._rolled  # type: ignore[attr-defined]
    document, report = built.store(LocalStorage(tmp_path / "store"), "out", {"split_seconds": 0.5})
    assert report["status"] == document.status
    assert rolled == (len(pages) > 0 and assembly._IN_MEMORY < 10_000)
    return tmp_path / "store" / "out", report


@pytest.mark.parametrize(
    "in_memory", [assembly._IN_MEMORY, 1000]
)  # spools kept in memory; moved to files
def test_streamed_artifacts_are_the_whole_documents_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_memory: int
) -> None:
    monkeypatch.setattr(assembly, "_IN_MEMORY", in_memory)
    (tmp_path / "spool").mkdir()
    pages = [_page(n) for n in range(1, 20)]
    out, report = _assemble(tmp_path, pages)
    whole = _head(len(pages)).model_copy(update={"pages": pages, "status": "needs_review"})
    assert (out / "document.json").read_text(encoding="utf-8") == whole.model_dump_json(indent=1)
    assert DocumentRecord.model_validate_json((out / "document.json").read_bytes()) == whole
    assert (out / "document.md").read_text(encoding="utf-8") == artifacts.markdown(whole)
    assert (out / "text.txt").read_text(encoding="utf-8") == "\f".join(
        artifacts.page_text(p) for p in pages
    )
    every = {p.number: p for p in pages}
    expected = [
        c
        for c in chunk_document(
            [_page_in(p, artifacts.ACCEPTED_ROUTES) for p in pages],
            {"doc_sha256": "ab" * 32, "filename": "a.pdf", "pipeline_version": "0.2.0"},
            ChunkRules(max_chars=1000),
        )
        if replays(c, every)
    ]
    written = [
        json.loads(line) for line in (out / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert written == expected and any(
        len(c["pages"]) > 1 for c in written
    )  # some chunk spans pages
    assert report["status"] == "needs_review" and report["page_count"] == 19
    assert report["routes"] == {
        "text_layer": 7,
        "review_required": 3,
        "ocr": 3,
        "failed": 3,
        "text_layer_repaired": 3,
    }
    assert (
        report["rungs"]["1_text_layer"]["seconds"] == 0.5
        and report["rungs"]["3_cpu_ocr"]["attempts"] == 6
    )
    assert report["engine_health"]["tesseract"] == {
        "tried": 6,
        "accepted": 3,
        "unavailable": 0,
        "errors": 3,
        "detail": "t",
    }
    assert report["needs_review"] == [n for n in range(1, 20) if n % 6 in (2, 4)]
    assert report["structure"]["pages_with_tables"] == [1, 7, 13, 19]


def test_a_document_without_pages(tmp_path: Path) -> None:
    (tmp_path / "spool").mkdir()
    out, report = _assemble(tmp_path, [])
    whole = _head(0)
    assert (out / "document.json").read_text(encoding="utf-8") == whole.model_dump_json(indent=1)
    assert (out / "document.md").read_text(encoding="utf-8") == artifacts.markdown(whole) == "\n"
    assert (out / "text.txt").read_bytes() == b"" and (out / "chunks.jsonl").read_bytes() == b""
    assert report["status"] == "accepted"


def _live_pages() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is PageRecord)


def test_only_the_pages_an_open_chunk_may_cite_stay_in_memory(tmp_path: Path) -> None:
    """600 pages made one at a time: at no point are more than a handful alive (the whole-document
    collector held every one)."""
    (tmp_path / "spool").mkdir()
    peak = 0

    def made() -> Iterator[PageRecord]:
        nonlocal peak
        for n in range(1, 601):
            if n % 50 == 0:
                gc.collect()
                peak = max(peak, _live_pages())
            yield _page(n)

    head = _head(600)
    built = Assembly(str(tmp_path / "spool"), head)
    for chunk in chunks.replayed((built.add(p) for p in made()), head):
        built.chunk(chunk)
    document, report = built.store(LocalStorage(tmp_path / "store"), "", {})
    assert report["page_count"] == 600 and sum(report["routes"].values()) == 600
    assert 0 < peak <= 10
    assert (
        json.loads((tmp_path / "store" / "document.json").read_bytes())["pages"][599]["number"]
        == 600
    )
