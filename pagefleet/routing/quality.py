"""The quality gate: detection before any cleanup (seed 001, extended to Arabic).

Every signal is a stable code. `reasons` reject a candidate; `warnings` accept it and tell the
reader what the repair stage will fix. One reason is *repairable* — `visual_order_rtl` on a
text-layer candidate: the caller reverses the flagged lines and gates the result again.

    reason                      signal
    no_text                     nothing readable (image-only page, or an engine read nothing)
    too_little_text             fewer readable characters than the minimum
    glyph_soup                  most non-space characters are neither letters nor digits
    control_chars               C0/C1 control characters inside the text
    replacement_chars           U+FFFD outside Arabic words (unmapped glyphs)
    private_use_chars           Private Use glyphs that no Symbol-font table explains
    latin1_mojibake             legacy 8-bit fonts decoded as Latin-1/cp1252 (‰ÎÂÓÎ)
    utf8_mojibake               UTF-8 read as cp1252 (×©×œ, Ã©)
    unexpected_script_letters   CJK / exotic letters (e.g. CJK garbage holding Hebrew code points)
    hebrew_letter_soup          Hebrew final forms in mid-word: neither logical nor visual order
    broken_tounicode            one glyph mapped to a whole word (letters sharing one position)
    foreign_letters_in_words    Latin-Extended/IPA/Greek/PUA letters inside Arabic words
    mixed_script_words          words mixing Hebrew, Arabic, CJK, Greek or Cyrillic letters (a VLM
                                writing Arabic letters into Hebrew words, dots.ocr #225)
    letter_fragmentation        runs of single-letter Arabic "words"
    visual_order_rtl            RTL lines stored in visual order (repairable on a text layer)
    line_order_unresolved       a row read from its glyphs reads both ways and Poppler's words did
                                not say which (pagefleet.workers.ladder.referee): the page climbs
    text_below_visible          an image covers the page but the text layer holds almost nothing
    expected_script_low         OCR output barely holds the script the page was routed as
    low_confidence              OCR mean word confidence below the floor
    text_missing                OCR left text-like ink unread (lines no recognised word covers): more
                                than 3 % of the page's lines; fewer is a warning of that name
    repetition_loop             a VLM/OCR repetition loop
    engine_disagreement         two engines read the page and agree on < 85% of words
    table_unrecovered           (tables, measured by pagefleet.workers.ladder.tablecheck) a table the page holds
                                could not be recovered, corroborated by Poppler; or a recovered table
                                disagrees with Poppler's words (precision or recall < 85%)

Each reason comes from one detector of `pagefleet.routing.detectors.DETECTORS`; `assess` runs the page
detectors on a candidate, `assess_tables` the table detectors on a page's table facts.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pagefleet.routing.arabic import arabic_signals, fold_presentation_forms, lam_alef_positions
from pagefleet.routing.charclass import F_CONTROL, F_PRESENTATION, F_PRIVATE_USE, features
from pagefleet.routing.detectors import DETECTORS
from pagefleet.routing.evidence import (
    NO_GLYPHS,
    Evidence,
    Finding,
    GateInput,
    GateThresholds,
    TableFacts,
)
from pagefleet.routing.lam import lam_violations
from pagefleet.routing.visual_order import PageOrder, page_order
from pagefleet.routing.scripts import script_stats

REPAIRABLE = frozenset({"visual_order_rtl"})

_ANY_PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")
_PRESENTATION_FORM = re.compile("[\ufb50-\ufdff\ufe70-\ufeff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")  # Cc but tab, newline, form feed, return


@dataclass
class Verdict:
    ok: bool
    reasons: list[str]
    warnings: list[str]
    metrics: dict[str, float]
    order: PageOrder | None = None
    glyph_clusters: list[list[int]] | None = None  # text-layer spans from one glyph, for repair
    run_orders: list[list[list[int]]] | None = None  # per line, text-layer spans in reading order
    gap_repairs: list[list[Any]] | None = (
        None  # word-gap edits the glyphs prove ([start, end, new, kind])
    )
    glyph_rows: bool = False  # the text layer's RTL lines are rows read from the glyphs
    row_directions: list[int] | None = (
        None  # per line, the direction its row was read in (1, 0, -1)
    )

    @property
    def repairable(self) -> bool:
        return bool(self.reasons) and set(self.reasons) <= REPAIRABLE


def assess(gi: GateInput, t: GateThresholds = GateThresholds()) -> Verdict:
    """Run every page detector on one candidate, in `DETECTORS` order. Nothing here changes the text."""
    text = gi.text
    stats = script_stats(text)
    readable = stats.letters + stats.digits
    metrics: dict[str, float] = {
        "readable": readable,
        "letters": stats.letters,
        "non_space": stats.non_space,
    }
    if readable == 0 and stats.non_space == 0:
        return Verdict(False, ["no_text"], [], metrics)
    order = page_order(text, gi.glyphs.line_geometry, from_ocr=gi.origin == "ocr")
    evidence = Evidence(gi, stats, arabic_signals(text), readable, order, t)
    reasons: list[str] = []
    warnings: list[str] = []
    for detector in DETECTORS:
        if detector.page is not None:
            found = detector.page(evidence)
            reasons += found.reasons
            warnings += found.warnings
            metrics.update(found.metrics)
    glyphs = gi.glyphs if gi.origin != "ocr" else NO_GLYPHS
    return Verdict(
        not reasons,
        _dedupe(reasons),
        _dedupe(warnings),
        metrics,
        order,
        glyph_clusters=glyphs.glyph_clusters,
        run_orders=glyphs.run_orders,
        gap_repairs=glyphs.gap_repairs,
        glyph_rows=glyphs.glyph_rows,
        row_directions=glyphs.row_directions,
    )


def assess_tables(facts: TableFacts, t: GateThresholds = GateThresholds()) -> Finding:
    """Run every table detector on a page's table facts."""
    verdict = Finding()
    for detector in DETECTORS:
        if detector.tables is not None:
            found = detector.tables(facts, t)
            verdict.reasons += found.reasons
            verdict.warnings += found.warnings
            verdict.metrics.update(found.metrics)
    verdict.reasons = _dedupe(verdict.reasons)
    return verdict


def canonical_violations(text: str) -> list[str]:
    """What must never reach canonical output, checked on the repaired text of an accepted page."""
    found = []
    present = features(text)
    if "\ufffd" in text:
        found.append("replacement_chars")
    if present & F_PRIVATE_USE and _ANY_PRIVATE_USE.search(text):
        found.append("private_use_chars")
    shaped = bool(present & F_PRESENTATION) and _PRESENTATION_FORM.search(text) is not None
    if shaped:
        found.append("presentation_forms")
    folded = fold_presentation_forms(text) if shaped else text
    if "\u0627" in folded and lam_alef_positions(
        folded
    ):  # arabic_signals' decomposed_lam_alef, alone
        found.append("decomposed_lam_alef")
    if present & F_CONTROL and _CONTROL.search(text):
        found.append("control_chars")
    return found + lam_violations(text)


def _dedupe(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))
