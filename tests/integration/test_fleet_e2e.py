"""End to end through real Redis, real Celery worker processes and Tesseract, with both storage
backends: a local directory and S3 (moto's server on loopback) through the minio client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import wait_for_job
from pagefleet.workers.settings import Options
from pagefleet.workers.store.storage import LocalStorage, S3Storage
from pagefleet.workers.split.submit import enqueue, spec_for_object, spec_for_path

pytestmark = pytest.mark.integration

# page number -> (route, engine prefix, router source, a phrase the text must hold)
MIXED_EXPECTED = {
    1: ("text_layer", "pymupdf", "text_layer", "פרק ראשון: מבוא"),
    2: ("ocr", "tesseract:heb+ara+eng", "osd", "This is a scanned page"),  # routed by its reading
    3: ("text_layer_repaired", "pymupdf", "text_layer", "الفصل الأول: مقدمة"),
    4: ("text_layer_repaired", "pymupdf", "text_layer", "כותרת: שלום עולם"),
    5: ("ocr", "tesseract:heb+ara+eng", "osd", "המערכת צריכה לקרוא אותו"),
    6: ("ocr", "tesseract:heb+ara+eng", "osd", "המערכת צריכה לקרוא אותו"),
    7: ("text_layer", "pymupdf", "text_layer", "Chapter One: Introduction"),
    8: ("text_layer", "pymupdf", "text_layer", ""),
}


def check_mixed_document(document: dict) -> None:
    assert document["schema_version"] == 2  # issue 13: v1 + pages[].blocks
    assert document["page_count"] == 8
    assert [p["number"] for p in document["pages"]] == list(range(1, 9))
    for page in document["pages"]:
        route, engine, source, phrase = MIXED_EXPECTED[page["number"]]
        assert page["route"] == route, (page["number"], page["route"], page["quality"])
        assert page["engine"] == engine, (page["number"], page["engine"])
        assert page["router"]["source"] == source, (page["number"], page["router"])
        assert phrase in page["text"], (page["number"], page["text"][:200])
        assert "\ufffd" not in page["text"]
        assert not any(0xFB50 <= ord(c) <= 0xFEFF for c in page["text"]), "presentation forms left"
    legacy = document["pages"][4]
    assert legacy["attempts"][0] == {
        **legacy["attempts"][0],
        "engine": "pymupdf",
        "accepted": False,
    }
    assert "latin1_mojibake" in legacy["attempts"][0]["reasons"]
    assert document["pages"][7]["quality"]["warnings"] == ["blank_page"]


def test_mixed_document_local_storage(fleet, fixtures_dir: Path, tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    spec = spec_for_path(
        str(fixtures_dir / "mixed_multipage_document.pdf"), storage.url, "mixed", Options()
    )
    enqueue(spec)
    info = wait_for_job(spec.job_id)
    assert info["state"] == "done" and info["status"] == "accepted", info
    document = json.loads((tmp_path / "mixed" / "document.json").read_text(encoding="utf-8"))
    check_mixed_document(document)
    text = (tmp_path / "mixed" / "text.txt").read_text(encoding="utf-8")
    assert text.count("\f") == 7
    report = json.loads((tmp_path / "mixed" / "report.json").read_text(encoding="utf-8"))
    assert report["routes"] == {"text_layer": 3, "text_layer_repaired": 2, "ocr": 3}
    assert report["share"]["rung"] == {"1_text_layer": 0.625, "3_cpu_ocr": 0.375}
    assert report["share"]["router_source"] == {"text_layer": 0.625, "osd": 0.375}
    assert report["rungs"]["3_cpu_ocr"]["seconds"] > 0
    assert not (tmp_path / ".pagefleet" / "work" / spec.job_id).exists(), "work state left behind"


def test_mixed_document_s3_storage(fleet, fixtures_dir: Path, s3_bucket) -> None:
    bucket, client = s3_bucket
    client.make_bucket(bucket + "-out")
    key = "incoming/a dir/mixed + doc%.pdf"  # keys with spaces, '+' and '%'
    client.fput_object(bucket, key, str(fixtures_dir / "mixed_multipage_document.pdf"))
    spec = spec_for_object(bucket, key, f"s3://{bucket}-out/results", Options())
    enqueue(spec)
    info = wait_for_job(spec.job_id)
    assert info["state"] == "done", info
    prefix = info["artifact_prefix"]
    assert prefix.startswith("artifacts/") and len(prefix) == len("artifacts/") + 64
    out = S3Storage(bucket + "-out", "results")
    check_mixed_document(out.get_json(f"{prefix}/document.json"))
    assert "<!-- page 8 -->" in out.get_bytes(f"{prefix}/document.md").decode()
    assert out.list_keys(".pagefleet") == []


@pytest.mark.parametrize(
    "name, code",
    [
        ("bad_empty_zero_bytes.pdf", "empty_input"),
        ("bad_header_only.pdf", "invalid_pdf"),
        ("bad_user_password.pdf", "encrypted_pdf"),
        ("bad_zip_renamed.pdf", "unsupported_type"),
        ("bad_zero_pages.pdf", "zero_pages"),
    ],
)
def test_bad_inputs_give_error_json(
    fleet, fixtures_dir: Path, tmp_path: Path, name: str, code: str
) -> None:
    storage = LocalStorage(tmp_path)
    spec = spec_for_path(str(fixtures_dir / "bad" / name), storage.url, "bad", Options())
    enqueue(spec)
    info = wait_for_job(spec.job_id, timeout_s=60)
    assert info["state"] == "error" and info["error_code"] == code
    record = json.loads((tmp_path / "bad" / "error.json").read_text())
    assert record["code"] == code and record["message"]
    assert not (tmp_path / "bad" / "document.json").exists()


def test_bad_input_from_s3(fleet, fixtures_dir: Path, s3_bucket) -> None:
    bucket, client = s3_bucket
    client.fput_object(bucket, "x.pdf", str(fixtures_dir / "bad" / "bad_user_password.pdf"))
    spec = spec_for_object(bucket, "x.pdf", f"s3://{bucket}/out", Options())
    enqueue(spec)
    info = wait_for_job(spec.job_id, timeout_s=60)
    assert info["error_code"] == "encrypted_pdf"
    keys = S3Storage(bucket, "out").list_keys("artifacts")
    assert len(keys) == 1 and keys[0].endswith("/error.json")


@pytest.mark.parametrize(
    "name, engine, phrase",
    [
        ("image_only_english_scan_turned_90.pdf", "tesseract:eng", "This is a scanned page"),
        ("image_only_hebrew_scan_turned_90.pdf", "tesseract:heb+eng", "המערכת צריכה לקרוא אותו"),
    ],
)
def test_sideways_scans_are_turned_upright(
    fleet, fixtures_dir: Path, tmp_path: Path, name: str, engine: str, phrase: str
) -> None:
    spec = spec_for_path(str(fixtures_dir / name), LocalStorage(tmp_path).url, "turned", Options())
    enqueue(spec)
    assert wait_for_job(spec.job_id)["status"] == "accepted"
    page = json.loads((tmp_path / "turned" / "document.json").read_text())["pages"][0]
    assert page["layer"]["rotated"] == 90 and page["engine"] == engine and phrase in page["text"]


def test_refused_page_is_quarantined(fleet, fixtures_dir: Path, tmp_path: Path) -> None:
    """No rung gets through (OCR off): the garbage layer lives only in document.json's preview."""
    spec = spec_for_path(
        str(fixtures_dir / "broken_text_layer_legacy_hebrew_mojibake.pdf"),
        LocalStorage(tmp_path).url,
        "q",
        Options(ocr="off"),
    )
    enqueue(spec)
    assert wait_for_job(spec.job_id)["status"] == "needs_review"
    doc = json.loads((tmp_path / "q" / "document.json").read_text())
    page = doc["pages"][0]
    assert page["route"] == "review_required" and page["needs_review"] and page["text"] == ""
    assert "latin1_mojibake" in page["quality"]["reasons"]
    preview = page["review_preview"]["text"]
    assert "ùìåí" in preview and page["edit_map"] == {
        "target": "review_preview",
        "complete": False,
        "gap": "page_refused",
    }
    for name in ("document.md", "text.txt"):
        body = (tmp_path / "q" / name).read_text()
        assert "ùìåí" not in body and "page 1" in body
    report = json.loads((tmp_path / "q" / "report.json").read_text())
    assert report["needs_review"] == [1] and "latin1_mojibake" in report["review_reasons"]["1"]
