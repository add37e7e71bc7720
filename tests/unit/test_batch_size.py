"""How a submission of small documents is cut into `pagefleet.split_batch` tasks (`submit.batch_size`)."""

from __future__ import annotations

import pytest

from pagefleet.workers.settings import Settings
from pagefleet.workers.split import submit
from pagefleet.workers.split.submit import batch_size


@pytest.mark.parametrize(
    ("documents", "expected"),
    [
        (1, 16),
        (9, 16),
        (40, 16),
        (128, 16),
        (129, 17),
        (200, 25),
        (256, 32),
        (500, 32),
        (10_000, 32),
    ],
)
def test_big_submissions_get_bigger_batches_up_to_the_maximum(
    documents: int, expected: int
) -> None:
    """Batches of `advanced.split_batch_documents` (16) as long as that makes at most `BATCH_SPREAD`
    (8) of them; a bigger submission's batches grow to make about eight, up to
    `BATCH_MAX_DOCUMENTS` (32)."""
    settings = Settings()
    size = batch_size(documents, settings)
    assert size == expected
    batches = -(-documents // size)
    assert batches >= min(
        -(-documents // 16), submit.BATCH_SPREAD
    )  # never fewer than 16s made, up to 8
    assert settings.advanced.split_batch_documents <= size <= submit.BATCH_MAX_DOCUMENTS


def test_the_sizes_are_constants_and_one_setting_turns_batches_off(monkeypatch) -> None:
    assert batch_size(6, Settings(advanced={"split_batch_documents": 3})) == 3
    assert batch_size(500, Settings(advanced={"split_batch_documents": 1})) == 1
    monkeypatch.setattr(submit, "BATCH_SPREAD", 100)
    assert batch_size(500, Settings()) == 16
    monkeypatch.setattr(submit, "BATCH_MAX_DOCUMENTS", 16)
    monkeypatch.setattr(submit, "BATCH_SPREAD", 8)
    assert batch_size(500, Settings()) == 16


@pytest.mark.parametrize(
    "documents", [1, 2, 5, 6, 9, 16, 17, 40, 100, 129, 200, 256, 500, 1000, 10_000]
)
def test_a_submission_s_batches_cover_it_once_and_taper_at_its_end(documents: int) -> None:
    """`batch_plan`: every document in one batch, no batch above `batch_size`, sizes never growing,
    the last batches halving (none under 3 documents where the tail was cut) — the last batch a
    split worker process takes is short."""
    from pagefleet.workers.split.submit import batch_plan

    settings = Settings()
    plan = batch_plan(documents, settings)
    size = batch_size(documents, settings)
    assert sum(plan) == documents and max(plan) <= size
    assert all(a >= b for a, b in zip(plan, plan[1:]))
    if documents >= 2 * size:
        assert plan[-1] <= plan[0] // 2 and min(plan) >= 3
    assert batch_plan(documents, Settings(advanced={"split_batch_documents": 1})) == [1] * documents
