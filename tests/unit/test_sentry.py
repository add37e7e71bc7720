"""Sentry scrubbing through the real sentry-sdk: events go to a local HTTP endpoint standing in
for Sentry's ingestion API, and the envelopes that arrive must hold no document text and no file
names, while the exception type still does."""

from __future__ import annotations

import gzip
import json
import logging
import queue
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pagefleet.workers.fleet.observability import FILTERED, init_sentry, scrub_event, scrub_text

sentry_sdk = pytest.importorskip("sentry_sdk")

HEBREW = "המערכת צריכה לקרוא את הטקסט הזה בלי לשלוח אותו"
ARABIC = "الفصل الأول: مقدمة"
HEBREW_FILE = "דוח שנתי 2024.pdf"
LATIN_FILE = "quarterly_report_2024.pdf"


class DocumentProblem(Exception):
    pass


class EnvelopeSink:
    """A local stand-in for Sentry's ingestion API: collects decoded `POST /api/<project>/envelope/`
    bodies. `dsn` points sentry-sdk at it."""

    def __init__(self) -> None:
        envelopes: "queue.Queue[str]" = queue.Queue()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    raw = gzip.decompress(raw)
                elif encoding == "br":
                    import brotli  # only if sentry-sdk chose it, i.e. brotli is installed

                    raw = brotli.decompress(raw)
                envelopes.put(raw.decode("utf-8"))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self.envelopes = envelopes
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.dsn = f"http://public@127.0.0.1:{self.server.server_address[1]}/1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def items(self, count: int, timeout_s: float = 15) -> list[dict[str, Any]]:
        """The items of the next `count` envelopes."""
        texts = [self.envelopes.get(timeout=timeout_s) for _ in range(count)]
        return [item for text in texts for item in parse_envelope(text)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sentry_sink() -> Iterator[EnvelopeSink]:
    sink = EnvelopeSink()
    assert not sentry_sdk.get_client().is_active()
    yield sink
    client = sentry_sdk.get_client()
    client.close(timeout=2)
    sentry_sdk.get_global_scope().set_client(None)
    sink.close()


def leaked(items: list[dict[str, Any]], secrets: tuple[str, ...]) -> list[str]:
    dumped = json.dumps(items, ensure_ascii=False)  # undo \\u escapes before looking for text
    return [s for s in secrets if s in dumped]


def parse_envelope(text: str) -> list[dict[str, Any]]:
    """Envelope = header line, then (item header, payload) line pairs; every line here is JSON."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _fail(text: str, filename: str) -> None:
    page_text = text  # a local variable holding document text
    raise DocumentProblem(f"cannot repair {filename!r} ({LATIN_FILE}): {page_text} / {ARABIC}")


def test_envelopes_carry_no_document_text(sentry_sink: EnvelopeSink) -> None:
    assert init_sentry(component="test", dsn=sentry_sink.dsn)
    log = logging.getLogger("pagefleet.test_sentry")
    log.warning(
        "processing %s from s3://uploads/in/%s", HEBREW_FILE, LATIN_FILE
    )  # becomes a breadcrumb
    sentry_sdk.add_breadcrumb(
        message=f"opened {LATIN_FILE}", data={"key": f"in/{HEBREW_FILE}", "note": HEBREW}
    )
    try:
        _fail(HEBREW, HEBREW_FILE)
    except DocumentProblem:
        with sentry_sdk.new_scope() as scope:
            scope.set_extra("text", HEBREW)
            scope.set_extra("filename", HEBREW_FILE)
            scope.set_extra(
                "detail", {"markdown": f"# {HEBREW}", "pages": 3, "hint": f"see {LATIN_FILE}"}
            )
            scope.set_context(
                "job", {"source": f"s3://uploads/{LATIN_FILE}", "raw_text": HEBREW, "page": 2}
            )
            sentry_sdk.capture_exception()
    log.error("collect failed for %s: %s", LATIN_FILE, ARABIC)  # the logging integration sends this
    sentry_sdk.flush(timeout=10)

    items = sentry_sink.items(2)
    secrets = (
        *HEBREW.split(),
        *ARABIC.replace(":", "").split(),
        HEBREW_FILE,
        LATIN_FILE,
        "quarterly_report",
    )
    assert leaked(items, secrets) == []
    events = [i for i in items if isinstance(i.get("exception"), dict)]
    assert [v["type"] for e in events for v in e["exception"]["values"]] == ["DocumentProblem"]
    frames = events[0]["exception"]["values"][0]["stacktrace"]["frames"]
    assert frames and all("vars" not in f for f in frames) and frames[-1]["function"] == "_fail"
    assert events[0]["extra"]["text"] == FILTERED and events[0]["extra"]["detail"]["pages"] == 3
    assert events[0]["contexts"]["job"]["page"] == 2
    assert any(i.get("logentry") for i in items), "the error log arrived as an event"


def test_scrub_event_drops_task_args_request_bodies_and_argv() -> None:
    event = {
        "request": {
            "method": "POST",
            "url": "http://x/events",
            "data": HEBREW,
            "headers": {"Authorization": "Bearer t"},
        },
        "extra": {
            "celery-job": {
                "task_name": "pagefleet.split",
                "args": [{"filename": HEBREW_FILE}],
                "kwargs": {},
            },
            "sys.argv": ["pagefleet", "events", "--token", "secret"],
        },
        "logentry": {
            "message": "job %s %s",
            "params": ["abc", LATIN_FILE],
            "formatted": f"job abc {LATIN_FILE}",
        },
        "breadcrumbs": {
            "values": [
                {
                    "message": f"GET s3://bucket/{LATIN_FILE}",
                    "data": {"url": f"http://s3/{LATIN_FILE}"},
                }
            ]
        },
        "user": {"ip_address": "10.0.0.1"},
    }
    out = scrub_event(event)
    assert out["request"] == {"method": "POST"} and "user" not in out
    assert out["extra"]["celery-job"] == {
        "task_name": "pagefleet.split",
        "args": FILTERED,
        "kwargs": FILTERED,
    }
    assert out["extra"]["sys.argv"] == FILTERED
    assert "params" not in out["logentry"] and LATIN_FILE not in json.dumps(out)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("open 'in/a b c.pdf' failed", "open '[file]' failed"),
        ("no such key incoming/x%20y.PDF here", "no such key [file] here"),
        ("s3://bucket/some key.pdf gone", "s3://[Filtered] [file] gone"),
        ("page says שלום עולם, ok", "page says [text], ok"),
        ("EncryptedPdfError: encrypted_pdf", "EncryptedPdfError: encrypted_pdf"),
    ],
)
def test_scrub_text(text: str, expected: str) -> None:
    assert scrub_text(text) == expected


def test_no_dsn_means_no_sentry(monkeypatch) -> None:
    monkeypatch.delenv("SENTRY_DSN", raising=False)
    monkeypatch.delenv("PAGEFLEET_OBSERVABILITY__SENTRY__DSN", raising=False)
    assert init_sentry() is False
    assert not sentry_sdk.get_client().is_active()


@pytest.mark.parametrize(
    "message, secret",
    [
        ("cannot repair page: The quarterly revenue grew by nine percent", "quarterly revenue"),
        ("invalid literal for int() with base 10: 'Chapter One begins here'", "Chapter One"),
        ("KeyError: 'Introduction to the annual report'", "Introduction"),
        ("bad line\nThe second line of the page text", "second line"),
        ("Глава первая: начало", "Глава"),
        ("第一章 开始", "第一章"),
        ("déjà vu encountered", "déjà"),
    ],
)
def test_exception_messages_lose_document_text_of_any_script(message: str, secret: str) -> None:
    event = {"exception": {"values": [{"type": "ValueError", "value": message}]}}
    out = scrub_event(event)
    value = out["exception"]["values"][0]["value"]
    assert secret not in value and out["exception"]["values"][0]["type"] == "ValueError"


def test_exception_messages_keep_our_prefix_and_codes() -> None:
    from pagefleet.workers.fleet.observability import scrub_message

    assert scrub_message("storage_error: timeout") == "storage_error: timeout"
    assert (
        scrub_message("cannot repair 'a.pdf' (b.pdf): The fox")
        == "cannot repair '[text]' ([file]): [text]"
    )


def test_script_ranges_come_from_routing() -> None:
    from pagefleet.routing.scripts import ARABIC_RANGES, HEBREW_RANGES
    from pagefleet.workers.fleet import observability

    for lo, hi in (*HEBREW_RANGES, *ARABIC_RANGES):
        assert f"{chr(lo)}-{chr(hi)}" in observability._RTL_LETTER
