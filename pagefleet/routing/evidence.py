"""What the quality gate's detectors read, as typed values (`pagefleet.routing.detectors` holds the detectors).

    GateInput      one candidate text: where it came from, what the router expected, the OCR
                   engine's confidence, a second reading, and the glyph facts of a text layer
    GlyphFacts     what the sandbox child measured on the page's glyphs (plain JSON on the wire,
                   checked for its type here, where it enters)
    TableFacts     how the page's tables agree with Poppler's words (measured by
                   pagefleet.workers.ladder.tablecheck, which does the I/O)
    Evidence       a candidate with what every page detector shares (script statistics, Arabic
                   signals, run order), computed once
    Finding        what one detector says: reasons, warnings, metrics

Pure data, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pagefleet.routing.arabic import ArabicSignals
from pagefleet.routing.visual_order import PageOrder
from pagefleet.routing.scripts import ScriptStats

Origin = Literal["text_layer", "fallback_text", "ocr"]


@dataclass(frozen=True)
class GateThresholds:
    min_readable: int = 3
    min_readable_share: float = 0.5
    max_unexpected_share: float = 0.1
    mojibake_share: float = 0.3
    soup_share: float = 0.05
    min_expected_share: float = 0.3
    # calibrated on bench/eval_ocr.py (`make eval-ocr`, 64 pages): the lowest floor under which
    # every reading with CER > 0.15 falls
    min_ocr_confidence: float = 82.0
    visible_coverage: float = 0.5
    visible_min_readable: int = 40
    fragment_runs: int = 2
    agreement: float = 0.85
    # text_missing refuses a reading whose unread text-like lines are more than this share of the
    # page's lines; fewer (one label in a figure of a 100-line page) leave a warning of that name
    max_missing_share: float = 0.03
    loop_min_tokens: int = 40
    loop_min_repeats: int = 8
    table_agreement: float = 0.85


@dataclass(frozen=True)
class GlyphFacts:
    """The text layer's glyph evidence (none for an OCR reading)."""

    image_coverage: float = 0.0  # share of the page an image covers
    shared_position_runs: int = 0  # letters sharing one position: one glyph mapped to a word
    line_order_unresolved: int = 0  # glyph rows that read both ways, undecided by Poppler
    line_geometry: list[Any] | None = None  # per line [x-increasing, x-decreasing] RTL glyph steps
    glyph_clusters: list[Any] | None = None  # text-layer spans drawn as one glyph
    run_orders: list[Any] | None = None  # per line, text-layer spans in reading order
    gap_repairs: list[Any] | None = (
        None  # word-gap edits the glyphs prove ([start, end, new, kind])
    )
    glyph_rows: bool = False  # the RTL lines are rows read from the glyphs
    row_directions: list[Any] | None = None  # per line, the direction its row was read in

    @classmethod
    def from_layer(cls, layer: Mapping[str, Any]) -> GlyphFacts:
        """The facts of the sandbox child's page dict. It crosses a process boundary: a malformed
        value reads as no evidence (the compiled build would otherwise refuse it with a TypeError)."""
        coverage = layer.get("image_coverage")
        shared = layer.get("shared_position_runs")
        unresolved = layer.get("line_order_unresolved")
        return cls(
            image_coverage=float(coverage) if isinstance(coverage, (int, float)) else 0.0,
            shared_position_runs=shared if isinstance(shared, int) else 0,
            line_order_unresolved=unresolved if isinstance(unresolved, int) else 0,
            line_geometry=_listed(layer, "line_geometry"),
            glyph_clusters=_listed(layer, "glyph_clusters"),
            run_orders=_listed(layer, "run_orders"),
            gap_repairs=_listed(layer, "gap_repairs"),
            glyph_rows=layer.get("glyph_rows") is True,
            row_directions=_listed(layer, "row_directions"),
        )


def _listed(layer: Mapping[str, Any], name: str) -> list[Any] | None:
    value = layer.get(name)
    return value if isinstance(value, list) else None


NO_GLYPHS = GlyphFacts()


@dataclass(frozen=True)
class TableFacts:
    """A page's tables against Poppler: the worst precision and recall over the recovered tables,
    and the column-aligned rows no table explains, with what `pdftotext -layout` saw of them."""

    tables: int = 0
    worst: tuple[float, float] = (1.0, 1.0)  # (precision, recall)
    aligned_rows: int = 0
    layout_rows: int = 0


@dataclass
class GateInput:
    text: str
    origin: Origin
    expected_script: str | None = None
    glyphs: GlyphFacts = NO_GLYPHS
    confidence: float | None = None
    reference_text: str | None = None  # a second engine's reading of the same page
    missing_lines: int = (
        0  # OCR: ink regions no recognised word covers that a re-read could not read
    )


@dataclass(frozen=True)
class Evidence:
    """A candidate and what every page detector shares: one statistics pass, one run-order pass."""

    gate: GateInput
    stats: ScriptStats
    arabic: ArabicSignals
    readable: int
    order: PageOrder
    thresholds: GateThresholds


@dataclass
class Finding:
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
