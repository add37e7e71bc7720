"""Small documents of one submission go to the split queue in batches (`submit.enqueue_many`,
`pagefleet.tasks.split.split_batch`, `pagefleet.workers.split.batch`): every document is still its own job, with its own artifacts or typed
error, through a real Redis and real worker processes."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from tests.conftest import wait_for_job
from pagefleet.workers.cli.exitcodes import ExitCode
from pagefleet.workers.settings import Options, get_settings
from pagefleet.workers.store.storage import LocalStorage
from pagefleet.workers.split.submit import enqueue_many, spec_for_path

pytestmark = pytest.mark.integration


def one_page(path: Path, words: str) -> Path:
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), words)
        doc.save(path)
    return path


@pytest.fixture
def batch_of_three(monkeypatch: pytest.MonkeyPatch):
    """The producer (this process) batches three documents a task; files over 10 kB go alone."""
    monkeypatch.setenv("PAGEFLEET_ADVANCED__SPLIT_BATCH_DOCUMENTS", "3")
    monkeypatch.setenv("PAGEFLEET_ADVANCED__SPLIT_BATCH_MAX_BYTES", "10000")
    get_settings.cache_clear()
    yield
    monkeypatch.delenv("PAGEFLEET_ADVANCED__SPLIT_BATCH_DOCUMENTS")
    monkeypatch.delenv("PAGEFLEET_ADVANCED__SPLIT_BATCH_MAX_BYTES")
    get_settings.cache_clear()


def test_one_submissions_small_documents_split_in_batches(
    fleet, tmp_path: Path, batch_of_three, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pagefleet.workers import app

    files = [
        one_page(tmp_path / f"doc{i}.pdf", f"batch document {i} hello world") for i in range(6)
    ]
    (tmp_path / "doc1.pdf").write_bytes(
        b"%PDF-1.7 this is not a pdf at all"
    )  # a typed error in a batch
    with pymupdf.open() as doc:  # over the batch's byte limit: a task of its own
        doc.new_page().insert_text((72, 72), "big document 3 hello world")
        doc.set_metadata({"subject": "x" * 20000})
        doc.save(files[3])
    storage = LocalStorage(tmp_path / "out")
    specs = [
        spec_for_path(str(f), storage.url, f.stem, Options(structure=False), force=True)
        for f in files
    ]
    sent: list[tuple[str, list[str], str]] = []
    real_send = app.send

    def spy(name, args, **kw):  # records what goes to the broker, then sends it
        payloads = args[0] if name == "pagefleet.split_batch" else args
        sent.append((name, [p["job_id"] for p in payloads], kw["queue"]))
        if name == "pagefleet.split_batch":
            submissions.add(args[1])
        return real_send(name, args, **kw)

    submissions: set[str] = set()

    monkeypatch.setattr(app, "send", spy)
    assert enqueue_many(specs) == [s.job_id for s in specs]
    ids = [
        s.job_id for s in specs
    ]  # six documents: batches of 3 and 3 (`submit.batch_plan`), the big one alone
    assert [(name, jobs) for name, jobs, _ in sent] == [
        ("pagefleet.split_batch", ids[0:3]),
        ("pagefleet.split", [ids[3]]),
        ("pagefleet.split_batch", ids[4:6]),
    ]
    assert {queue for *_, queue in sent} == {"split"}
    assert (
        len(submissions) == 1 and "" not in submissions
    )  # both batches: one submission (one producer call)
    for i, spec in enumerate(specs):
        info = wait_for_job(spec.job_id)
        if i == 1:
            assert info["state"] == "error" and info["error_code"] == "invalid_pdf", info
            error = json.loads(
                (tmp_path / "out" / "doc1" / "error.json").read_text(encoding="utf-8")
            )
            assert error["code"] == "invalid_pdf"
            continue
        assert info["state"] == "done" and info["status"] == "accepted", info
        document = json.loads(
            (tmp_path / "out" / f"doc{i}" / "document.json").read_text(encoding="utf-8")
        )
        assert document["job_id"] == spec.job_id and document["page_count"] == 1
        assert f"document {i} hello world" in document["pages"][0]["text"]


def test_a_big_document_between_small_ones_moves_no_batch_cut(
    fleet, tmp_path: Path, batch_of_three, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batches end where the plan of the submission's small documents says (8 small → 3, 3, 2),
    counted in small documents: a big one sent alone between them flushes the batch so far but
    moves no later cut, so the submission still ends on the plan's last batch, not a lone document."""
    from pagefleet.workers import app

    files = [one_page(tmp_path / f"doc{i}.pdf", f"cut document {i}") for i in range(9)]
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "big document 1")
        doc.set_metadata({"subject": "x" * 20000})
        doc.save(files[1])
    storage = LocalStorage(tmp_path / "out")
    specs = [
        spec_for_path(str(f), storage.url, f.stem, Options(structure=False), force=True)
        for f in files
    ]
    sent: list[list[str]] = []
    real_send = app.send

    def spy(name, args, **kw):
        sent.append([p["job_id"] for p in (args[0] if name == "pagefleet.split_batch" else args)])
        return real_send(name, args, **kw)

    monkeypatch.setattr(app, "send", spy)
    enqueue_many(specs)
    ids = [s.job_id for s in specs]
    assert sent == [ids[0:1], ids[1:2], ids[2:4], ids[4:7], ids[7:9]]
    assert all(wait_for_job(i)["state"] == "done" for i in ids)


