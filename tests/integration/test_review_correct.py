"""The review loop in a real headless Chromium (Debian's `chromium`, driven by Playwright), over the
artifacts of a real `pagefleet run`, served by `pagefleet review` in its own process: a reviewer
corrects a Hebrew refused page's amounts, a table cell and an Arabic line, approves, rejects a blank
page, and every reviewed artifact follows; two reviewers deciding one page at once (a local folder,
the test S3 server): one wins, the other is told; a page parsed again shows its decision stale."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from pagefleet.routing.edits import Edit, apply_edits
from tests.conftest import CORPUS
from tests.integration.test_review_studio import PAGEFLEET, StudioProcess, _request, browser  # noqa: F401

pytestmark = pytest.mark.integration
NIQQUD = (
    "he_pdfcpu_table_rtl_niqqud"  # one refused Hebrew page: a table whose amounts read reversed
)
TABLES = "he_report_tables"
ARABIC = "born_digital_arabic_presentation_forms"
MIXED = "mixed_multipage_document"
AMOUNTS = {"00.511₪": "₪115.00", "00.000,057₪": "₪750,000.00", "00.000,052₪": "₪250,000.00"}
ARABIC_LINE = ("الفصل الأول: مقدمة", "الفصل الأول: المقدمة العامة 2026")


@pytest.fixture(scope="module")
def out(fixtures_dir: Path, structure_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = CORPUS / f"{NIQQUD}.pdf"
    if not source.is_file():
        pytest.skip(f"the shared corpus has no {source.name}")
    target = tmp_path_factory.mktemp("review-loop") / "out"
    inputs = [
        str(source),
        str(structure_dir / f"{TABLES}.pdf"),
        str(fixtures_dir / f"{ARABIC}.pdf"),
        str(fixtures_dir / f"{MIXED}.pdf"),
    ]
    proc = subprocess.run(
        [PAGEFLEET, "run", *inputs, "--out", str(target), "--ocr", "off", "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    return target


@pytest.fixture(scope="module")
def studio(out: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StudioProcess]:
    with StudioProcess(
        str(out), tmp_path_factory.mktemp("studio"), env={"PAGEFLEET_STUDIO__REVIEWER": "dana"}
    ) as s:
        yield s


def _context_page(browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1500, "height": 950})
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    return context, tab


@pytest.fixture
def page(browser) -> Iterator[object]:  # noqa: F811
    context, tab = _context_page(browser)
    yield tab
    context.close()


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _chunks(folder: Path) -> list[dict]:
    return [
        json.loads(line)
        for line in (folder / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    ]


def _screenshot(page, tmp_path: Path, name: str) -> Path:
    """Into tmp_path, or into PAGEFLEET_STUDIO_SCREENSHOTS (how docs/review-editor-*.png are made)."""
    folder = Path(os.environ.get("PAGEFLEET_STUDIO_SCREENSHOTS") or tmp_path)
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(folder / name))
    return folder / name


def _open_editor(page, base: str, doc: str, number: int) -> None:
    page.goto(f"{base}/doc/{doc}/page/{number}")
    page.wait_for_selector("html[data-ready]", state="attached")
    page.click("#correct-tab")
    page.wait_for_selector("#editor", state="visible")


def _approve(page, number: int) -> None:
    page.uncheck("#then-next")
    page.click("#approve")
    page.wait_for_url(re.compile(f"/page/{number}$"))
    assert page.locator("#current-decision").inner_text() == "approve"


def test_correct_approve_reject_and_every_artifact_follows(
    studio: StudioProcess, out: Path, page, tmp_path: Path
) -> None:
    before = hashlib.sha256((out / NIQQUD / "document.json").read_bytes()).hexdigest()
    _open_editor(page, studio.base, NIQQUD, 1)
    shown = page.locator("#editor").input_value()
    assert all(wrong in shown for wrong in AMOUNTS), (
        "the reversed amounts are what the reviewer starts from"
    )
    fixed = shown
    for wrong, right in AMOUNTS.items():
        fixed = fixed.replace(wrong, right)
    page.fill("#editor", fixed)
    page.locator("#editor").press("End")
    lines = page.locator("#editor-preview > div")
    assert lines.count() == len(fixed.split("\n")) and lines.first.get_attribute("dir") == "auto"
    assert "₪115.00" in page.locator("#editor-preview bdi").all_inner_texts() or any(
        "115.00" in t for t in page.locator("#editor-preview bdi").all_inner_texts()
    )
    assert page.locator("#editor").evaluate("el => getComputedStyle(el).unicodeBidi") == "plaintext"
    page.wait_for_function("document.querySelector('#source-image').naturalWidth > 0")
    _screenshot(page, tmp_path, "review-editor-hebrew.png")
    page.fill("#note", "amounts read from the source page")
    _approve(page, 1)

    folder = out / NIQQUD
    assert hashlib.sha256((folder / "document.json").read_bytes()).hexdigest() == before
    record = _json(folder / "document.reviewed.json")["pages"][0]
    assert record["route"] == "reviewed" and record["text"] == fixed
    assert record["review"]["reviewer"] == "dana" and record["review"]["corrected"] is True
    assert apply_edits(record["raw_text"], [Edit.from_dict(e) for e in record["edits"]]) == fixed
    assert any("review" in e["kind"] for e in record["edits"])
    text = (folder / "text.reviewed.txt").read_text(encoding="utf-8")
    assert "₪250,000.00" in text and "00.000,052₪" not in text
    assert "₪115.00" in (folder / "document.reviewed.md").read_text(encoding="utf-8")
    cited = [c for c in _chunks(folder) if "₪750,000.00" in c["text"]]
    assert cited and all(
        c["reviewed"] and c["reviewed_by"] == ["dana"] and c["routes"] == ["reviewed"]
        for c in cited
    )
    report = _json(folder / "report.json")
    assert report["status"] == "accepted_after_review" and report["review"]["reviewed"] == 1
    assert report["review"]["pending"] == 0

    table = next(
        t
        for t in _json(out / TABLES / "document.json")["pages"][0]["blocks"]
        if t["type"] == "table"
    )
    index = _json(out / TABLES / "document.json")["pages"][0]["blocks"].index(table)
    _open_editor(page, studio.base, TABLES, 1)
    grid = page.locator(f"#grid-{index}")
    assert grid.get_attribute("dir") == "rtl"
    page.fill(f"input[name=cell-{index}-1-2]", "1,411.9")
    _approve(page, 1)
    moved = next(
        b
        for b in _json(out / TABLES / "document.reviewed.json")["pages"][0]["blocks"]
        if b["type"] == "table"
    )
    assert (
        moved["table"]["rows"][1][2] == "1,411.9"
        and moved["table"]["rows"][1][1] == table["table"]["rows"][1][1]
    )
    assert any("| 1,411.9 |" in c["text"] and c["reviewed"] for c in _chunks(out / TABLES))

    _open_editor(page, studio.base, ARABIC, 1)
    page.fill("#editor", page.locator("#editor").input_value().replace(*ARABIC_LINE))
    page.locator("#editor").press("Control+Home")
    page.wait_for_function("document.querySelector('#source-image').naturalWidth > 0")
    _screenshot(page, tmp_path, "review-editor-arabic.png")
    _approve(page, 1)
    arabic = (out / ARABIC / "text.reviewed.txt").read_text(encoding="utf-8")
    assert ARABIC_LINE[1] in arabic and ARABIC_LINE[0] + "\n" not in arabic

    blank = next(
        p["number"] for p in _json(out / MIXED / "document.json")["pages"] if p["route"] == "failed"
    )
    page.goto(f"{studio.base}/doc/{MIXED}/page/{blank}")
    page.fill("#reason", "a blank page")
    page.uncheck("#then-next")
    page.click("#reject")
    page.wait_for_url(re.compile(f"/page/{blank}$"))
    assert page.locator("#current-decision").inner_text() == "reject"
    assert "a blank page" in page.locator("#decided-by").inner_text()
    reviewed = _json(out / MIXED / "document.reviewed.json")["pages"][blank - 1]
    assert reviewed["route"] == "rejected" and reviewed["review"]["reason"] == "a blank page"
    assert (out / MIXED / "text.reviewed.txt").read_text(encoding="utf-8").split("\f")[
        blank - 1
    ] == ""
    assert all(blank not in c["pages"] for c in _chunks(out / MIXED))
    report = _json(out / MIXED / "report.json")
    assert (
        report["status"] == "needs_review"
        and report["review"]["rejected"] == 1
        and report["review"]["pending"] >= 1
    )
    page.goto(f"{studio.base}/doc/{MIXED}")
    assert page.locator("#rejected-count").inner_text() == "1"


def test_the_cli_applies_decisions_and_exits_0_once_nothing_is_pending(
    studio: StudioProcess, out: Path
) -> None:
    pending = _json(out / MIXED / "report.json")["review"]["pending_pages"]
    document = _json(out / MIXED / "document.json")
    proc = subprocess.run(
        [PAGEFLEET, "review", "--apply", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2 and f"{MIXED}: needs_review" in proc.stderr + proc.stdout
    for number in pending:
        body = _request(studio.base, f"/doc/{MIXED}/page/{number}")[2]
        csrf = re.search(rb'name="csrf" value="([^"]+)"', body).group(1).decode()
        record = document["pages"][number - 1]
        verdict = "approve" if (record.get("review_preview") or {}).get("text") else "reject"
        form = {
            "csrf": csrf,
            "decision": verdict,
            "reviewer": "lior",
            "reason": "no text on the page",
        }
        status, _, answer = _request(
            studio.base,
            f"/doc/{MIXED}/page/{number}/decision",
            "POST",
            {"content-type": "application/x-www-form-urlencoded"},
            urllib.parse.urlencode(form).encode(),
        )
        assert status == 303, answer[:500]
    proc = subprocess.run(
        [PAGEFLEET, "review", "--apply", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert _json(out / MIXED / "report.json")["status"] == "accepted_after_review"


def test_a_run_again_keeps_the_decisions_its_text_still_matches(out: Path) -> None:
    """The fleet's collector calls the same function: a document processed again keeps its review."""
    proc = subprocess.run(
        [
            PAGEFLEET,
            "run",
            str(CORPUS / f"{NIQQUD}.pdf"),
            "--out",
            str(out),
            "--ocr",
            "off",
            "--workers",
            "1",
            "--force",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _json(out / NIQQUD / "report.json")["status"] == "accepted_after_review"
    assert any(c["reviewed"] and "₪750,000.00" in c["text"] for c in _chunks(out / NIQQUD))


def _race(browser, base: str, doc: str, number: int) -> tuple[list[str], list[str]]:  # noqa: F811
    """Two reviewers on the same page at once: both see it undecided, then both decide."""
    contexts = [_context_page(browser) for _ in range(2)]
    try:
        for (_, tab), name in zip(contexts, ("ann", "bob")):
            tab.goto(f"{base}/doc/{doc}/page/{number}")
            tab.fill("#reviewer", name)
            tab.uncheck("#then-next")
        answers = []
        for (_, tab), button in zip(contexts, ("#approve", "#flag")):
            with tab.expect_navigation() as nav:
                tab.click(button, no_wait_after=True)
            answers.append(nav.value.status if nav.value else 0)
        texts = [tab.locator("main").inner_text() for _, tab in contexts]
    finally:
        for context, _ in contexts:
            context.close()
    return [str(a) for a in answers], texts


def test_two_reviewers_on_one_page_one_wins_the_other_is_told(
    studio: StudioProcess, out: Path, browser
) -> None:  # noqa: F811
    number = next(
        p["number"] for p in _json(out / TABLES / "document.json")["pages"] if p["number"] == 2
    )
    answers, texts = _race(browser, studio.base, TABLES, number)
    assert answers == ["200", "409"], answers
    assert "decided meanwhile by ann" in texts[1] and "was not saved" in texts[1]
    saved = _json(out / TABLES / "review.json")
    assert (
        saved["pages"][str(number)]["reviewer"] == "ann"
        and saved["pages"][str(number)]["decision"] == "approve"
    )
    assert [h["reviewer"] for h in saved["history"] if h["page"] == number] == ["ann"]


def test_a_page_parsed_again_shows_its_decision_stale(
    studio: StudioProcess, out: Path, page
) -> None:
    folder = out / TABLES
    document = _json(folder / "document.json")
    changed = document["pages"][1]
    assert _json(folder / "review.json")["pages"]["2"]["decision"] == "approve"
    changed["raw_text"] = changed["raw_text"].replace("22,300", "22,900")
    changed["text"] = changed["text"].replace(
        "22,300", "22,900"
    )  # what another reading of the layer gives
    for block in changed["blocks"]:
        block["text"] = changed["text"][block["start"] : block["end"]]
    (folder / "document.json").write_text(
        json.dumps(document, ensure_ascii=False), encoding="utf-8"
    )
    proc = subprocess.run(
        [PAGEFLEET, "review", "--apply", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = _json(folder / "report.json")
    assert report["review"]["stale_pages"] == [2] and 2 not in report["review"]["approved_pages"]
    assert _json(folder / "document.reviewed.json")["pages"][1]["route"] != "reviewed"
    page.goto(f"{studio.base}/doc/{TABLES}/page/2")
    assert page.locator("#stale-decision").is_visible()
    page.goto(f"{studio.base}/doc/{TABLES}")
    assert page.locator("#pages tr[data-page='2'] .badge.stale").is_visible()


def test_two_reviewers_on_the_s3_server(out: Path, s3_bucket, browser, tmp_path: Path) -> None:  # noqa: F811
    bucket, client = s3_bucket
    folder = out / MIXED
    sha = _json(folder / "document.json")["source"]["sha256"]
    for name in ("document.json", "document.md", "text.txt", "report.json", "chunks.jsonl"):
        client.fput_object(bucket, f"results/artifacts/{sha}/{name}", str(folder / name))
    number = next(
        p["number"]
        for p in _json(folder / "document.json")["pages"]
        if p["route"] == "review_required"
    )
    with StudioProcess(f"s3://{bucket}/results", tmp_path) as studio:
        answers, texts = _race(browser, studio.base, f"artifacts/{sha}", number)
    assert answers == ["200", "409"], answers
    assert "decided meanwhile by ann" in texts[1]
    saved = json.loads(client.get_object(bucket, f"results/artifacts/{sha}/review.json").read())
    assert saved["pages"][str(number)]["reviewer"] == "ann" and len(saved["history"]) == 1
    reviewed = json.loads(
        client.get_object(bucket, f"results/artifacts/{sha}/document.reviewed.json").read()
    )
    assert reviewed["pages"][number - 1]["route"] == "reviewed"


def _scrape(redis_url: str) -> dict[str, float]:
    import redis
    from prometheus_client import CollectorRegistry, generate_latest

    from pagefleet.workers.metrics import FleetCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(redis.Redis.from_url(redis_url)))
    values = {}
    for line in generate_latest(registry).decode().splitlines():
        if line.startswith("pagefleet_review"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def test_decisions_are_counted_for_pagefleet_metrics(
    out: Path, redis_server: str, tmp_path: Path
) -> None:
    before = _scrape(redis_server)
    document = _json(out / TABLES / "document.json")
    with StudioProcess(str(out), tmp_path, "--broker", redis_server) as studio:
        decided = [
            (
                TABLES,
                1,
                {
                    "decision": "approve",
                    "text": document["pages"][0]["text"].replace("2024", "2025", 1),
                },
            ),
            (ARABIC, 1, {"decision": "flag"}),
            (MIXED, 2, {"decision": "reject", "reason": "blank"}),
        ]
        for doc, number, fields in decided:
            body = _request(studio.base, f"/doc/{doc}/page/{number}")[2]
            csrf = re.search(rb'name="csrf" value="([^"]+)"', body).group(1).decode()
            form = urllib.parse.urlencode({"csrf": csrf, "reviewer": "noa", **fields}).encode()
            status, _, answer = _request(
                studio.base,
                f"/doc/{doc}/page/{number}/decision",
                "POST",
                {"content-type": "application/x-www-form-urlencoded"},
                form,
            )
            assert status == 303, answer[:500]
    after = _scrape(redis_server)
    delta = {k: v - before.get(k, 0.0) for k, v in after.items()}
    assert delta['pagefleet_review_decisions_total{decision="approve"}'] == 1
    assert delta['pagefleet_review_decisions_total{decision="flag"}'] == 1
    assert delta['pagefleet_review_decisions_total{decision="reject"}'] == 1
    assert delta["pagefleet_review_corrected_total"] == 1
    assert (
        delta["pagefleet_review_decision_seconds_count"] == 3
        and delta["pagefleet_review_decision_seconds_sum"] > 0
    )
