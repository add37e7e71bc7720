"""A document split into a chord of range tasks reads exactly like the same document in one task,
and its work state is one object per range."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pymupdf
import pytest
import redis

from tests.conftest import PrivateFleet, wait_for_job
from tests.support.pdfs import joined
from pagefleet.workers.settings import Options
from pagefleet.workers.store.storage import LocalStorage
from pagefleet.workers.split.submit import enqueue, spec_for_path

pytestmark = [pytest.mark.integration, pytest.mark.slow]
PAGES = (
    "born_digital_english.pdf",
    "born_digital_hebrew.pdf",
    "visual_order_hebrew.pdf",
    "born_digital_arabic_presentation_forms.pdf",
    "image_only_english_scan.pdf",
    "broken_text_layer_legacy_hebrew_mojibake.pdf",
    "born_digital_mixed_hebrew_english.pdf",
)


def _document(fixtures_dir: Path, target: Path) -> Path:
    with pymupdf.open() as doc:
        for name in PAGES * 2:
            with pymupdf.open(fixtures_dir / name) as src:
                doc.insert_pdf(src, from_page=0, to_page=0)
        doc.save(target)
    return target


def _run(
    pdf: Path, out: Path, tmp: Path, env: dict[str, str], structure: bool = False
) -> tuple[list[dict], list[str]]:
    tmp.mkdir(parents=True, exist_ok=True)
    with PrivateFleet(tmp, env, (("split,collect", 1), ("cpu", 2))):
        spec = spec_for_path(str(pdf), LocalStorage(out).url, "doc", Options(structure=structure))
        info = wait_for_job(enqueue(spec), timeout_s=300)
        logs = "".join(p.read_text(errors="replace") for p in tmp.glob("worker-*.log"))
    assert info["state"] == "done", info
    pages = json.loads((out / "doc" / "document.json").read_text(encoding="utf-8"))["pages"]
    return pages, logs.splitlines()


def _ran(lines: list[str], task: str) -> int:
    return sum(f"Task {task}[" in line and "succeeded" in line for line in lines)


def test_ranges_read_like_one_task(fixtures_dir: Path, tmp_path: Path) -> None:
    pdf = _document(fixtures_dir, tmp_path / "doc.pdf")
    one, no_ranges = _run(pdf, tmp_path / "one", tmp_path / "f1", {})
    split, range_tasks = _run(
        pdf,
        tmp_path / "split",
        tmp_path / "f2",
        {"PAGEFLEET_ADVANCED__SPLIT_RANGE_PAGES": "3", "PAGEFLEET_ADVANCED__SPLIT_MAX_RANGES": "4"},
    )
    assert _ran(no_ranges, "pagefleet.split_range") == 0
    assert (
        _ran(range_tasks, "pagefleet.split_range") == 4
    )  # 14 pages: the split task's 3, then 4 ranges of 3
    assert [p["number"] for p in split] == list(range(1, 15))
    assert [(p["route"], p["text"], p["quality"]) for p in split] == [
        (p["route"], p["text"], p["quality"]) for p in one
    ]
    assert any(
        p["route"] == "ocr" for p in split
    )  # a page that climbed from a range still got read
    # its split task began collecting as the ranges came in, met the page that climbs, and gave up
    assert any("collected after its ranges instead" in line for line in range_tasks)


def test_ranges_with_structure_give_the_same_blocks(structure_dir: Path, tmp_path: Path) -> None:
    """Structure on: the ranges are decided without blocks, then the document-wide font statistics
    and running headers from every page's layout, and a task per range for its blocks, give the
    same blocks as one task."""
    pdf = joined(
        structure_dir,
        ("en_long_report", "he_report_tables", "ar_report_tables", "mix_he_en_table"),
        tmp_path / "report.pdf",
    )
    one, no_ranges = _run(pdf, tmp_path / "one", tmp_path / "f1", {}, structure=True)
    split, range_tasks = _run(
        pdf,
        tmp_path / "split",
        tmp_path / "f2",
        {"PAGEFLEET_ADVANCED__SPLIT_RANGE_PAGES": "3", "PAGEFLEET_ADVANCED__SPLIT_MAX_RANGES": "4"},
        structure=True,
    )
    assert (
        _ran(no_ranges, "pagefleet.split_range") == 0
        and _ran(no_ranges, "pagefleet.structure_range") == 0
    )
    assert (
        _ran(range_tasks, "pagefleet.split_range") == 3
    )  # 11 pages: the split task's 3, then ranges of 3, 3, 2
    assert (
        _ran(range_tasks, "pagefleet.structure_range") == 4
    )  # every range's blocks, the split task's too
    assert [(p["route"], p["text"], p["quality"], p["blocks"]) for p in split] == [
        (p["route"], p["text"], p["quality"], p["blocks"]) for p in one
    ]
    kinds = {b["type"] for p in split for b in p["blocks"]}
    assert {"heading", "table", "header"} <= kinds, (
        kinds
    )  # running headers need pages of several ranges


DIGITAL = (
    "born_digital_english.pdf",
    "born_digital_hebrew.pdf",
    "born_digital_arabic_presentation_forms.pdf",
    "born_digital_mixed_hebrew_english.pdf",
)


def _artifacts(out: Path) -> dict[str, object]:
    """Every artifact of `out/doc`, the job id and the timings (`seconds` fields) left out."""

    def untimed(value: object) -> object:
        if isinstance(value, dict):
            return {k: untimed(v) for k, v in value.items() if "seconds" not in k and k != "job_id"}
        if isinstance(value, list):
            return [untimed(v) for v in value]
        return value

    found: dict[str, object] = {}
    for path in sorted((out / "doc").iterdir()):
        text = path.read_text(encoding="utf-8")
        found[path.name] = untimed(json.loads(text)) if path.suffix == ".json" else text
    return found


def test_collected_as_ranges_come_in_reads_the_same(fixtures_dir: Path, tmp_path: Path) -> None:
    """A document of several ranges, nothing climbing: its split task collects it as the range tasks
    store their ranges (`pagefleet.workers.collect.stream`), and `split_done` finds it done; every artifact is the one
    the collection after the last range writes, and no lease or list is left in Redis."""
    with pymupdf.open() as doc:
        for name in DIGITAL * 4:
            with pymupdf.open(fixtures_dir / name) as src:
                doc.insert_pdf(src, from_page=0, to_page=0)
        doc.save(tmp_path / "doc.pdf")
    ranges = {
        "PAGEFLEET_ADVANCED__SPLIT_RANGE_PAGES": "3",
        "PAGEFLEET_ADVANCED__SPLIT_MAX_RANGES": "8",
    }
    _, after = _run(
        tmp_path / "doc.pdf",
        tmp_path / "after",
        tmp_path / "f1",
        {**ranges, "PAGEFLEET_ADVANCED__STREAM_COLLECT": "0"},
    )
    (tmp_path / "f2").mkdir()
    with PrivateFleet(tmp_path / "f2", ranges, (("split,collect", 2), ("cpu", 2))) as fleet:
        spec = spec_for_path(
            str(tmp_path / "doc.pdf"),
            LocalStorage(tmp_path / "with").url,
            "doc",
            Options(structure=False),
        )
        info = wait_for_job(enqueue(spec), timeout_s=300)
        time.sleep(1.0)  # split_done's last log line
        logs = "".join(
            p.read_text(errors="replace") for p in (tmp_path / "f2").glob("worker-*.log")
        )
        left = [
            k
            for k in redis.Redis.from_url(fleet.url).keys("pagefleet:*")
            if spec.job_id in str(k) and ("stream" in str(k) or "ranges-stored" in str(k))
        ]
    assert info["state"] == "done", info
    assert (
        _ran(after, "pagefleet.split_range") == 5
    )  # 16 pages: the split task's 3, then ranges of 3, 3, 3, 2, 2 (the last two, 4 pages, too few to taper)
    assert any(
        "pagefleet.split_done" in line and "'skipped': 'already done'" in line
        for line in logs.splitlines()
    )
    assert "collected after its ranges instead" not in logs
    assert _artifacts(tmp_path / "with") == _artifacts(tmp_path / "after")
    assert left == []