def test_a_redelivered_batch_skips_what_is_done(fleet, tmp_path: Path, batch_of_three) -> None:
    """A batch delivered again (a worker lost after some of its documents) redoes none of them."""
    from pagefleet.tasks.split import split_batch

    files = [one_page(tmp_path / f"doc{i}.pdf", f"again {i}") for i in range(3)]
    specs = [
        spec_for_path(str(f), LocalStorage(tmp_path / "out").url, f.stem, Options(), force=True)
        for f in files
    ]
    enqueue_many(specs)
    assert all(wait_for_job(s.job_id)["state"] == "done" for s in specs)
    results = split_batch.run([s.model_dump(mode="json") for s in specs])
    assert [r.get("skipped") for r in results] == ["already done"] * 3


def test_a_submissions_batches_share_one_sandbox_child(fleet, tmp_path: Path) -> None:
    """Two batches of one submission split one after the other by one worker process (here, this
    one) run in one sandbox child: the second pays no fork. Another submission's batch gets a fresh
    child. Each document is still its own job and artifacts."""
    import psutil

    from pagefleet.tasks.split import split_batch
    from pagefleet.workers.pdf.forkserver import CLIENT

    files = [one_page(tmp_path / f"doc{i}.pdf", f"shared child {i}") for i in range(6)]
    out = LocalStorage(tmp_path / "out")
    specs = [
        spec_for_path(str(f), out.url, f.stem, Options(structure=False), force=True) for f in files
    ]
    children = []
    for batch, submission in ((specs[:2], "one"), (specs[2:4], "one"), (specs[4:], "two")):
        results = split_batch.run([s.model_dump(mode="json") for s in batch], submission)
        assert [r.get("accepted") for r in results] == [1, 1], results
        children.append(
            {
                c.pid
                for c in psutil.Process(CLIENT._proc.pid).children()
                if c.status() != psutil.STATUS_ZOMBIE
            }
        )
    assert len(children[0]) == 1 and children[1] == children[0]
    assert children[2] - children[0]  # another submission: a fresh child
    for i in range(6):
        document = json.loads(
            (tmp_path / "out" / f"doc{i}" / "document.json").read_text(encoding="utf-8")
        )
        assert f"shared child {i}" in document["pages"][0]["text"]


