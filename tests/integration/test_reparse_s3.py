"""`pagefleet reparse s3://…` against a real S3 server (moto) and a real Redis: documents an older
pipeline made are resubmitted (forced) with their original options; current ones are left alone."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def _put(client, bucket: str, key: str, data: bytes) -> None:
    client.put_object(bucket, key, io.BytesIO(data), len(data))


def _document(version: str, uri: str) -> bytes:
    doc = {
        "schema_version": 1,
        "pipeline_version": version,
        "job_id": "old",
        "status": "accepted",
        "page_count": 1,
        "source": {"filename": "a.pdf", "bytes": 1, "sha256": "ab" * 32, "uri": uri},
        "options": {"ocr": "off"},
        "pages": [{"number": 1, "route": "text_layer", "ocr_confidence": None}],
    }
    return json.dumps(doc).encode()


def test_reparse_resubmits_only_older_documents(
    service_env: dict[str, str], fixtures_dir: Path
) -> None:
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.cli.main import main
    from pagefleet.workers.settings import PIPELINE_VERSION, get_settings
    from pagefleet.workers.store.s3_clients import s3_client

    client = s3_client(get_settings())
    for bucket in ("reparse-in", "reparse-out"):
        if not client.bucket_exists(bucket):
            client.make_bucket(bucket)
    _put(client, "reparse-in", "a.pdf", (fixtures_dir / "born_digital_hebrew.pdf").read_bytes())
    _put(
        client,
        "reparse-out",
        "artifacts/old/document.json",
        _document("0.1.0", "s3://reparse-in/a.pdf"),
    )
    _put(
        client,
        "reparse-out",
        "artifacts/new/document.json",
        _document(PIPELINE_VERSION, "s3://reparse-in/a.pdf"),
    )

    dry = io.StringIO()
    with redirect_stdout(dry):
        assert main(["reparse", "s3://reparse-out", "--dry-run"]) == 0
    assert dry.getvalue() == ""  # nothing enqueued

    out = io.StringIO()
    with redirect_stdout(out):
        assert (
            main(["reparse", "s3://reparse-out", "--broker", service_env["PAGEFLEET_BROKER__URL"]])
            == 0
        )
    job_ids = out.getvalue().split()
    assert len(job_ids) == 1
    state = jobs.get(job_ids[0])
    assert state, "the job was not registered with the broker"
    jobs.client().delete(
        "split"
    )  # no worker here: the message must not wait for another test's workers
