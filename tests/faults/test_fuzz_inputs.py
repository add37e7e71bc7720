"""A small fuzz set (tests/support/fuzz_inputs.py runs ≥ 500): mutated fixture PDFs through one
`pagefleet run --ocr off`; every input ends in artifacts or a typed error.json, in bounded time."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fuzz_inputs import MUTATIONS, mutants, run_fleet, verdicts
from pagefleet.workers.cli.exitcodes import ExitCode

pytestmark = [pytest.mark.faults, pytest.mark.integration]


def test_mutated_inputs_end_typed(fixtures_dir: Path, tmp_path: Path) -> None:
    sources = sorted(fixtures_dir.glob("*.pdf"))
    made = mutants(sources, 2 * len(MUTATIONS), seed=11, folder=tmp_path / "in")
    rc, seconds = run_fleet([m[0] for m in made], tmp_path / "out", timeout_s=600, workers=1)
    tally = verdicts(made, tmp_path / "out")
    assert set(tally) <= {"artifacts"} | {
        k for k in tally if k.startswith("error:") and k != "error:aborted"
    }, tally
    # every document ended as a document does: accepted, to review, or a typed input error
    documents = (
        ExitCode.OK,
        ExitCode.REVIEW_NEEDED,
        ExitCode.INPUT_ERROR,
        ExitCode.ENCRYPTED_PDF,
        ExitCode.INPUT_TOO_LARGE,
    )
    assert sum(tally.values()) == len(made) and rc in documents, rc
