"""document.json is serialized by pydantic directly (no dict copy of every page): the same JSON as
json.dumps(model_dump(), ensure_ascii=False, indent=1) wrote before — the same layout and strings;
only a float's spelling may differ (1e-7 for 1e-07), never its value."""

from __future__ import annotations

import json

from pagefleet.workers.model import DocumentRecord, PageRecord, Quality, RouterInfo, SourceInfo

TEXTS = [
    "שלום עולם",
    "مرحبا ﻻ",
    "tab\tnew\nline\r\x0c\x07\x1f\x7f",
    "emoji 😀 \u2028 \u200f",
    'quote " back \\ slash',
    "",
]


def test_document_json_bytes_unchanged() -> None:
    pages = [
        PageRecord(
            number=i + 1,
            router=RouterInfo(source="text_layer", script="he", margin=0.1 * i),
            route="text_layer",
            text=t,
            raw_text=t,
            quality=Quality(
                ok=True, metrics={"readable": i, "share": 1 / 3, "tiny": 1e-07, "big": 1e21}
            ),
            layer={"image_coverage": 0.12345, "kind": "text"},
        )
        for i, t in enumerate(TEXTS)
    ]
    doc = DocumentRecord(
        pipeline_version="0",
        job_id="j",
        status="accepted",
        page_count=len(pages),
        options={},
        source=SourceInfo(filename="a.pdf", bytes=1, sha256="0" * 64, uri="/a.pdf"),
        pages=pages,
    )
    before = json.dumps(doc.model_dump(mode="json"), ensure_ascii=False, indent=1)
    after = doc.model_dump_json(indent=1)
    assert json.loads(after) == json.loads(before)
    assert after.replace("e-7", "e-07") == before  # byte for byte but the exponent's spelling
