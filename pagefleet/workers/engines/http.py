"""`http`: OCR through an OpenAI-compatible chat-completions server (vLLM serving the same VLMs).

One POST `{base_url}/v1/chat/completions` per page image:

    {"model": M, "max_tokens": N, "temperature": 0,
     "messages": [{"role": "user", "content": [
         {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}},
         {"type": "text", "text": <the model's OCR prompt>}]}]}

with `Authorization: Bearer <api key>` when one is set. The variant picks the model: `http:dots`,
`http:qwen`, `http:lightonocr` use that engine's checkpoint id (settings.gpu.vlm) and OCR prompt; any
other variant is the served model name; no variant → `settings.gpu.vlm.http_model`. Pages go out
`concurrency` at a time (default settings.gpu.vlm.batch_size) so the server can batch them.

Errors: a timeout → `EngineTimeout`; refused connection, HTTP 5xx, a malformed answer →
`EngineCrashed`; HTTP 4xx → `EngineCrashed` naming the status. Standard library only.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pagefleet.workers.fleet import deadline
from pagefleet.workers.engines.base import (
    ALL_SCRIPTS,
    Engine,
    EngineHealth,
    EngineOutput,
    PageImage,
    register,
    scripts_read,
)
from pagefleet.workers.engines.vlm_request import ocr_prompt, spec_of
from pagefleet.workers.errors import (
    EngineCrashed,
    EngineTimeout,
    EngineUnavailable,
    PagefleetError,
    TaskDeadline,
)
from pagefleet.workers.settings import get_settings

log = logging.getLogger(__name__)
GENERIC_PROMPT = "Read all the text in the image."


def png_data_url(path: str) -> str:
    """The image as a `data:image/png;base64,...` URL (re-encoded as PNG unless it already is one)."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        from PIL import Image

        buffer = io.BytesIO()
        with Image.open(io.BytesIO(data)) as image:
            image.save(buffer, format="PNG")
        data = buffer.getvalue()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


