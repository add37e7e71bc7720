"""The gate's detectors: one list, typed evidence, each detector gives only the codes it declares."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pagefleet.routing.arabic import arabic_signals
from pagefleet.routing.detectors import DETECTORS, tables
from pagefleet.routing.evidence import Evidence, GateInput, GateThresholds, GlyphFacts, TableFacts
from pagefleet.routing.visual_order import page_order
from pagefleet.routing.quality import assess_tables
from pagefleet.routing.scripts import script_stats

SAMPLES = [
    GateInput("רוב ההרפתקאות שתועדו בספר זה באמת התרחשו", "text_layer"),
    GateInput(
        "םולש ךלמ", "text_layer", glyphs=GlyphFacts(shared_position_runs=2, image_coverage=0.9)
    ),
    GateInput(
        "ﺍﻟﺴﻼﻡ ﻋﻠﻴﻜﻢ \ufffd ‰ÎÂÓÎ \x07",
        "ocr",
        expected_script="he",
        confidence=12.0,
        missing_lines=9,
        reference_text="something else entirely",
    ),
    GateInput("one two " * 40, "ocr", confidence=95.0),
]


def _evidence(gi: GateInput) -> Evidence:
    stats = script_stats(gi.text)
    order = page_order(gi.text, gi.glyphs.line_geometry, from_ocr=gi.origin == "ocr")
    return Evidence(
        gi, stats, arabic_signals(gi.text), stats.letters + stats.digits, order, GateThresholds()
    )


def test_each_detector_reads_one_kind_of_evidence_and_codes_are_unique() -> None:
    assert all((d.page is None) != (d.tables is None) for d in DETECTORS)
    codes = [c for d in DETECTORS for c in d.codes]
    assert len(codes) == len(set(codes))
    assert len({d.name for d in DETECTORS}) == len(DETECTORS)


def test_detectors_give_only_the_codes_they_declare() -> None:
    given = set()
    for gi in SAMPLES:
        evidence = _evidence(gi)
        for detector in DETECTORS:
            if detector.page is not None:
                found = detector.page(evidence)
                assert set(found.reasons + found.warnings) <= set(detector.codes), detector.name
                given |= set(found.reasons)
    assert {"broken_tounicode", "low_confidence", "engine_disagreement", "repetition_loop"} <= given


def test_every_reason_is_in_the_gates_table() -> None:
    table = (
        Path(__file__).resolve().parents[2] / "pagefleet" / "routing" / "quality.py"
    ).read_text(encoding="utf-8")
    reasons = {
        "too_little_text",
        "broken_tounicode",
        "table_unrecovered",
        "low_confidence",
        "engine_disagreement",
    }
    assert all(code in table for code in reasons)


def test_the_table_detector_fails_closed() -> None:
    agree = TableFacts(tables=2, worst=(0.9, 0.95))
    assert assess_tables(agree).reasons == [] and assess_tables(agree).metrics["tables"] == 2.0
    assert assess_tables(replace(agree, worst=(0.9, 0.5))).reasons == ["table_unrecovered"]
    suspected = TableFacts(aligned_rows=4)
    assert assess_tables(suspected).warnings == ["table_suspected"]
    both = tables(
        TableFacts(tables=1, worst=(0.1, 0.1), aligned_rows=4, layout_rows=3), GateThresholds()
    )
    assert both.reasons == ["table_unrecovered"]


def test_glyph_facts_read_a_malformed_layer_as_no_evidence() -> None:
    facts = GlyphFacts.from_layer(
        {
            "image_coverage": None,
            "shared_position_runs": "2",
            "glyph_clusters": "x",
            "glyph_rows": 1,
            "line_order_unresolved": 3,
        }
    )
    assert facts == GlyphFacts(line_order_unresolved=3)
