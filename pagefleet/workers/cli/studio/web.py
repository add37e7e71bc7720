"""The studio's Starlette application: routes, views, and where errors become status codes.

GET  /                                  documents (status, page counts, decisions) + upload
GET  /doc/<id>[?filter=unresolved]      statistics, engine health, pages by risk
GET  /doc/<id>/page/<n>                 source image beside the result (rendered/raw/edits)
GET  /doc/<id>/page/<n>/image.png       the source page, rendered in the sandbox, cached
POST /doc/<id>/page/<n>/decision        approve (as is or corrected) | reject + reason | flag → review.json
                                        and the reviewed artifacts (pagefleet.workers.review.reviewed)
GET  /doc/<id>/next-flagged?from=<n>    → the next refused page
GET  /doc/<id>/export.json              one JSON for the document's review
POST /doc/<id>/release                  the reviewed artifacts written again
POST /upload?name=<file.pdf>            the PDF as the request body → {job_id, doc}
GET  /uploads/<job_id>                  the upload's progress
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from pagefleet.workers.cli.studio import editor, markup, reviews, risk
from pagefleet.workers.cli.studio.config import StudioSettings, is_loopback
from pagefleet.workers.cli.studio.images import SourceUnavailable
from pagefleet.workers.cli.studio.library import DocRef, Library, NotFound
from pagefleet.workers.cli.studio.security import Guard, check_csrf
from pagefleet.workers.cli.studio.state import HERE, Studio, doc_url, page_of, studio_of
from pagefleet.workers.cli.studio.uploads import receive, scratch
from pagefleet.workers.errors import (
    BrokerUnavailable,
    InputError,
    PagefleetError,
    PdfTooLargeError,
    error_record,
)
from pagefleet.workers.review import decisions
from pagefleet.workers.settings import get_settings

MAX_FORM_BYTES = 2 << 20  # a decision's form carries the page's corrected text
RETRY_AFTER_S = 5  # an upload refused while the broker is full or away


def _summary(studio: Studio, ref: DocRef) -> dict[str, Any]:
    report = studio.library.read_json(ref, "report.json") or {}
    error = studio.library.read_json(ref, "error.json") if not report else None
    review = reviews.load(studio.library, ref) if report else reviews.ReviewFile()
    refused = report.get("needs_review") or []
    decided = sum(1 for n in refused if str(n) in review.pages)
    return {
        "id": ref.id,
        "filename": (report.get("source") or {}).get("filename", ref.id),
        "status": report.get("status") or ("error" if error else "processing"),
        "pages": report.get("page_count", 0),
        "refused": len(refused),
        "decided": decided,
        "error": error,
        "released": review.released is not None,
    }


async def index(request: Request) -> Response:
    studio = studio_of(request)
    docs = await run_in_threadpool(
        lambda: [_summary(studio, r) for r in studio.library.documents(fresh=True)]
    )
    return studio.page("index.html", docs=docs, max_upload=studio.settings.max_upload_bytes)


def _document_context(studio: Studio, doc_id: str, only_unresolved: bool) -> dict[str, Any]:
    ref, doc = studio.load(doc_id)
    report = studio.library.read_json(ref, "report.json") or {}
    review = reviews.load(studio.library, ref)
    low = studio.settings.low_confidence
    pages = doc.get("pages", [])
    live = {str(p["number"]): d for p in pages if (d := decisions.effective(p, review)) is not None}
    rows = [
        {
            "page": p,
            "rank": risk.rank(p, low),
            "decision": review.pages.get(str(p["number"])),
            "stale": decisions.is_stale(p, review.pages.get(str(p["number"]))),
            "unresolved": risk.unresolved(p, live, low),
        }
        for p in risk.risk_order(pages, low)
    ]
    if only_unresolved:
        rows = [r for r in rows if r["unresolved"]]
    return {
        "ref": ref,
        "doc": doc,
        "report": report,
        "review": review,
        "rows": rows,
        "stats": risk.page_stats(pages, live, low),
        "summary": report.get("review") or {},
        "only_unresolved": only_unresolved,
        "first_flagged": risk.next_flagged(pages, None),
        "health": report.get("engine_health") or {},
        "stale": review.document.get("job_id") not in (None, doc.get("job_id")),
    }


async def document(request: Request) -> Response:
    studio = studio_of(request)
    only = request.query_params.get("filter") == "unresolved"
    context = await run_in_threadpool(_document_context, studio, request.path_params["doc"], only)
    released = [
        n for n in request.query_params.get("released", "").split(",") if n.isdigit()
    ]  # no free text
    message = f"released pages {', '.join(released)} into {reviews.REVIEWED_MD}" if released else ""
    return studio.page("document.html", **context, message=message)


def _page_context(studio: Studio, doc_id: str, number: int) -> dict[str, Any]:
    ref, doc = studio.load(doc_id)
    page = page_of(doc, number)
    pages = doc.get("pages", [])
    review = reviews.load(studio.library, ref)
    direction = str(page.get("direction", "unknown"))
    preview = page.get("review_preview") if risk.is_refused(page) else None
    return {
        "ref": ref,
        "doc": doc,
        "page": page,
        "number": number,
        "count": len(pages),
        "direction": markup.direction_attr(direction),
        "refused": risk.is_refused(page),
        "rank": risk.rank(page, studio.settings.low_confidence),
        "rendered": markup.page_body(page),
        "has_blocks": bool(page.get("blocks")),
        "edit_view": markup.edit_map(page.get("raw_text", ""), page.get("edits") or [], direction),
        "preview": preview,
        "preview_html": markup.page_body({**preview, "direction": direction}) if preview else None,
        "decision": review.pages.get(str(number)),
        **editor.context(page, review),
        "reviewer": studio.reviewer,
        "next_flagged": risk.next_flagged(pages, number),
        "prev_flagged": risk.next_flagged(pages, number, -1),
        "image_problem": studio.images.availability(doc),
        "dpi": studio.images.dpi,
    }


async def page_view(request: Request) -> Response:
    studio = studio_of(request)
    number = int(request.path_params["n"])
    context = await run_in_threadpool(_page_context, studio, request.path_params["doc"], number)
    return studio.page("page.html", **context)


async def page_image(request: Request) -> Response:
    studio = studio_of(request)
    _, doc = await run_in_threadpool(studio.load, request.path_params["doc"])
    number = int(request.path_params["n"])
    page = page_of(doc, number)
    rotate = int((page.get("layer") or {}).get("rotated") or 0)
    path = await run_in_threadpool(studio.images.png, doc, number, rotate)
    return FileResponse(
        path, media_type="image/png", headers={"cache-control": "private, max-age=3600"}
    )


async def _form(request: Request) -> dict[str, str]:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise reviews.ReviewError("the form is too large")
    return {k: v[-1] for k, v in urllib.parse.parse_qs(body.decode("utf-8", "replace")).items()}


class Forbidden(Exception):
    """A write without the CSRF token (answered 403)."""


async def _write_request(request: Request) -> tuple[Studio, dict[str, str], DocRef, dict[str, Any]]:
    """A POST on a document: the form, checked for the CSRF token, and the document it names."""
    studio = studio_of(request)
    form = await _form(request)
    if not check_csrf(studio.csrf, form, request.headers):
        raise Forbidden("missing or wrong CSRF token")
    ref, doc = await run_in_threadpool(studio.load, request.path_params["doc"])
    return studio, form, ref, doc


def _decide(
    studio: Studio, ref: DocRef, doc: dict[str, Any], number: int, form: dict[str, str]
) -> reviews.Decision:
    page = page_of(doc, number)
    revision = form.get("revision", "")
    return reviews.decide(
        studio.library,
        ref,
        doc,
        number,
        form.get("decision", ""),
        form.get("note", ""),
        reviewer=form.get("reviewer", ""),
        reason=form.get("reason", ""),
        text=form.get("text"),
        cells=editor.cells_from_form(page, reviews.load(studio.library, ref), form),
        revision=int(revision) if revision.isdigit() else None,
        text_sha256=form.get("text_sha256") or None,
        broker=studio.uploads.broker,
    )


async def decision(request: Request) -> Response:
    studio, form, ref, doc = await _write_request(request)
    number = int(request.path_params["n"])
    made = await run_in_threadpool(_decide, studio, ref, doc, number, form)
    if "application/json" in request.headers.get("accept", ""):
        return JSONResponse(made.model_dump(mode="json"))
    target = (
        risk.next_flagged(doc.get("pages", []), number) if form.get("then") == "next" else number
    )
    return RedirectResponse(doc_url(ref.id, "page", target or number), 303)


async def next_flagged(request: Request) -> Response:
    studio = studio_of(request)
    ref, doc = await run_in_threadpool(studio.load, request.path_params["doc"])
    current = request.query_params.get("from", "")
    target = risk.next_flagged(doc.get("pages", []), int(current) if current.isdigit() else None)
    return RedirectResponse(doc_url(ref.id, "page", target) if target else doc_url(ref.id), 303)


async def export(request: Request) -> Response:
    studio = studio_of(request)
    ref, doc = await run_in_threadpool(studio.load, request.path_params["doc"])
    review = await run_in_threadpool(reviews.load, studio.library, ref)
    name = (ref.id if ref.id != "~" else "document").replace("/", "_")
    body = json.dumps(reviews.export(ref, doc, review), ensure_ascii=False, indent=1)
    return Response(
        body,
        media_type="application/json",
        headers={
            "content-disposition": f"attachment; filename*=UTF-8''{urllib.parse.quote(name)}.review.json"
        },
    )


async def release(request: Request) -> Response:
    studio, _, ref, doc = await _write_request(request)
    done = await run_in_threadpool(reviews.release, studio.library, ref, doc)
    return RedirectResponse(doc_url(ref.id) + "?released=" + ",".join(map(str, done.pages)), 303)


async def upload(request: Request) -> Response:
    studio = studio_of(request)
    if not check_csrf(studio.csrf, {}, request.headers):
        raise Forbidden("missing or wrong CSRF token")
    cap = studio.settings.max_upload_bytes
    length = request.headers.get("content-length", "")
    try:
        if length.isdigit() and int(length) > cap:
            raise PdfTooLargeError(f"the upload is {length} bytes; the studio's limit is {cap}")
        with scratch() as tmp:
            path = await receive(request.stream(), cap, Path(tmp))
            made = await run_in_threadpool(
                studio.uploads.submit, path, request.query_params.get("name", "")
            )
    except InputError as exc:
        return JSONResponse(
            error_record(exc), status_code=413 if exc.code == "pdf_too_large" else 400
        )
    except BrokerUnavailable as exc:  # full (maxmemory) or away: nothing was enqueued; retry later
        return JSONResponse(
            error_record(exc), status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)}
        )
    return JSONResponse(
        {
            "job_id": made.job_id,
            "doc": made.doc,
            "filename": made.filename,
            "progress": f"/uploads/{made.job_id}",
        },
        status_code=202,
    )


async def upload_progress(request: Request) -> Response:
    studio = studio_of(request)
    info = await run_in_threadpool(studio.uploads.progress, request.path_params["job"])
    if info is None:
        raise NotFound(request.path_params["job"])
    info["url"] = doc_url(info["doc"]) if info["done"] and not info["error_code"] else None
    return JSONResponse(info)


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def _error_page(status: int, title: str, message: str):
    async def handler(request: Request, exc: Exception) -> Response:
        if request.url.path.startswith(("/uploads", "/upload")) or request.url.path.endswith(
            ".json"
        ):
            return JSONResponse(
                {"code": getattr(exc, "code", title), "message": message or str(exc)}, status
            )
        studio = studio_of(request)
        detail = message or getattr(exc, "message", str(exc))
        return studio.page("error.html", status=status, title=title, message=detail)

    return handler


ROUTES = [
    Route("/", index),
    Route("/healthz", healthz),
    Route("/upload", upload, methods=["POST"]),
    Route("/uploads/{job:str}", upload_progress),
    Route("/doc/{doc:path}/page/{n:int}/image.png", page_image),
    Route("/doc/{doc:path}/page/{n:int}/decision", decision, methods=["POST"]),
    Route("/doc/{doc:path}/page/{n:int}", page_view),
    Route("/doc/{doc:path}/next-flagged", next_flagged),
    Route("/doc/{doc:path}/export.json", export),
    Route("/doc/{doc:path}/release", release, methods=["POST"]),
    Route("/doc/{doc:path}", document),
    Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
]


def create_app(
    where: str,
    settings: StudioSettings | None = None,
    *,
    broker: str | None = None,
    host: str = "127.0.0.1",
) -> Starlette:
    """The studio over a folder of artifacts or an `s3://bucket/prefix`."""
    settings = settings or get_settings().studio
    studio = Studio(Library.open(where), settings, broker)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await asyncio.to_thread(studio.uploads.close)

    handlers = {
        NotFound: _error_page(404, "not found", "nothing here"),
        Forbidden: _error_page(403, "forbidden", ""),
        SourceUnavailable: _error_page(404, "source not available", ""),
        reviews.ReviewError: _error_page(409, "cannot do that", ""),
        PagefleetError: _error_page(502, "storage or broker problem", ""),
    }
    app = Starlette(
        routes=ROUTES,
        exception_handlers=handlers,
        lifespan=lifespan,  # type: ignore[arg-type]
        max_body_size=settings.max_upload_bytes + MAX_FORM_BYTES,
    )
    app.state.studio = studio
    token = settings.token.get_secret_value() if settings.token else None
    app.add_middleware(Guard, token=token, loopback_only=is_loopback(host))
    return app
