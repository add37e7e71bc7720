"""The quality gate's defect detectors, registered in one list: `DETECTORS`.

A detector is one function over typed evidence (`pagefleet.routing.evidence`) that returns a `Finding`:
the reasons that refuse the candidate, the warnings that accept it and say what repair will fix,
and the metrics it measured. It reads one kind of evidence, named by the field it fills on its
`Detector` entry:

    page     `Evidence`: the candidate text, its origin, the glyph facts of a text layer
             (`GlyphFacts`), OCR confidence, a second reading, and the statistics every page
             detector shares (computed once per candidate by `pagefleet.routing.quality.assess`)
    tables   `TableFacts`: how the page's tables agree with Poppler's words (measured by
             `pagefleet.workers.ladder.tablecheck`, judged by `pagefleet.routing.quality.assess_tables`)

Adding a detector is one function here (or in a module of its own that this one imports), one
`Detector` entry in `DETECTORS` with the codes it gives, its line in the reason table of
`pagefleet.routing.quality`, and its test. A detector needs a fact nobody measures yet: add a typed field
to `GlyphFacts` (filled from the sandbox child's page in `GlyphFacts.from_layer`) or to
`TableFacts`. Detectors run in the list's order, which is the order of a verdict's reasons.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from pagefleet.routing.charclass import (
    F_ARABIC,
    F_BIDI,
    F_CJK,
    F_CYRILLIC,
    F_GREEK,
    F_HEBREW,
    F_MOJIBAKE,
    FAMILY_TABLE,
    features,
)
from pagefleet.routing.evidence import Evidence, Finding, GateThresholds, TableFacts
from pagefleet.routing.lam import lam_signals
from pagefleet.routing.normalize import SYMBOL_PUA_MAP

_UTF8_MOJIBAKE = re.compile(
    "[ÃÂ×ØÙÚÛ][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc\u2013-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]"
)
_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r"[^\s\-\u05be/.,;:!?()\[\]{}\"'״׳«»]+")
_BIDI_CONTROL = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_PRIVATE_USE = re.compile(
    "[^\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]+"
)  # all but Private Use
_SYMBOL_PUA_DELETE = dict.fromkeys(
    map(ord, SYMBOL_PUA_MAP)
)  # str.translate: drop the explained glyphs
_FAMILIES = (F_HEBREW, F_ARABIC, F_GREEK, F_CYRILLIC, F_CJK)


def readable_text(ev: Evidence) -> Finding:
    stats, t = ev.stats, ev.thresholds
    found = Finding()
    if ev.readable < t.min_readable:
        found.reasons.append("too_little_text")
    if stats.non_space >= 3 and ev.readable / stats.non_space < t.min_readable_share:
        found.reasons.append("glyph_soup")
    return found


def characters(ev: Evidence) -> Finding:
    """Counts come from the page's one statistics pass (`script_stats`), not from per-character loops."""
    text, stats, t = ev.gate.text, ev.stats, ev.thresholds
    found = Finding()
    controls, pua, moji = stats.controls, stats.pua, stats.mojibake
    unmapped_pua = len(_PRIVATE_USE.sub("", text.translate(_SYMBOL_PUA_DELETE))) if pua else 0
    letters = stats.all_letters
    unexpected = letters - stats.known_letters + pua
    latin, rtl = stats.latin, stats.he + stats.ar
    found.metrics.update(
        control_chars=controls, private_use=pua, unexpected_letters=unexpected, mojibake_chars=moji
    )
    if controls:
        found.reasons.append("control_chars")
    if unmapped_pua:
        found.reasons.append("private_use_chars")
    elif pua:
        found.warnings.append("symbol_glyphs")
    if unexpected >= 3 and unexpected / max(letters + pua, 1) > t.max_unexpected_share:
        found.reasons.append("unexpected_script_letters")
    if moji >= 5 and moji / max(moji + latin + rtl, 1) >= t.mojibake_share:
        found.reasons.append("latin1_mojibake")
    present = features(text)
    if present & F_MOJIBAKE and len(_UTF8_MOJIBAKE.findall(text)) >= 3:
        found.reasons.append("utf8_mojibake")
    if present & F_BIDI and _BIDI_CONTROL.search(text):
        found.warnings.append("bidi_controls")
    return found


def arabic(ev: Evidence) -> Finding:
    sig, found = ev.arabic, Finding()
    if not sig.letters:
        return found
    found.metrics.update(
        arabic_presentation_forms=sig.presentation_forms,
        decomposed_lam_alef=sig.decomposed_lam_alef,
        tatweel=sig.tatweel_chars,
        kashida_fffd=sig.kashida_fffd_chars,
        foreign_in_words=sig.foreign_letters_in_words,
        fragments=sig.isolated_letter_fragments,
    )
    if sig.foreign_letters_in_words >= 2 or (sig.foreign_letters_in_words and sig.words < 20):
        found.reasons.append("foreign_letters_in_words")
    if sig.isolated_letter_fragments >= ev.thresholds.fragment_runs:
        found.reasons.append("letter_fragmentation")
    flags = (
        (sig.presentation_forms, "presentation_forms"),
        (sig.decomposed_lam_alef, "decomposed_lam_alef"),
        (sig.ligature_order_suspects, "ligature_order"),
        (sig.tatweel_runs, "tatweel"),
        (sig.kashida_fffd, "kashida_unmapped"),
    )
    found.warnings += [code for flag, code in flags if flag]
    return found