def test_a_batch_reads_its_documents_heads_a_chunk_at_a_time_in_its_reader_thread(
    fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`split_batch` reads the documents' heads (options, source, sandbox probe) in one reader
    thread, in order, in chunks growing 1, 2, 4 … up to `batch.PROBE_BATCH`, each chunk asked for
    before the first document of the chunk before it is decided; a chunk's probes go to the sandbox
    as one command. A document MuPDF cannot open stops that command there: it and the ones after it
    are probed alone, it gets its typed error and the others are split as usual."""
    import threading

    from pagefleet.tasks import split
    from pagefleet.workers.pdf import source
    from pagefleet.workers.split import batch, job

    monkeypatch.setattr(batch, "PROBE_BATCH", 4)
    get_settings.cache_clear()
    files = [one_page(tmp_path / f"doc{i}.pdf", f"read ahead {i}") for i in range(7)]
    (tmp_path / "doc4.pdf").write_bytes(
        b"%PDF-1.7 not a pdf"
    )  # passes the header check, fails in MuPDF
    out = LocalStorage(tmp_path / "out")
    specs = [
        spec_for_path(str(f), out.url, f.stem, Options(structure=False), force=True) for f in files
    ]
    ids = [s.job_id for s in specs]
    events: list[tuple[str, tuple[str, ...], str]] = []
    heads_of, split_one, run_child = batch.heads_of, job.split_one, source.run_child

    def spy_heads(chunk: list[dict]):
        events.append(("heads", tuple(s["job_id"] for s in chunk), threading.current_thread().name))
        return heads_of(chunk)

    def spy_split(spec: dict, send, may_stream: bool = True, ahead=None):
        events.append(("split", (spec["job_id"],), "ahead" if ahead is not None else "none"))
        return split_one(spec, send, may_stream, ahead)

    def spy_child(command: str, pdf: str, params: dict, **limits):
        paths = [d[0] for d in params["docs"]] if command == "probe_many" else [pdf]
        events.append(
            (
                command,
                tuple(ids[files.index(Path(p))] for p in paths),
                "extract" if params else "bare",
            )
        )
        return run_child(command, pdf, params, **limits)

    class Reader(batch.ThreadPoolExecutor):
        def submit(self, fn, /, *args, **kwargs):  # (context.run, heads_of, chunk)
            events.append(("asked", tuple(s["job_id"] for s in args[1]), ""))
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(batch, "heads_of", spy_heads)
    monkeypatch.setattr(job, "split_one", spy_split)
    monkeypatch.setattr(batch, "ThreadPoolExecutor", Reader)
    monkeypatch.setattr(source, "run_child", spy_child)
    results = split.split_batch.run([s.model_dump(mode="json") for s in specs])
    assert [r.get("accepted") for r in results] == [1, 1, 1, 1, 0, 1, 1] and results[4]["error"][
        "code"
    ] == "invalid_pdf"
    chunks = [(ids[0],), tuple(ids[1:3]), tuple(ids[3:7])]
    assert [(job, where) for kind, job, where in events if kind == "heads"] == [
        (c, "heads_0") for c in chunks
    ]
    assert [job for kind, job, _ in events if kind == "asked"] == chunks
    assert [(job, how) for kind, job, how in events if kind == "split"] == [
        ((job,), "ahead") for job in ids
    ]
    for c, first in (
        (1, 0),
        (2, 1),
    ):  # chunk c asked for before the first document of chunk c - 1 is split
        assert events.index(("asked", chunks[c], "")) < events.index(
            ("split", (ids[first],), "ahead")
        )
    probes = [(kind, job, how) for kind, job, how in events if kind.startswith("probe")]
    assert probes == [
        ("probe", (ids[0],), "extract"),
        ("probe_many", chunks[1], "extract"),
        ("probe_many", chunks[2], "extract"),  # stops at doc4: it and the two after it go alone
        ("probe", (ids[4],), "extract"),
        ("probe", (ids[4],), "bare"),
        ("probe", (ids[5],), "extract"),
        ("probe", (ids[6],), "extract"),
    ]
    assert (
        json.loads((tmp_path / "out" / "doc4" / "error.json").read_text(encoding="utf-8"))["code"]
        == "invalid_pdf"
    )
    for i in (0, 1, 2, 3, 5, 6):
        document = json.loads(
            (tmp_path / "out" / f"doc{i}" / "document.json").read_text(encoding="utf-8")
        )
        assert f"read ahead {i}" in document["pages"][0]["text"]


def test_a_burst_of_bucket_events_is_enqueued_in_batches(
    fleet, tmp_path: Path, s3_bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Redis bridge takes the elements already waiting with the first one (up to its batch),
    so a burst of small uploads goes to the split queue as batches; an upload named twice in the
    burst is one job."""
    import threading
    import uuid

    from tests.integration.test_redis_bridge import access_element
    from tests.unit.test_event_parser import minio_record
    from pagefleet.workers import app
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.intake.bridge import RedisBridge, bridge_client
    from pagefleet.workers.intake.events import build_intake
    from pagefleet.workers.intake.parse import parse_event_payload
    from pagefleet.workers.settings import EventSettings
    from pagefleet.workers.store.storage import S3Storage

    bucket, client = s3_bucket
    client.make_bucket(bucket + "-out")
    elements = []
    for i in range(5):
        path = one_page(tmp_path / f"up{i}.pdf", f"uploaded document {i} hello world")
        etag = client.fput_object(bucket, f"in/up{i}.pdf", str(path)).etag.strip('"')
        elements.append(access_element(minio_record(key=f"in/up{i}.pdf", bucket=bucket, etag=etag)))
    list_name = f"burst-{uuid.uuid4().hex[:8]}"
    source = bridge_client(get_settings().broker.url, block_s=0.2)
    intake = build_intake(EventSettings(output=f"s3://{bucket}-out/r"), jobs.client())
    bridge = RedisBridge(
        source, list_name, intake, block_s=0.2, retry_s=0.2, stop=threading.Event(), batch=16
    )
    source.rpush(list_name, *elements, elements[2])
    sent: list[tuple[str, int]] = []
    real_send = app.send
    monkeypatch.setattr(
        app,
        "send",
        lambda name, args, **kw: (sent.append((name, len(args[0]))), real_send(name, args, **kw))[
            1
        ],
    )
    try:
        assert bridge.step()
        assert source.llen(list_name) == 0 and source.llen(bridge.processing) == 0
        assert (bridge.stats.elements, bridge.stats.enqueued, bridge.stats.duplicates) == (6, 5, 1)
        assert sent == [("pagefleet.split_batch", 5)]
        for element in elements:
            obj = parse_event_payload(json.loads(element)).objects[0]
            info = wait_for_job(intake.spec_for(obj).job_id, timeout_s=120)
            assert info["state"] == "done", info
            document = S3Storage(bucket + "-out", "r").get_json(
                f"{info['artifact_prefix']}/document.json"
            )
            assert f"uploaded document {obj.key[5]} hello world" in document["pages"][0]["text"]
    finally:
        source.delete(list_name, bridge.processing, bridge.dead)


def test_a_submission_whose_send_failed_is_sent_by_its_retry(
    fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broker refuses the message after the runs were started (at maxmemory, say): the runs
    are forgotten, so the producer's retry starts and sends them instead of finding them
    "running" with nothing on the queue."""
    from kombu.exceptions import OperationalError

    from pagefleet.workers import app
    from pagefleet.workers.fleet import jobs
    from pagefleet.workers.errors import BrokerUnavailable

    files = [one_page(tmp_path / f"retry{i}.pdf", f"retried document {i}") for i in range(3)]
    specs = [
        spec_for_path(str(f), LocalStorage(tmp_path / "out").url, f.stem, Options()) for f in files
    ]

    def refused(*_: object, **__: object) -> None:
        raise OperationalError("command not allowed when used memory > 'maxmemory'")

    monkeypatch.setattr(app, "send", refused)
    with pytest.raises(BrokerUnavailable):
        enqueue_many(specs)
    assert [jobs.get(s.job_id) for s in specs] == [{}, {}, {}]
    monkeypatch.undo()
    enqueue_many(specs)
    assert all(wait_for_job(s.job_id)["state"] == "done" for s in specs)


def test_a_document_decided_whole_is_collected_from_memory_and_redone_whole_after_a_failure(
    service_env, tmp_path: Path
) -> None:
    """One range and no page that climbs: the split task collects in place from the records in its
    memory — no work state is written — and the job stays `splitting` until done, so a split that
    fails while collecting (here the artifact folder's place is taken by a file) is simply done
    again, under a lock the failure released."""
    from pagefleet.tasks import chords
    from pagefleet.workers.split.job import split_one as split_job

    from pagefleet.workers.fleet import job_runs, jobs

    def split_one(payload: dict) -> dict:
        return split_job(payload, chords)

    pdf = one_page(tmp_path / "memo.pdf", "collected from memory hello world")
    out = tmp_path / "out"
    spec = spec_for_path(str(pdf), out.as_uri(), "memo", Options(structure=False), force=True)
    payload = spec.model_dump(mode="json")
    assert job_runs.start_run(payload, force=True, stale_after_s=900) == "started"
    out.mkdir()
    (out / "memo").write_text("in the way")
    with pytest.raises(OSError):
        split_one(payload)
    assert jobs.get(spec.job_id)["state"] == "splitting"
    assert not (out / ".pagefleet").exists(), (
        "no manifest or range object for a document collected in place"
    )
    (out / "memo").unlink()
    assert split_one(payload)["accepted"] == 1
    record = jobs.get(spec.job_id)
    assert (record["state"], record["status"], record["pages"], record["pages_done"]) == (
        "done",
        "accepted",
        "1",
        "1",
    )
    document = json.loads((out / "memo" / "document.json").read_text(encoding="utf-8"))
    assert "collected from memory hello world" in document["pages"][0]["text"]
    assert not (out / ".pagefleet").exists()
    assert split_one(payload) == {"job_id": spec.job_id, "skipped": "already done"}


def test_pagefleet_submit_of_a_folder_and_an_object_is_one_batched_submission(
    fleet,
    tmp_path: Path,
    s3_bucket,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`pagefleet submit DIR s3://b/k --storage …`: the folder's PDFs (name order) and the object go
    as one `split_batch`; a job id a line in the sources' order; each job runs to its artifacts."""
    from pagefleet.workers import app
    from pagefleet.workers.cli.main import EX_USAGE, main

    bucket, client = s3_bucket
    folder = tmp_path / "in"
    folder.mkdir()
    for i in (2, 1, 3):
        one_page(folder / f"doc{i}.pdf", f"submitted document {i} hello world")
    (folder / "notes.txt").write_text("not a pdf: left out")
    uploaded = one_page(tmp_path / "up.pdf", "submitted document 4 hello world")
    client.fput_object(bucket, "in/up.pdf", str(uploaded))
    sent: list[tuple[str, int]] = []
    real_send = app.send
    monkeypatch.setattr(
        app,
        "send",
        lambda name, args, **kw: (
            sent.append((name, len(args[0]) if name == "pagefleet.split_batch" else 1)),
            real_send(name, args, **kw),
        )[1],
    )
    out = tmp_path / "out"
    argv = [
        "submit",
        str(folder),
        f"s3://{bucket}/in/up.pdf",
        "--storage",
        out.as_uri(),
        "--no-structure",
        "--force",
    ]
    assert main(argv) == 0
    job_ids = capsys.readouterr().out.split()
    assert sent == [("pagefleet.split_batch", 4)] and len(job_ids) == 4
    for job_id, number in zip(job_ids, (1, 2, 3, 4), strict=True):
        info = wait_for_job(job_id, timeout_s=120)
        assert info["state"] == "done", info
        document = json.loads(
            (out / info["artifact_prefix"] / "document.json").read_text(encoding="utf-8")
        )
        assert f"submitted document {number} hello world" in document["pages"][0]["text"]
    assert main(["submit", str(folder), "--storage", out.as_uri(), "--prefix", "one"]) == EX_USAGE
    assert (
        main(["submit", str(tmp_path / "nowhere.pdf"), "--storage", out.as_uri()])
        == ExitCode.INPUT_ERROR
    )
