"""bench/page_budget.py: every stage of a page's way through the fleet is run for real (MuPDF, the
sandbox's encoder, the gate, the range store, the collector) and reported, and the closing ratio
is the limit over the stages' sum. No timing is asserted."""

from __future__ import annotations

import re

import pytest

from bench import page_budget
from tests.conftest import CORPUS


def test_the_report_adds_the_stages_and_closes_with_the_limit_over_their_sum() -> None:
    seconds = {
        "extraction": 1.2,
        "hand-over": 0.1,
        "gate": 0.5,
        "records": 0.05,
        "collection": 0.15,
    }
    parts = {
        "extraction": [("MuPDF text pages", 1000, 0.9)],
        "gate": [("Arabic (500 pages)", 500, 0.4), ("other (500 pages)", 500, 0.1)],
    }
    lines = page_budget.report(1000, 1.0, seconds, parts)
    figures = {line[:26].strip(): line[26:].split() for line in lines[1:-1]}
    assert figures["limit: get_text"] == ["1.000"]
    assert figures["extraction"] == ["1.200", "60%"] and figures["gate"] == ["0.500", "25%"]
    assert figures["MuPDF text pages"] == ["0.900"]
    assert (
        lines.index("  MuPDF text pages".ljust(26) + "    0.900")
        == lines.index(next(x for x in lines if x.startswith("extraction"))) + 1
    )
    assert figures["Arabic (500 pages)"] == ["0.800"] and figures["other (500 pages)"] == ["0.200"]
    assert figures["the stages"] == ["2.000"]
    # 0.8 of a limit of 1.000 ms a page allows 1.250 in all: 0.050 past the extraction's 1.200
    assert figures["room past extraction, 0.8"] == [
        "0.050",
        "(the",
        "stages",
        "after",
        "it:",
        "0.800;",
        "free,",
        "they",
        "would",
        "leave",
        "0.83",
        "of",
        "the",
        "limit)",
    ]
    assert lines[-1] == "budget_ratio=0.50"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not beside the checkout")
def test_a_small_document_goes_through_every_stage(capsys: pytest.CaptureFixture[str]) -> None:
    assert page_budget.main([str(CORPUS), "--pages", "60", "--repeats", "1"]) == 0  # several ranges
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"budget_ratio=\d+\.\d\d", out[-1])
    figures = {line[:26].strip(): float(line[26:].split()[0]) for line in out[2:-1]}
    for stage in ("limit: get_text", *page_budget.STAGES, "MuPDF text pages", "the stages"):
        assert figures[stage] > 0, stage
    assert abs(figures["the stages"] - sum(figures[s] for s in page_budget.STAGES)) < 0.01
    room = figures[
        "room past extraction, 0.8"
    ]  # may be negative on a slow run: a ms figure either way
    assert abs(room - (figures["limit: get_text"] / 0.8 - figures["extraction"])) < 0.01
    assert any(
        name.startswith(("Arabic", "Hebrew", "other")) for name in figures
    )  # the gate by script
    assert (
        figures["detectors (assess)"] > 0
    )  # the gate's detectors alone, and what the rest of it costs
    assert (
        abs(figures["detectors (assess)"] + figures["repairs and record"] - figures["gate"]) < 0.01
    )
    assert figures["held (one range)"] > 0  # the collection from range objects, and from memory
