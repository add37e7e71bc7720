"""The published JSON Schemas (docs/schemas/) hold for what the collector writes: document.json and
every line of chunks.jsonl of a document assembled by the real collector (accepted, repaired,
refused, OCR and failed pages, blocks and tables), and their enumerations are the model's.
tests/integration/test_structure_run.py validates a real `pagefleet run`'s outputs the same way."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import jsonschema
import pytest

from tests.unit.test_assembly import _page
from pagefleet.workers.collect import chunks
from pagefleet.workers.collect.assembly import Assembly
from pagefleet.workers.model import BlockType, DocumentRecord, Route, RouterSource, Rung, SourceInfo
from pagefleet.workers.store.storage import LocalStorage

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check_outputs(folder: Path) -> int:
    """Validate folder/document.json and folder/chunks.jsonl; returns the number of chunks."""
    document = json.loads((folder / "document.json").read_text(encoding="utf-8"))
    validator("document.schema.json").validate(document)
    lines = (folder / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    chunk_schema = validator("chunks.schema.json")
    for line in lines:
        chunk_schema.validate(json.loads(line))
    return len(lines)


def test_an_assembled_document_and_its_chunks_hold_to_the_schemas(tmp_path: Path) -> None:
    (tmp_path / "spool").mkdir()
    pages = [_page(n) for n in range(1, 13)]
    head = DocumentRecord(
        pipeline_version="0.2.0",
        job_id="j1",
        status="accepted",
        page_count=len(pages),
        options={"structure": True, "chunk_chars": 1000},
        source=SourceInfo(filename="a.pdf", bytes=10, sha256="ab" * 32, uri="/in/a.pdf"),
        pages=[],
    )
    built = Assembly(str(tmp_path / "spool"), head)
    for chunk in chunks.replayed((built.add(p) for p in pages), head):
        built.chunk(chunk)
    built.store(LocalStorage(tmp_path / "store"), "out", {})
    assert check_outputs(tmp_path / "store" / "out") > 0


def test_a_document_that_breaks_the_contract_is_refused() -> None:
    good = {
        "schema_version": 2,
        "pipeline_version": "0.2.0",
        "job_id": "j",
        "status": "accepted",
        "page_count": 0,
        "options": {},
        "source": {"filename": "a.pdf", "bytes": 1, "sha256": "ab" * 32},
        "pages": [],
    }
    validator("document.schema.json").validate(good)
    with pytest.raises(jsonschema.ValidationError):
        validator("document.schema.json").validate({**good, "status": "done"})


def test_the_schemas_enumerations_are_the_models() -> None:
    page = json.loads((SCHEMAS / "document.schema.json").read_text(encoding="utf-8"))["$defs"]
    assert page["page"]["properties"]["route"]["enum"] == list(typing.get_args(Route))
    assert page["page"]["properties"]["router"]["properties"]["source"]["enum"] == list(
        typing.get_args(RouterSource)
    )
    assert page["attempt"]["properties"]["rung"]["enum"] == [r.value for r in Rung]
    assert page["block"]["properties"]["type"]["enum"] == list(typing.get_args(BlockType))
    status = json.loads((SCHEMAS / "document.schema.json").read_text(encoding="utf-8"))[
        "properties"
    ]["status"]
    assert status["enum"] == list(typing.get_args(DocumentRecord.model_fields["status"].annotation))
