"""A document's four streamed artifacts as `Storage.put_streams` takes them (the report goes up on
its own, after them), each holding `"{tag} {name}"`: for the S3 tests that store documents."""

from __future__ import annotations

import io

NAMES = ("document.md", "document.txt", "document.json", "chunks.jsonl")


def artifact_streams(folder: str, tag: str) -> list[tuple[str, io.BytesIO, str]]:
    return [
        (f"{folder}/{name}", io.BytesIO(f"{tag} {name}".encode()), "text/plain") for name in NAMES
    ]