def replacement_chars(ev: Evidence) -> Finding:
    """U+FFFD anywhere but as an unmapped kashida glued to Arabic letters (repaired later)."""
    kashida = ev.arabic.kashida_fffd_chars if ev.arabic.letters else 0
    return Finding(["replacement_chars"] if ev.gate.text.count("\ufffd") > kashida else [])


def mixed_script_words(text: str) -> tuple[int, int]:
    """(words mixing two of Hebrew/Arabic/Greek/Cyrillic/CJK letters, words). One translation
    keeps, per token, only its letters' family codes (Latin mixes legitimately and is dropped)."""
    return _mixed_words(text), len(_TOKEN.findall(text))


def _mixed_words(text: str) -> int:
    found = features(text)
    if sum(1 for family in _FAMILIES if found & family) < 2:
        return 0  # one family (or none) on the whole page: no word can mix two
    families = FAMILY_TABLE.apply(text).split()
    return sum(1 for token in families if len(token) > 1 and len(set(token)) > 1)


def mixed_scripts(ev: Evidence) -> Finding:
    text = ev.gate.text
    mixed = _mixed_words(text)
    found = Finding(metrics={"mixed_script_words": mixed})
    if mixed >= 2 or (
        mixed and mixed / max(len(_TOKEN.findall(text)), 1) > 0.02
    ):  # words counted only then
        found.reasons.append("mixed_script_words")
    return found


def reading_direction(ev: Evidence) -> Finding:
    """Visual-order RTL lines and Hebrew letter soup, from the shared run-order pass."""
    order, t = ev.order, ev.thresholds
    found = Finding(
        metrics={
            "visual_votes": order.page.visual_votes,
            "logical_votes": order.page.logical_votes,
            "visual_lines": order.visual_lines,
        }
    )
    hebrew_words = max(order.page.hebrew_words, 1)
    if order.page.final_mid_word >= 2 and order.page.final_mid_word / hebrew_words >= t.soup_share:
        found.reasons.append("hebrew_letter_soup")
    if order.visual_lines:
        found.reasons.append("visual_order_rtl")
    elif ev.gate.origin == "ocr" and order.page.letters_say_visual:
        found.warnings.append("ocr_visual_order_suspect")
    return found


def glyph_defects(ev: Evidence) -> Finding:
    """What the glyphs of a text layer show (an OCR reading has none)."""
    glyphs, t, found = ev.gate.glyphs, ev.thresholds, Finding()
    if ev.gate.origin == "ocr":
        return found
    if glyphs.shared_position_runs >= 1:
        found.reasons.append("broken_tounicode")
    if glyphs.image_coverage >= t.visible_coverage and ev.readable < t.visible_min_readable:
        found.reasons.append("text_below_visible")
    if glyphs.line_order_unresolved > 0:
        found.reasons.append("line_order_unresolved")
    return found


def repetition_loop(
    text: str, min_tokens: int = 40, min_repeats: int = 8, max_period: int = 16
) -> bool:
    """A unit of 1..max_period words repeated back to back, covering >= min_tokens words."""
    tokens = text.split()
    n = len(tokens)
    if n < min_tokens:
        return False
    for period in range(1, max_period + 1):
        run = 0
        for i in range(period, n):
            run = run + 1 if tokens[i] == tokens[i - period] else 0
            repeats = run // period + 1
            if run + period >= min_tokens and repeats >= min_repeats:
                return True
    return False


def ocr_reading(ev: Evidence) -> Finding:
    """An OCR reading's own evidence: confidence, unread lines, loops, the routed script's share."""
    gi, t, found = ev.gate, ev.thresholds, Finding()
    if gi.origin != "ocr":
        return found
    if gi.confidence is not None:
        found.metrics["ocr_confidence"] = round(gi.confidence, 2)
        if gi.confidence < t.min_ocr_confidence:
            found.reasons.append("low_confidence")
    if gi.missing_lines:
        found.metrics["missing_lines"] = gi.missing_lines
        read = sum(1 for line in gi.text.splitlines() if line.strip())
        if gi.missing_lines > t.max_missing_share * (read + gi.missing_lines):
            found.reasons.append("text_missing")
        else:
            found.warnings.append("text_missing")  # a few unread lines: kept, and said
    if repetition_loop(gi.text, t.loop_min_tokens, t.loop_min_repeats):
        found.reasons.append("repetition_loop")
    if gi.expected_script in ("he", "ar", "latin") and ev.stats.scored >= 10:
        share = ev.stats.share(gi.expected_script)
        found.metrics["expected_share"] = round(share, 4)
        if share < t.min_expected_share:
            found.reasons.append("expected_script_low")
    return found


