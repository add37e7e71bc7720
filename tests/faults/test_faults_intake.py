"""Drills: sources that are not what their event or submission promised. Bucket events POSTed to a
real receiver (real HTTP, HEADing S3 through the drill's proxy) for objects that were never written
or were deleted before their event, and a submission whose object is deleted before its split; a
truncated PDF that MuPDF repairs into empty pages. Every document ends in exactly one of
artifacts, a typed error.json or a dead letter; a damaged page is never accepted as blank."""

from __future__ import annotations

import hashlib
import time
import urllib.parse
from pathlib import Path

import pytest

from tests.faults.conftest import finish, settle, submit
from tests.integration.test_events import TOKEN, http
from tests.unit.test_damaged_sources import truncated
from tests.unit.test_event_parser import minio_record, minio_webhook_body

pytestmark = [pytest.mark.faults, pytest.mark.integration]


def _receiver(drill, output: str):
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.fleet.asgi import AsgiServer
    from pagefleet.workers.intake.events import build_intake
    from pagefleet.workers.intake.receiver import BearerAuth, Receiver
    from pagefleet.workers.settings import EventSettings, Options

    settings = EventSettings(output=output, options=Options(ocr="force", dpi=72))
    app = Receiver(build_intake(settings, jobs.client()), BearerAuth(TOKEN)).app()
    return AsgiServer(app, "127.0.0.1", 0).start()


def _event(bucket: str, key: str, etag: str, size: int) -> dict:
    return minio_webhook_body(
        minio_record(
            key=urllib.parse.quote_plus(key, safe="/"), bucket=bucket, etag=etag, size=size
        )
    )


def test_events_for_missing_objects(drill) -> None:
    """Two uploads that run, one event for an object never written, one for an object deleted
    before its event arrived, and one submission (no event) whose object is deleted before its
    split: the receiver answers each at once, and nothing is lost or retried for ever."""
    from pagefleet.workers.settings import Options
    from pagefleet.workers.split.submit import enqueue, spec_for_object

    with drill():
        bucket, client = drill.bucket, drill.ledger.client
        paths = drill.docs(4, 2)
        out = f"s3://{bucket}/results"  # apart from in/: a receiver never takes its own output
        server = _receiver(drill, out)
        try:
            started = time.monotonic()
            answers = []
            for i, path in enumerate(paths[:3]):
                info = client.fput_object(bucket, f"in/{path.name}", str(path))
                if i == 2:  # deleted before its event arrives
                    client.remove_object(bucket, f"in/{path.name}")
                answers.append(
                    http(
                        server.url + "/events",
                        _event(
                            bucket, f"in/{path.name}", info.etag.strip('"'), path.stat().st_size
                        ),
                    )
                )
            answers.append(
                http(server.url + "/events", _event(bucket, "in/never written.pdf", "c" * 32, 999))
            )
            ids = []
            for status, body, _ in answers:
                assert status == 200, body
                for entry in body["enqueued"]:
                    path = next(p for p in paths if p.name in entry["key"])
                    sha = hashlib.sha256(path.read_bytes()).hexdigest()
                    drill.ledger.add(entry["job_id"], f"results/artifacts/{sha}", 2, out)
                    ids.append(entry["job_id"])
                for entry in body["refused"]:
                    assert entry["code"] == "source_missing" and body["accepted"] is False, body
                    drill.ledger.add(
                        entry["job_id"], f"results/artifacts/{entry['job_id']}", 2, out
                    )
                    ids.append(entry["job_id"])
            assert [len(b["enqueued"]) for _, b, _ in answers] == [1, 1, 0, 0]
            answered_s = time.monotonic() - started

            info = client.fput_object(
                bucket, "in/late.pdf", str(paths[3])
            )  # submitted, then deleted
            spec = spec_for_object(
                bucket,
                "in/late.pdf",
                f"s3://{bucket}",
                Options(ocr="force", dpi=72),
                etag=info.etag.strip('"'),
                prefix_template="late/{sha256}",
            )
            client.remove_object(bucket, "in/late.pdf")
            ids.append(enqueue(spec))
            drill.ledger.add(spec.job_id, f"late/{spec.job_id}", 2, f"s3://{bucket}")
            took = settle(ids, 120)
        finally:
            server.stop()
        tally = finish(
            drill,
            "bucket events and a split for missing objects",
            {"settled_s": round(took, 1), "answered_s": round(answered_s, 2)},
        )
    assert tally["artifacts"] == 2 and tally["errors"] == 3 and tally["dead_lettered"] == 0, tally


def test_truncated_pdf(drill, tmp_path: Path) -> None:
    """Truncated PDFs (all text lost; two pages' text lost) beside an intact one: MuPDF repairs
    them; every page of theirs warns `repaired`, an empty one is refused (`source_damaged`)."""
    with drill():
        damaged = [truncated(tmp_path / "all", 6), truncated(tmp_path / "two", 10)]
        intact = drill.docs(1, 3)
        ids = submit(drill, [*damaged, *intact], pages=3)
        took = settle(ids, 120)
        documents = [
            drill.ledger._json(f"out/{path.stem}/document.json") for path in [*damaged, *intact]
        ]
        tally = finish(
            drill, "truncated PDF (repaired, empty pages refused)", {"settled_s": round(took, 1)}
        )
    assert tally["artifacts"] == 3, tally
    for document in documents[:2]:
        for page in document["pages"]:
            assert "repaired" in page["quality"]["warnings"], page
            assert page["route"] != "text_layer" or page["text"].strip(), (
                "a damaged page accepted blank"
            )
    assert [p["route"] for p in documents[0]["pages"]] == ["failed"] * 3 and documents[0][
        "status"
    ] == "failed"
    assert [p["quality"]["reasons"] for p in documents[1]["pages"][1:]] == [["source_damaged"]] * 2
    for page in documents[2][
        "pages"
    ]:  # the intact one (read by the drills' echo engine) says nothing of damage
        assert (
            "repaired" not in page["quality"]["warnings"]
            and "source_damaged" not in page["quality"]["reasons"]
        )
