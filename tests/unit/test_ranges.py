"""Page ranges: the plan, one storage object per range, and reading records back."""

from __future__ import annotations

from pathlib import Path

import pytest

from pagefleet.workers import watchdog
from pagefleet.workers.store import keys
from pagefleet.workers.split import ranges
from pagefleet.workers.store import work
from pagefleet.workers.model import JobSpec, PageRecord, PendingPage, Quality, RouterInfo
from pagefleet.workers.settings import Settings
from pagefleet.workers.store.storage import LocalStorage


@pytest.mark.parametrize("pages", [1, 49, 50, 51, 100, 1000, 10_000, 12_345])
def test_plan_covers_every_page_once(pages: int) -> None:
    settings = Settings(advanced={"split_range_pages": 50, "split_max_ranges": 64})
    plan = ranges.plan(pages, settings)
    covered = [n for first, last in plan for n in range(first, last + 1)]
    assert covered == list(range(1, pages + 1))
    head = plan[0][1]
    assert (
        head == pages if pages <= 50 else ranges.RANGE_MIN_PAGES <= head <= 50
    )  # the split task's own
    assert len(plan) <= 1 + settings.advanced.split_max_ranges
    sizes = [last - first + 1 for first, last in plan[1:]]
    assert sizes == sorted(
        sizes, reverse=True
    )  # sent in order, taken in order: the short ones last
    assert all(n >= 3 for n in sizes)  # no range task for a page or two
    assert all(
        2 * n >= head for n in sizes[:-4]
    )  # cut evenly: no short range before the tapered tail
    if pages > 50:
        assert len(plan) >= min(8, pages // ranges.RANGE_MIN_PAGES)  # every core gets several
        assert sizes[-1] <= sizes[0] // 2  # the last range a core takes is a fraction of the others


@pytest.mark.parametrize("max_ranges", [1, 2, 3, 4, 5, 8, 64])
@pytest.mark.parametrize("pages", [26, 51, 100, 1000, 10_000])
def test_plan_never_holds_more_than_split_max_ranges(pages: int, max_ranges: int) -> None:
    plan = ranges.plan(pages, Settings(advanced={"split_max_ranges": max_ranges}))
    assert [n for first, last in plan for n in range(first, last + 1)] == list(range(1, pages + 1))
    assert len(plan) <= 1 + max_ranges


def test_ranges_shrink_for_a_document_of_a_few_hundred_pages_only(monkeypatch) -> None:
    """About eight ranges of at least `ranges.RANGE_MIN_PAGES`; a long document keeps full ranges
    (with `RANGE_MIN_PAGES = split_range_pages` every range is full); the pages of the last two
    ranges go as ranges halving in size."""
    settings = Settings(advanced={"split_range_pages": 25, "split_max_ranges": 64})
    assert ranges.RANGE_MIN_PAGES == 10
    assert ranges.plan(25, settings) == [(1, 25)]
    sizes = [last - first + 1 for first, last in ranges.plan(100, settings)]
    assert sizes == [13, 13, 13, 13, 12, 12, 12, 6, 3, 3]  # two of 12 were: 12, 6, 3, 3
    assert ranges.plan(60, settings)[:2] == [(1, 10), (11, 20)]
    assert [last - first + 1 for first, last in ranges.plan(1000, settings)][-5:] == [
        25,
        25,
        13,
        6,
        6,
    ]
    assert ranges.plan(10_000, settings)[:2] == [(1, 25), (26, 186)]
    monkeypatch.setattr(ranges, "RANGE_MIN_PAGES", 25)
    assert ranges.plan(100, settings) == [
        (1, 25),
        (26, 50),
        (51, 75),
        (76, 88),
        (89, 94),
        (95, 100),
    ]


def test_small_document_is_one_task() -> None:
    assert ranges.plan(50, Settings(advanced={"split_range_pages": 50})) == [(1, 50)]


def _record(n: int) -> PageRecord:
    return PageRecord(
        number=n,
        router=RouterInfo(source="text_layer", script="he"),
        route="text_layer",
        text=f"p{n}",
        quality=Quality(ok=True),
    )


def test_records_come_from_range_objects_and_ocr_pages(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    job = "job1"

    def judge(page: dict) -> PageRecord | PendingPage:
        n = int(page["number"])
        return PendingPage(number=n, queue="cpu") if n % 3 == 0 else _record(n)

    manifest = {"page_count": 7, "ranges": [[1, 4], [5, 7]]}
    for first, last in manifest["ranges"]:
        outcome, recs, pend = ranges.decide(
            ({"number": n} for n in range(first, last + 1)),
            first,
            last,
            ocr="auto",
            judge=judge,
            unread=lambda p: _record(p.number),
        )
        assert work.stored_outcome(storage, job, first, last) is None  # not written yet
        work.store(storage, job, outcome, recs, pend)
        assert outcome.pending == {"cpu": [n for n in range(first, last + 1) if n % 3 == 0]}
        assert work.stored_outcome(storage, job, first, last) == outcome
    storage.put_json(keys.job_manifest(job), manifest)
    assert (
        len(storage.list_keys(keys.work(job, "ranges"))) == 2
    )  # one object per range, not per page
    assert work.pending_page(storage, job, 6).number == 6
    with pytest.raises(KeyError):
        work.pending_page(storage, job, 5)  # accepted: nothing pending

    def found() -> list[int | None]:  # in page order, None for a page not recorded yet
        return [r and r.number for _, r in work.iter_records(storage, job, manifest)]

    assert found() == [1, 2, None, 4, 5, None, 7]  # pages 3 and 6 wait for OCR
    storage.put_json(
        keys.page(job, 3), _record(3).model_dump(mode="json")
    )  # the OCR stage finished page 3
    assert found() == [1, 2, 3, 4, 5, None, 7]
    # the watchdog asks the same objects which pages still need their queue
    spec = JobSpec(
        job_id=job,
        source="/in.pdf",
        filename="in.pdf",
        storage=tmp_path.as_uri(),
        artifact_prefix="out",
    )
    assert watchdog.missing_pages(spec, {"pages": "7"}, Settings()) == {"cpu": [6]}
    storage.delete_prefix(work.key(job, 5, 7))  # a range not written yet: all its pages missing
    assert found() == [1, 2, 3, 4, None, None, None]
    # pages no range covers (a manifest without ranges, or past the last one) come one object each
    assert [
        n for n, _ in work.iter_records(storage, job, {"page_count": 9, "ranges": [[1, 4]]})
    ] == list(range(1, 10))
    assert [r and r.number for _, r in work.iter_records(storage, job, {"page_count": 4})] == [
        None,
        None,
        3,
        None,
    ]


def test_ocr_off_quarantines_inside_the_range(tmp_path: Path) -> None:
    outcome, recs, pend = ranges.decide(
        [{"number": 1}],
        1,
        1,
        ocr="off",
        judge=lambda p: PendingPage(number=1, queue="cpu"),
        unread=lambda p: _record(p.number),
    )
    assert outcome.pending == {} and not pend and [r.number for r in recs] == [1]


def test_outcomes_merge_in_page_order() -> None:
    a = work.RangeOutcome(51, 100, 40, {"cpu": [60, 70]})
    b = work.RangeOutcome(1, 50, 49, {"cpu": [7], "gpu": [9]})
    assert ranges.merge([a, work.RangeOutcome.from_dict(b.as_dict())]) == (
        89,
        {"cpu": [7, 60, 70], "gpu": [9]},
    )


def test_the_pages_with_the_most_image_bytes_climb_first() -> None:
    """A dense scan takes Tesseract longest: it goes out first, so it does not run alone at the end."""
    pages = [
        {"number": n, "image_bytes": size}
        for n, size in ((1, 85_000), (2, 374_000), (3, 8_000), (4, 323_000), (5, 0), (6, 120_000))
    ]
    queues = {1: "cpu", 2: "cpu", 3: "cpu", 4: "gpu", 5: "cpu", 6: "gpu"}
    outcome, recs, pend = ranges.decide(
        pages,
        1,
        6,
        ocr="auto",
        judge=lambda p: PendingPage(number=p["number"], queue=queues[p["number"]]),
        unread=lambda p: _record(p.number),
    )
    assert outcome.pending == {"cpu": [2, 1, 3, 5], "gpu": [4, 6]}
    assert [p.number for p in pend] == [1, 2, 3, 4, 5, 6] and not recs  # stored in page order