def _words(text: str) -> Counter[str]:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return Counter(w for w in _WORD.findall(folded) if not w.isdigit() or len(w) > 1)


def word_agreement(candidate: str, reference: str) -> tuple[float, float]:
    """Word-multiset precision and recall of `candidate` against `reference` (seed 001's 85% rule)."""
    a, b = _words(candidate), _words(reference)
    common = sum((a & b).values())
    precision = common / sum(a.values()) if a else 0.0
    recall = common / sum(b.values()) if b else 0.0
    return round(precision, 4), round(recall, 4)


def engine_agreement(ev: Evidence) -> Finding:
    found = Finding()
    if ev.gate.reference_text is not None:
        precision, recall = word_agreement(ev.gate.text, ev.gate.reference_text)
        found.metrics.update(agreement_precision=precision, agreement_recall=recall)
        if precision < ev.thresholds.agreement or recall < ev.thresholds.agreement:
            found.reasons.append("engine_disagreement")
    return found


def short_text(ev: Evidence) -> Finding:
    return Finding(warnings=["short_text"] if ev.readable < 20 else [])


def lam_ligatures(ev: Evidence) -> Finding:
    """Swapped lam ligatures (`pagefleet.routing.lam`): clusters the glyph geometry proves are repaired;
    what only the words show stays, and the canonical invariant refuses it after repair."""
    clusters = ev.gate.glyphs.glyph_clusters if ev.gate.origin != "ocr" else None
    sig = lam_signals(ev.gate.text, clusters)
    if not sig.arabic_words:
        return Finding()
    warnings = (["swapped_lam_ligature"] if sig.swapped else []) + (
        ["lone_al"] if sig.lone_al else []
    )
    return Finding(
        warnings=warnings,
        metrics={"swapped_lam_clusters": sig.swapped_clusters, "lone_al": sig.lone_al},
    )


def tables(facts: TableFacts, t: GateThresholds) -> Finding:
    """Tables fail closed (seed 001): a recovered table that disagrees with Poppler's words, or
    column-aligned rows no table explains that `pdftotext -layout` corroborates."""
    found = Finding()
    if facts.tables:
        precision, recall = facts.worst
        found.metrics.update(
            table_precision=precision, table_recall=recall, tables=float(facts.tables)
        )
        if precision < t.table_agreement or recall < t.table_agreement:
            found.reasons.append("table_unrecovered")
    if facts.aligned_rows:
        found.metrics.update(
            aligned_rows=float(facts.aligned_rows), layout_rows=float(facts.layout_rows)
        )
        if facts.layout_rows:
            found.reasons.append("table_unrecovered")
        else:
            found.warnings.append("table_suspected")
    found.reasons = sorted(set(found.reasons))
    return found


@dataclass(frozen=True)
class Detector:
    """One defect check: `page` reads a candidate's `Evidence`, `tables` a page's `TableFacts`
    (exactly one of them is set); `codes` are the reasons and warnings it may give."""

    name: str
    codes: tuple[str, ...]
    page: Callable[[Evidence], Finding] | None = None
    tables: Callable[[TableFacts, GateThresholds], Finding] | None = None


DETECTORS: tuple[Detector, ...] = (
    Detector("readable_text", ("too_little_text", "glyph_soup"), page=readable_text),
    Detector(
        "characters",
        (
            "control_chars",
            "private_use_chars",
            "symbol_glyphs",
            "unexpected_script_letters",
            "latin1_mojibake",
            "utf8_mojibake",
            "bidi_controls",
        ),
        page=characters,
    ),
    Detector(
        "arabic",
        (
            "foreign_letters_in_words",
            "letter_fragmentation",
            "presentation_forms",
            "decomposed_lam_alef",
            "ligature_order",
            "tatweel",
            "kashida_unmapped",
        ),
        page=arabic,
    ),
    Detector("replacement_chars", ("replacement_chars",), page=replacement_chars),
    Detector("mixed_scripts", ("mixed_script_words",), page=mixed_scripts),
    Detector(
        "reading_direction",
        ("hebrew_letter_soup", "visual_order_rtl", "ocr_visual_order_suspect"),
        page=reading_direction,
    ),
    Detector(
        "glyph_defects",
        ("broken_tounicode", "text_below_visible", "line_order_unresolved"),
        page=glyph_defects,
    ),
    Detector(
        "ocr_reading",
        ("low_confidence", "text_missing", "repetition_loop", "expected_script_low"),
        page=ocr_reading,
    ),
    Detector("engine_agreement", ("engine_disagreement",), page=engine_agreement),
    Detector("short_text", ("short_text",), page=short_text),
    Detector("lam_ligatures", ("swapped_lam_ligature", "lone_al"), page=lam_ligatures),
    Detector("tables", ("table_unrecovered", "table_suspected"), tables=tables),
)
