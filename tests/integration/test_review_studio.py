"""The review studio in a real headless Chromium (Debian's `chromium`, driven by Playwright), over
the artifacts of a real `pagefleet run` of the project's fixtures, served by `pagefleet review` in
its own process on a free port."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import free_port

pytestmark = pytest.mark.integration
PAGEFLEET = str(Path(sys.executable).parent / "pagefleet")
CHROMIUM = "/usr/bin/chromium"
DOC = "mixed_multipage_document"  # 8 pages: RTL text layers, a repaired visual-order page, refused pages
INPUTS = (
    f"{DOC}.pdf",
    "broken_text_layer_legacy_hebrew_mojibake.pdf",
    "born_digital_mixed_hebrew_english.pdf",
)
TABLES = (
    "he_report_tables"  # fixtures/make_structure_fixtures.py: a Hebrew report with an RTL table
)


def _request(
    base: str,
    path: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """A raw request: the path goes out exactly as written (no client-side normalisation)."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


class StudioProcess:
    def __init__(
        self, where: str, tmp: Path, *extra: str, env: dict[str, str] | None = None
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, PAGEFLEET_STORAGE__CACHE_DIR=str(tmp / "cache"), **(env or {}))
        self.log = open(tmp / f"studio-{self.port}.log", "wb")
        self.proc = subprocess.Popen(
            [PAGEFLEET, "review", where, "--port", str(self.port), *extra],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def __enter__(self) -> "StudioProcess":
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, Path(self.log.name).read_text()
            try:
                _request(self.base, "/healthz")
                return self
            except OSError:
                time.sleep(0.2)
        raise AssertionError("the studio did not start")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.log.close()


EVIL_NAME = '<img src=x onerror="window.pwned=1">'
EVIL_TEXT = (
    "<script>window.pwned=2</script> This page tries to run <b>markup</b> in the reviewer's browser "
    '<img src=x onerror="window.pwned=3"> and every word of it must be shown as text.'
)


def _hostile_pdf(folder: Path) -> Path:
    """Markup in the file name and in the text layer: the studio must show it, never run it."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(50, 50, 550, 400), EVIL_TEXT, fontsize=13)
    target = folder / f"{EVIL_NAME}.pdf"
    doc.save(target)
    return target


@pytest.fixture(scope="module")
def out(fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run (OCR off, so the scans and the mojibake layer stay refused): exit 2, needs review."""
    target = tmp_path_factory.mktemp("studio-run") / "out"
    structure = tmp_path_factory.mktemp("structure-fixtures")
    subprocess.run(
        [
            sys.executable,
            str(Path(__file__).parents[2] / "fixtures" / "make_structure_fixtures.py"),
            str(structure),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    inputs = [str(fixtures_dir / n) for n in INPUTS] + [
        str(structure / f"{TABLES}.pdf"),
        str(_hostile_pdf(structure)),
    ]
    proc = subprocess.run(
        [PAGEFLEET, "run", *inputs, "--out", str(target), "--ocr", "off", "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    return target


@pytest.fixture(scope="module")
def studio(out: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StudioProcess]:
    with StudioProcess(str(out), tmp_path_factory.mktemp("studio")) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (make system installs it)")
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=args)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    yield tab
    context.close()


def _screenshot(page, tmp_path: Path, name: str) -> Path:
    """Into tmp_path, or into PAGEFLEET_STUDIO_SCREENSHOTS (how docs/review-studio*.png are made)."""
    folder = Path(os.environ.get("PAGEFLEET_STUDIO_SCREENSHOTS") or tmp_path)
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(folder / name))
    return folder / name


def _doc(out: Path) -> dict:
    return json.loads((out / DOC / "document.json").read_text(encoding="utf-8"))


def _refused(out: Path) -> list[int]:
    return [p["number"] for p in _doc(out)["pages"] if p["needs_review"]]


def test_documents_list_status_and_counts(studio: StudioProcess, out: Path, page) -> None:
    page.goto(studio.base + "/")
    rows = page.locator("#documents tbody tr")
    assert rows.count() == len(INPUTS) + 2
    row = rows.filter(has_text=f"{DOC}.pdf")
    cells = [c.strip() for c in row.locator("td").all_inner_texts()]
    assert "needs_review" in cells[1] and cells[2] == str(_doc(out)["page_count"])
    assert cells[3] == str(len(_refused(out)))


def test_refused_page_shows_banner_reasons_and_attempts(
    studio: StudioProcess, out: Path, page, tmp_path: Path
) -> None:
    record = next(p for p in _doc(out)["pages"] if p["route"] == "review_required")
    page.goto(f"{studio.base}/doc/{DOC}/page/{record['number']}")
    banner = page.locator("#untrusted-banner")
    assert banner.is_visible() and "Untrusted content" in banner.inner_text()
    assert page.locator("#reasons li").all_inner_texts() == record["quality"]["reasons"]
    attempts = page.locator("#attempts tbody tr").all_inner_texts()
    assert len(attempts) == len(record["attempts"])
    for shown, attempt in zip(attempts, record["attempts"]):
        assert (
            attempt["engine"] in shown
            and attempt["rung"] in shown
            and all(r in shown for r in attempt["reasons"])
        )
    preview = page.locator("#rendered")
    assert preview.get_attribute("class") == "rendered untrusted-text"
    assert preview.locator("p").all_inner_texts() == record["review_preview"]["text"].split("\n")
    image = page.locator("#source-image")
    image.wait_for()
    page.wait_for_function("document.querySelector('#source-image').naturalWidth > 0")
    assert _screenshot(page, tmp_path, "review-studio.png").stat().st_size > 10_000


def test_rtl_page_renders_rtl_with_isolated_latin_and_numbers(
    studio: StudioProcess, out: Path, page
) -> None:
    pages = _doc(out)["pages"]
    rtl = next(p for p in pages if p["direction"] == "rtl" and "Tel Aviv" in p["text"])
    page.goto(f"{studio.base}/doc/{DOC}/page/{rtl['number']}")
    rendered = page.locator("#rendered")
    assert rendered.get_attribute("dir") == "rtl"
    assert rendered.evaluate("el => getComputedStyle(el).direction") == "rtl"
    isolated = rendered.locator("bdi").all_inner_texts()
    assert "2024" in isolated and "Tel Aviv" in isolated
    ltr = next(p for p in pages if p["direction"] == "ltr")
    page.goto(f"{studio.base}/doc/{DOC}/page/{ltr['number']}")
    assert page.locator("#rendered").get_attribute("dir") == "ltr"


def test_markup_in_names_and_text_is_shown_never_run(
    studio: StudioProcess, out: Path, page
) -> None:
    page.goto(studio.base + "/")
    page.get_by_text(f"{EVIL_NAME}.pdf", exact=True).click()
    page.wait_for_selector("#pages")
    page.click("#pages tbody tr a")
    page.wait_for_selector("html[data-ready]", state="attached")
    assert "<script>window.pwned=2</script>" in page.locator("#rendered").inner_text().replace(
        "\n", " "
    )
    assert page.locator("#rendered script, #rendered img, #rendered b").count() == 0
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert EVIL_NAME in page.locator("header .crumbs").inner_text()


def test_table_blocks_render_as_rtl_tables(
    studio: StudioProcess, out: Path, page, tmp_path: Path
) -> None:
    doc = json.loads((out / TABLES / "document.json").read_text(encoding="utf-8"))
    number, block = next(
        (p["number"], b) for p in doc["pages"] for b in p.get("blocks", []) if b["type"] == "table"
    )
    page.goto(f"{studio.base}/doc/{TABLES}/page/{number}")
    table = page.locator("#rendered table").first
    assert table.get_attribute("dir") == "rtl"
    header = table.locator("thead th")
    assert header.all_inner_texts() == block["table"]["rows"][0]
    first, last = header.first.bounding_box(), header.last.bounding_box()
    assert first["x"] > last["x"], "the first logical column of an RTL table is on the right"
    assert (
        table.locator("tbody tr").count()
        == len(block["table"]["rows"]) - block["table"]["header_rows"]
    )
    page.wait_for_function("document.querySelector('#source-image').naturalWidth > 0")
    page.wait_for_selector("html[data-ready]", state="attached")
    table.hover()  # in sync: the block's bbox is drawn over the source page
    mark, image = page.locator("#bbox-mark"), page.locator("#source-image")
    assert mark.is_visible()
    points = image.evaluate(
        "img => img.naturalWidth * 72 / Number(img.dataset.dpi)"
    )  # page width in points
    shown, box = image.bounding_box(), mark.bounding_box()
    scale = shown["width"] / points
    assert abs(box["x"] - (shown["x"] + block["bbox"][0] * scale)) < 2
    assert abs(box["y"] - (shown["y"] + block["bbox"][1] * scale)) < 2
    assert abs(box["width"] - (block["bbox"][2] - block["bbox"][0]) * scale) < 2
    _screenshot(page, tmp_path, "review-studio-table.png")


def test_edit_map_is_highlighted(studio: StudioProcess, out: Path, page) -> None:
    repaired = next(
        p
        for p in _doc(out)["pages"]
        if p["route"] == "text_layer_repaired"
        and p["direction"] == "rtl"
        and any(e["kind"] == "visual_order_reversal" for e in p["edits"])
    )
    page.goto(f"{studio.base}/doc/{DOC}/page/{repaired['number']}")
    page.wait_for_selector("html[data-ready]", state="attached")
    assert not page.locator("#edit-map").is_visible()
    page.click("[data-tab=edits]")
    changes = page.locator("#edit-map .edit")
    assert changes.count() == len(repaired["edits"])
    assert changes.first.locator("ins").inner_text() == repaired["edits"][0]["replacement"].strip()


def test_next_flagged_approve_and_the_unresolved_filter(
    studio: StudioProcess, out: Path, page
) -> None:
    refused = _refused(out)
    assert len(refused) >= 3
    before = hashlib.sha256((out / DOC / "document.json").read_bytes()).hexdigest()
    page.goto(f"{studio.base}/doc/{DOC}")
    page.click("#next-flagged")
    page.wait_for_url(re.compile(f"/page/{refused[0]}$"))
    page.click("#next-flagged")
    page.wait_for_url(re.compile(f"/page/{refused[1]}$"))
    page.fill("#note", "legacy cp1255 font; the scan reads שלום עולם")
    page.uncheck("#then-next")
    page.click("#approve")
    page.wait_for_selector("#current-decision")
    assert page.locator("#current-decision").inner_text() == "approve"
    review = json.loads((out / DOC / "review.json").read_text(encoding="utf-8"))
    assert review["pages"][str(refused[1])]["decision"] == "approve"
    assert (
        review["pages"][str(refused[1])]["note"] == "legacy cp1255 font; the scan reads שלום עולם"
    )
    assert hashlib.sha256((out / DOC / "document.json").read_bytes()).hexdigest() == before
    page.wait_for_selector("html[data-ready]", state="attached")
    page.keyboard.press("n")
    page.wait_for_url(re.compile(f"/page/{refused[2]}$"))
    page.click("#next-flagged")
    page.wait_for_url(re.compile(f"/page/{refused[0]}$"))  # wraps round
    page.goto(f"{studio.base}/doc/{DOC}?filter=unresolved")
    listed = [
        int(n)
        for n in page.locator("#pages tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.page)"
        )
    ]
    assert refused[1] not in listed and refused[0] in listed and refused[2] in listed


def test_release_and_export(studio: StudioProcess, out: Path, page) -> None:
    record = next(p for p in _doc(out)["pages"] if p["route"] == "review_required")
    status, headers, body = _request(studio.base, f"/doc/{DOC}/page/{record['number']}")
    csrf = re.search(rb'name="csrf" value="([^"]+)"', body).group(1).decode()
    form = urllib.parse.urlencode({"csrf": csrf, "decision": "approve", "note": "checked"}).encode()
    status, _, _ = _request(
        studio.base,
        f"/doc/{DOC}/page/{record['number']}/decision",
        "POST",
        {"content-type": "application/x-www-form-urlencoded"},
        form,
    )
    assert status == 303
    page.goto(f"{studio.base}/doc/{DOC}")
    page.click("#release")
    assert f"released pages {record['number']}" in page.locator(".notice").inner_text()
    released = (out / DOC / "document.reviewed.md").read_text(encoding="utf-8")
    assert record["review_preview"]["markdown"] in released and "approved by a reviewer" in released
    assert record["review_preview"]["text"] not in (out / DOC / "document.md").read_text(
        encoding="utf-8"
    )
    exported = page.request.get(f"{studio.base}/doc/{DOC}/export.json").json()
    assert exported["pages"][record["number"] - 1]["decision"] == "approve"
    assert exported["released"]["pages"] == [record["number"]]


@pytest.mark.parametrize(
    "path",
    [
        "/doc/../../../../etc/passwd",
        "/doc/..%2F..%2F..%2Fetc%2Fpasswd",
        f"/doc/{DOC}/../../../etc/passwd/page/1",
        "/static/../../../../etc/passwd",
        "/static/..%2F..%2F..%2F..%2Fetc%2Fpasswd",
        f"/doc/{DOC}/..%2F.pagefleet/page/1",
        "/doc/%2Fetc/page/1/image.png",
        "/doc/.pagefleet",
        f"/doc/{DOC}/page/99",
    ],
)
def test_path_traversal_gets_404(studio: StudioProcess, path: str) -> None:
    status, _, body = _request(studio.base, path)
    assert status == 404 and b"root:" not in body


def test_non_loopback_host_without_token_is_refused(out: Path) -> None:
    port = free_port()
    proc = subprocess.run(
        [PAGEFLEET, "review", str(out), "--host", "0.0.0.0", "--port", str(port)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 64 and "without a token" in proc.stderr


def test_token_host_and_csrf_guards(out: Path, tmp_path: Path) -> None:
    with StudioProcess(
        str(out),
        tmp_path,
        "--token",
        "s3cret-t0ken",
        env={"PAGEFLEET_STUDIO__MAX_UPLOAD_BYTES": "4096"},
    ) as studio:
        assert _request(studio.base, "/")[0] == 401
        assert _request(studio.base, "/?token=wrong")[0] == 401
        status, headers, _ = _request(studio.base, f"/doc/{DOC}?token=s3cret-t0ken")
        assert (
            status == 303
            and headers["location"] == f"/doc/{DOC}"
            and "HttpOnly" in headers["set-cookie"]
        )
        cookie = headers["set-cookie"].split(";", 1)[0]
        assert _request(studio.base, "/", headers={"cookie": cookie})[0] == 200
        assert (
            _request(studio.base, "/", headers={"authorization": "Bearer s3cret-t0ken"})[0] == 200
        )
        evil = {"authorization": "Bearer s3cret-t0ken", "host": "evil.example"}
        assert _request(studio.base, "/", headers=evil)[0] == 403
        no_csrf = {
            "authorization": "Bearer s3cret-t0ken",
            "content-type": "application/x-www-form-urlencoded",
        }
        assert (
            _request(
                studio.base, f"/doc/{DOC}/page/5/decision", "POST", no_csrf, b"decision=approve"
            )[0]
            == 403
        )
        cross = dict(no_csrf, origin="http://evil.example")
        assert (
            _request(
                studio.base, f"/doc/{DOC}/page/5/decision", "POST", cross, b"decision=approve"
            )[0]
            == 403
        )
        _, _, body = _request(studio.base, "/", headers={"cookie": cookie})
        upload = {
            "cookie": cookie,
            "x-csrf-token": re.search(rb'data-csrf="([^"]+)"', body).group(1).decode(),
        }
        status, _, answer = _request(
            studio.base, "/upload?name=big.pdf", "POST", upload, b"%PDF-1.7\n" + b"0" * 9000
        )
        assert status == 413 and json.loads(answer)["code"] == "pdf_too_large"


def _processes_mentioning(marker: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in args:
            found.append(args)
    return found


def test_upload_from_the_page_with_live_progress(fixtures_dir: Path, tmp_path: Path, page) -> None:
    served = tmp_path / "served"
    served.mkdir()
    with StudioProcess(str(served), tmp_path) as studio:
        page.goto(studio.base + "/")
        assert "No artifacts here yet" in page.inner_text("main")
        page.set_input_files("#upload-file", str(fixtures_dir / "bad" / "bad_zip_renamed.pdf"))
        page.click("#upload-form button")
        page.wait_for_selector("#upload-status .err")
        assert "unsupported_type" in page.locator("#upload-status").inner_text()
        page.set_input_files("#upload-file", str(fixtures_dir / "born_digital_hebrew.pdf"))
        page.click("#upload-form button")
        page.wait_for_selector("#upload-status .bar")
        page.wait_for_selector("#upload-result", timeout=180_000)
        assert "accepted" in page.locator("#upload-status").inner_text()
        page.click("#upload-result")
        page.wait_for_url(re.compile("/doc/born_digital_hebrew$"))
        doc = json.loads(
            (served / "born_digital_hebrew" / "document.json").read_text(encoding="utf-8")
        )
        assert doc["status"] == "accepted" and doc["source"]["uri"].startswith(
            str(served / ".pagefleet" / "uploads")
        )
        page.goto(f"{studio.base}/doc/born_digital_hebrew/page/1")
        page.wait_for_function("document.querySelector('#source-image').naturalWidth > 0")
        assert _processes_mentioning(str(served)), "the embedded fleet should be running"
    assert not _processes_mentioning(str(served)), "the studio left its embedded fleet running"


def test_serves_an_s3_prefix_through_storage(out: Path, s3_bucket, tmp_path: Path) -> None:
    """The same artifacts in object storage (`artifacts/<sha256>/` under a prefix, moto's S3 server)."""
    bucket, client = s3_bucket
    sha = _doc(out)["source"]["sha256"]
    for name in ("document.json", "document.md", "text.txt", "report.json"):
        client.fput_object(bucket, f"results/artifacts/{sha}/{name}", str(out / DOC / name))
    client.fput_object(bucket, "results/.pagefleet/work/x/job.json", str(out / DOC / "report.json"))
    refused = next(p for p in _doc(out)["pages"] if p["route"] == "review_required")["number"]
    with StudioProcess(f"s3://{bucket}/results", tmp_path) as studio:
        status, _, body = _request(studio.base, "/")
        assert (
            status == 200 and f"/doc/artifacts/{sha}".encode() in body and b".pagefleet" not in body
        )
        status, _, body = _request(studio.base, f"/doc/artifacts/{sha}/page/{refused}")
        assert status == 200 and b'id="untrusted-banner"' in body
        assert _request(studio.base, f"/doc/artifacts/{sha}/page/{refused}/image.png")[0] == 200
        csrf = re.search(rb'name="csrf" value="([^"]+)"', body).group(1).decode()
        form = urllib.parse.urlencode(
            {"csrf": csrf, "decision": "flag", "note": "from S3"}
        ).encode()
        status, _, _ = _request(
            studio.base,
            f"/doc/artifacts/{sha}/page/{refused}/decision",
            "POST",
            {"content-type": "application/x-www-form-urlencoded"},
            form,
        )
        assert status == 303
        for path in (
            f"/doc/artifacts/{sha}/..%2F..%2F.pagefleet%2Fwork%2Fx/page/1",
            "/doc/.pagefleet/work/x",
            f"/doc/artifacts/{sha}%2F..%2F..%2F/page/1",
        ):
            assert _request(studio.base, path)[0] == 404
    saved = json.loads(client.get_object(bucket, f"results/artifacts/{sha}/review.json").read())
    assert (
        saved["pages"][str(refused)]["decision"] == "flag"
        and saved["pages"][str(refused)]["note"] == "from S3"
    )


def test_upload_into_an_s3_prefix_through_a_broker(
    fleet, redis_server: str, s3_bucket, fixtures_dir: Path, tmp_path: Path
) -> None:
    """`--broker`: the upload is kept in the bucket and processed by the fleet's own workers."""
    bucket, client = s3_bucket
    pdf = fixtures_dir / "born_digital_arabic_presentation_forms.pdf"
    with StudioProcess(f"s3://{bucket}/results", tmp_path, "--broker", redis_server) as studio:
        _, _, body = _request(studio.base, "/")
        csrf = re.search(rb'data-csrf="([^"]+)"', body).group(1).decode()
        status, _, answer = _request(
            studio.base,
            "/upload?name=" + urllib.parse.quote("تقرير.pdf"),
            "POST",
            {"x-csrf-token": csrf, "content-type": "application/pdf"},
            pdf.read_bytes(),
        )
        assert status == 202, answer
        started = json.loads(answer)
        deadline = time.monotonic() + 180
        while True:
            progress = json.loads(_request(studio.base, started["progress"])[2])
            if progress["done"] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        sha = hashlib.sha256(pdf.read_bytes()).hexdigest()
        assert progress["status"] == "accepted" and progress["url"] == f"/doc/artifacts/{sha}"
        assert _request(studio.base, progress["url"])[0] == 200
        status, headers, image = _request(
            studio.base, f"{progress['url']}/page/1/image.png"
        )  # source from S3
        assert (
            status == 200
            and headers["content-type"] == "image/png"
            and image.startswith(b"\x89PNG")
        )
    kept = client.get_object(bucket, f"results/.pagefleet/uploads/{sha}/تقرير.pdf").read()
    assert kept == pdf.read_bytes()
    doc = json.loads(client.get_object(bucket, f"results/artifacts/{sha}/document.json").read())
    assert doc["source"]["uri"] == f"s3://{bucket}/results/.pagefleet/uploads/{sha}/تقرير.pdf"
