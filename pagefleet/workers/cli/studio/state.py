"""What every request of the studio (`pagefleet.workers.cli.studio.web`) reaches through the application's
state: the library, settings, image cache, uploads and templates; and the document URLs and pages
the views share.
"""

from __future__ import annotations

import getpass
import urllib.parse
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

from pagefleet.workers.cli.studio import risk
from pagefleet.workers.cli.studio.config import StudioSettings
from pagefleet.workers.cli.studio.images import SourceImages
from pagefleet.workers.cli.studio.library import DocRef, Library, NotFound
from pagefleet.workers.cli.studio.security import new_csrf
from pagefleet.workers.cli.studio.uploads import Uploads
from pagefleet.workers.settings import get_settings

HERE = Path(__file__).parent


class Studio:
    """Everything a request needs: the library, settings, image cache, uploads, templates."""

    def __init__(self, library: Library, settings: StudioSettings, broker: str | None) -> None:
        self.library = library
        self.settings = settings
        self.csrf = new_csrf()
        self.reviewer = settings.reviewer or getpass.getuser()
        self.images = SourceImages(
            Path(get_settings().storage.cache_dir) / "studio", settings.image_dpi, get_settings()
        )
        self.uploads = Uploads(library, settings, broker)
        self.env = Environment(
            loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"])
        )
        self.env.globals.update(
            doc_url=doc_url, csrf=self.csrf, served=library.label, rank_names=risk.RANK_NAMES
        )

    def page(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**context), status_code=status)

    def load(self, doc_id: str) -> tuple[DocRef, dict[str, Any]]:
        ref = self.library.find(doc_id)
        doc = self.library.read_json(ref, "document.json")
        if not isinstance(doc, dict):
            raise NotFound(doc_id)
        return ref, doc


def doc_url(doc_id: str, *parts: Any) -> str:
    tail = "/".join(urllib.parse.quote(str(p), safe="") for p in parts)
    return f"/doc/{urllib.parse.quote(doc_id, safe='/')}" + (f"/{tail}" if tail else "")


def studio_of(request: Request) -> Studio:
    return request.app.state.studio


def page_of(doc: dict[str, Any], number: int) -> dict[str, Any]:
    page = next((p for p in doc.get("pages", []) if int(p.get("number", 0)) == number), None)
    if page is None:
        raise NotFound(f"page {number}")
    return page
