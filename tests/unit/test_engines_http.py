"""The `http` engine against a real chat-completions server on a loopback port (http.server in a thread)."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PIL")
from PIL import Image, ImageDraw  # noqa: E402

from pagefleet.workers.engines.base import PageImage, create  # noqa: E402
from pagefleet.workers.engines.http import png_data_url  # noqa: E402
from pagefleet.workers.engines.vlm import DotsOcrEngine  # noqa: E402
from pagefleet.workers.errors import EngineCrashed, EngineTimeout, EngineUnavailable  # noqa: E402


class FakeVllm(ThreadingHTTPServer):
    """Speaks enough of the OpenAI protocol; `mode` picks the behaviour of the next requests."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ChatHandler)
        self.mode = "ok"
        self.served = ["rednote-hilab/dots.ocr", "served-model"]
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class ChatHandler(BaseHTTPRequestHandler):
    server: FakeVllm

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._send(
                200,
                json.dumps(
                    {"object": "list", "data": [{"id": m} for m in self.server.served]}
                ).encode(),
            )
        else:
            self._send(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append(
                {"path": self.path, "headers": dict(self.headers), "body": body}
            )
        mode = self.server.mode
        if mode == "slow":
            time.sleep(1.0)
        if mode == "500":
            return self._send(500, b'{"error": "CUDA out of memory"}')
        if mode == "400":
            return self._send(400, b'{"error": "image too large"}')
        if mode == "garbage":
            return self._send(200, b"<html>proxy error</html>", "text/html")
        url = body["messages"][0]["content"][0]["image_url"]["url"]
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"  page of {len(url)} chars\n"},
                }
            ],
            "usage": {"prompt_tokens": 812, "completion_tokens": 5, "total_tokens": 817},
        }
        self._send(200, json.dumps(answer).encode())


