"""`--structured-recovery wse`: the recoverer registered in pagefleet.workers.ladder.recovery, end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_structure_extraction import _pages, _record
from pagefleet.workers.ladder import recovery, structure
from pagefleet.workers.ladder.structure import document_layout
from pagefleet.workers.settings import Options


def test_wse_is_a_structured_recovery_option():
    assert "wse" in recovery.names()
    assert Options(structured_recovery="wse").structured_recovery == "wse"


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, first_row",
    [
        ("he_report_tables", ["סעיף", "2023", "2024", "שינוי"]),
        ("ar_report_tables", None),
    ],
)
def test_wse_recovery_gives_logical_tables_that_pass_the_check(
    structure_dir: Path, name, first_row
):
    pdf = structure_dir / f"{name}.pdf"
    pages = _pages(pdf)
    raw = recovery.wse_tables(str(pdf), 1, 120.0)
    assert raw and all(t["bbox"] for t in raw)
    x0, y0, x1, y1 = raw[0]["bbox"]
    assert 0 < x0 < x1 < 595 and 0 < y0 < y1 < 842
    recovered = structure.recover_page(
        "wse", str(pdf), _record(pages[0]), pages[0], document_layout(pages)
    )
    assert recovered is not None and recovered.metrics["table_precision"] >= 0.85
    table = next(b for b in recovered.blocks if b["type"] == "table")["table"]
    if first_row:
        assert table["rows"][0] == first_row