@register("http")
class HttpEngine(Engine):
    name = "http"
    device = "remote"
    scripts = ALL_SCRIPTS
    structure = True

    @classmethod
    def reads(cls, variant: str | None) -> frozenset[str]:
        """What the VLM engine the variant names reads (`http:dots`); any script for another model."""
        return scripts_read(variant) if spec_of(variant) else cls.scripts

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        super().__init__(variant, **options)
        vlm = get_settings().gpu.vlm
        base_url = options.get("base_url", vlm.http_base_url)
        self.base_url: str | None = base_url.rstrip("/") if base_url else None
        self.api_key: str | None = options.get("api_key", vlm.http_api_key)
        self.timeout_s = float(options.get("timeout_s", vlm.http_timeout_s))
        self.max_tokens = int(options.get("max_tokens", vlm.max_new_tokens))
        self.concurrency = max(1, int(options.get("concurrency", vlm.batch_size)))
        spec = spec_of(variant)
        self.engine_spec = spec.name if spec else None
        if options.get("model"):
            self.model: str | None = options["model"]
        elif spec:
            self.model = getattr(vlm, spec.settings_field)
        else:
            self.model = variant or vlm.http_model

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def health(self) -> EngineHealth:
        if not self.base_url:
            return EngineHealth(
                self.label,
                False,
                "no server configured (settings.gpu.vlm.http_base_url)",
                self.device,
            )
        if not self.model:
            return EngineHealth(
                self.label,
                False,
                "no model named (variant or settings.gpu.vlm.http_model)",
                self.device,
            )
        request = urllib.request.Request(
            f"{self.base_url}/v1/models", headers=self._headers(), method="GET"
        )
        try:
            with urllib.request.urlopen(request, timeout=min(5.0, self.timeout_s)) as response:
                served = [m.get("id") for m in json.loads(response.read()).get("data", [])]
        except (urllib.error.URLError, OSError, ValueError, AttributeError) as e:
            return EngineHealth(self.label, False, f"{self.base_url}: {e}", self.device)
        if served and self.model not in served:
            return EngineHealth(
                self.label, False, f"{self.base_url} serves {served}, not {self.model}", self.device
            )
        return EngineHealth(self.label, True, f"{self.base_url} serves {self.model}", self.device)

    def payload(self, page: PageImage, script: str) -> dict[str, Any]:
        """The chat-completions request body for one page."""
        prompt = ocr_prompt(self.engine_spec, script) if self.engine_spec else GENERIC_PROMPT
        content: list[dict[str, Any]] = [
            {"type": "image_url", "image_url": {"url": png_data_url(page.path)}}
        ]
        if prompt:
            content.append({"type": "text", "text": prompt})
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            "messages": [{"role": "user", "content": content}],
        }

    def read(self, images: list[PageImage], *, script: str) -> list[EngineOutput]:
        if not images:
            return []
        if not self.base_url or not self.model:
            raise EngineUnavailable(f"{self.label}: no server or model configured")
        if len(images) == 1 or self.concurrency == 1:
            return [self._read_one(page, script) for page in images]
        end = (
            deadline.get()
        )  # a task on a thread: its requests' threads wait no longer than it may run
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(images))) as pool:
            return list(pool.map(lambda page: self._read_until(end, page, script), images))

    def _read_until(self, end: float | None, page: PageImage, script: str) -> EngineOutput:
        with deadline.until(end):
            return self._read_one(page, script)

    def _read_one(self, page: PageImage, script: str) -> EngineOutput:
        try:
            body = json.dumps(self.payload(page, script)).encode("utf-8")
        except OSError as e:
            raise EngineCrashed(f"{self.label}: cannot read page image {page.path}: {e}") from e
        request = urllib.request.Request(
            f"{self.base_url}/v1/chat/completions",
            data=body,
            headers=self._headers(),
            method="POST",
        )
        started = time.monotonic()
        answer = self._post(request, page)
        seconds = time.monotonic() - started
        try:
            choice = answer["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as e:
            raise EngineCrashed(
                f"{self.label}: malformed answer for page {page.page}: {str(answer)[:200]}"
            ) from e
        usage = answer.get("usage") or {}
        details = {
            "model": answer.get("model", self.model),
            "finish_reason": choice.get("finish_reason"),
            "prompt_tokens": usage.get("prompt_tokens"),
            "tokens": usage.get("completion_tokens"),
            "tokens_per_s": round(usage["completion_tokens"] / seconds, 2)
            if usage.get("completion_tokens") and seconds > 0
            else None,
        }
        return EngineOutput(text=text.strip(), engine=self.label, seconds=seconds, details=details)

    def _timed_out(self, where: str) -> PagefleetError:
        """No answer in time: the task's deadline when that came first, else the engine's timeout."""
        left = deadline.remaining()
        if left is not None and left <= 0:
            return TaskDeadline(f"{where}: the task passed its time limit waiting for the server")
        return EngineTimeout(f"{where}: no answer within {self.timeout_s:.0f}s")

    def _post(self, request: urllib.request.Request, page: PageImage) -> dict[str, Any]:
        where = f"{self.label}: page {page.page}"
        timeout = deadline.bounded(self.timeout_s, where) or self.timeout_s
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            detail = e.read()[:300].decode("utf-8", "replace")
            kind = "server error" if e.code >= 500 else "request refused"
            raise EngineCrashed(f"{where}: {kind} HTTP {e.code}: {detail}") from e
        except urllib.error.URLError as e:
            if isinstance(e.reason, (TimeoutError, socket.timeout)):
                raise self._timed_out(where) from e
            raise EngineCrashed(f"{where}: cannot reach {self.base_url}: {e.reason}") from e
        except TimeoutError as e:  # socket.timeout is TimeoutError since 3.10
            raise self._timed_out(where) from e
        except OSError as e:  # connection reset mid-answer, ...
            raise EngineCrashed(f"{where}: connection failed: {e}") from e
        try:
            answer = json.loads(raw)
        except ValueError as e:
            raise EngineCrashed(f"{where}: answer is not JSON: {raw[:200]!r}") from e
        if not isinstance(answer, dict):
            raise EngineCrashed(f"{where}: unexpected answer {str(answer)[:200]}")
        return answer