@pytest.fixture
def server() -> Iterator[FakeVllm]:
    fake = FakeVllm()
    thread = threading.Thread(
        target=fake.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield fake
    fake.shutdown()
    fake.server_close()
    thread.join(timeout=5)


@pytest.fixture
def pages(tmp_path: Path) -> list[PageImage]:
    result = []
    for number in (1, 2):
        image = Image.new("RGB", (200, 120), "white")
        ImageDraw.Draw(image).text((10, 40), f"page {number}", fill="black")
        path = tmp_path / f"p{number}.png"
        image.save(path)
        result.append(PageImage(str(path), number))
    jpeg = tmp_path / "p3.jpg"
    Image.new("RGB", (80, 80), "gray").save(jpeg)
    result.append(PageImage(str(jpeg), 3))
    return result


def test_request_shape_and_answers(server: FakeVllm, pages: list[PageImage]) -> None:
    engine = create(
        "http:dots", base_url=server.url + "/", api_key="s3cret", max_tokens=1024, concurrency=2
    )
    outputs = engine.read(pages, script="ar")
    assert [o.engine for o in outputs] == ["http:dots"] * 3
    assert len(server.requests) == 3
    for request, page, out in zip(sorted(server.requests, key=_page_order(pages)), pages, outputs):
        assert request["path"] == "/v1/chat/completions"
        assert request["headers"]["Authorization"] == "Bearer s3cret"
        body = request["body"]
        assert body["model"] == "rednote-hilab/dots.ocr"
        assert body["max_tokens"] == 1024 and body["temperature"] == 0
        image_part, text_part = body["messages"][0]["content"]
        url = image_part["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        png = base64.b64decode(url.split(",", 1)[1])
        assert png.startswith(b"\x89PNG\r\n\x1a\n")  # the JPEG page was re-encoded
        if page.path.endswith(".png"):
            assert png == Path(page.path).read_bytes()
        assert text_part == {"type": "text", "text": DotsOcrEngine.spec.prompt}
        assert out.text == f"page of {len(url)} chars"
        assert out.details["tokens"] == 5 and out.details["prompt_tokens"] == 812
        assert out.details["finish_reason"] == "stop" and out.seconds > 0


def _page_order(pages: list[PageImage]) -> Any:
    """Requests arrive in any order under concurrency: sort them back by their image."""
    urls = [_data_url_of(page) for page in pages]
    return lambda request: urls.index(
        request["body"]["messages"][0]["content"][0]["image_url"]["url"]
    )


def _data_url_of(page: PageImage) -> str:
    return png_data_url(page.path)


def test_plain_variant_is_the_served_model_and_no_key_no_header(
    server: FakeVllm, pages: list[PageImage]
) -> None:
    out = create("http:served-model", base_url=server.url).read(pages[:1], script="latin")
    assert out[0].text.startswith("page of")
    request = server.requests[0]
    assert "Authorization" not in request["headers"]
    assert request["body"]["model"] == "served-model"
    assert request["body"]["messages"][0]["content"][1]["text"] == "Read all the text in the image."


def test_lightonocr_variant_sends_the_image_alone(server: FakeVllm, pages: list[PageImage]) -> None:
    create("http:lightonocr", base_url=server.url).read(pages[:1], script="latin")
    content = server.requests[0]["body"]["messages"][0]["content"]
    assert [part["type"] for part in content] == ["image_url"]


def test_server_error_is_a_crash(server: FakeVllm, pages: list[PageImage]) -> None:
    server.mode = "500"
    with pytest.raises(EngineCrashed, match="HTTP 500.*CUDA out of memory"):
        create("http:dots", base_url=server.url).read(pages[:1], script="ar")


def test_client_error_is_a_crash_naming_the_status(
    server: FakeVllm, pages: list[PageImage]
) -> None:
    server.mode = "400"
    with pytest.raises(EngineCrashed, match="HTTP 400"):
        create("http:dots", base_url=server.url).read(pages[:1], script="ar")


def test_non_json_answer_is_a_crash(server: FakeVllm, pages: list[PageImage]) -> None:
    server.mode = "garbage"
    with pytest.raises(EngineCrashed, match="not JSON"):
        create("http:dots", base_url=server.url).read(pages[:1], script="ar")


def test_slow_server_times_out(server: FakeVllm, pages: list[PageImage]) -> None:
    server.mode = "slow"
    started = time.monotonic()
    with pytest.raises(EngineTimeout, match="no answer within"):
        create("http:dots", base_url=server.url, timeout_s=0.3).read(pages[:1], script="ar")
    assert time.monotonic() - started < 0.9


def test_refused_connection_is_a_crash(server: FakeVllm, pages: list[PageImage]) -> None:
    url = server.url
    server.shutdown()
    server.server_close()
    with pytest.raises(EngineCrashed, match="cannot reach"):
        create("http:dots", base_url=url, timeout_s=2).read(pages[:1], script="ar")


def test_health(server: FakeVllm) -> None:
    assert create("http:dots", base_url=server.url).health().available
    missing = create("http:qwen", base_url=server.url).health()
    assert not missing.available and "Qwen/Qwen2.5-VL-7B-Instruct" in missing.detail
    unconfigured = create("http:dots", base_url=None).health()
    assert not unconfigured.available and "http_base_url" in unconfigured.detail
    with pytest.raises(EngineUnavailable):
        create("http:dots", base_url=None).read([PageImage("/nonexistent.png", 1)], script="ar")


def test_health_of_a_dead_server(server: FakeVllm) -> None:
    url = server.url
    server.shutdown()
    server.server_close()
    health = create("http:dots", base_url=url).health()
    assert not health.available and url in health.detail


def test_unreadable_page_is_a_crash(server: FakeVllm, tmp_path: Path) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not an image at all")
    with pytest.raises(EngineCrashed, match="cannot read page image"):
        create("http:dots", base_url=server.url).read([PageImage(str(broken), 1)], script="ar")


def test_a_task_deadline_bounds_the_wait_for_the_server(
    server: FakeVllm, pages: list[PageImage]
) -> None:
    """A task on a thread (pagefleet.workers.fleet.deadline): a request waits no longer than the task may run, and
    running out of that time is the task's time limit, not the engine's timeout."""
    from pagefleet.workers.fleet import deadline
    from pagefleet.workers.errors import TaskDeadline

    server.mode = "slow"
    engine = create("http:dots", base_url=server.url, timeout_s=30)
    with (
        deadline.until(time.monotonic() + 0.3),
        pytest.raises(TaskDeadline, match="waiting for the server"),
    ):
        engine.read(pages[:2], script="ar")
    asked = len(server.requests)
    with deadline.until(time.monotonic() - 1), pytest.raises(TaskDeadline, match="time limit"):
        engine.read(pages[:1], script="ar")
    assert len(server.requests) == asked  # past its deadline already: no request is sent
