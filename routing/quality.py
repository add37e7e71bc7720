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
                                not say which (workers.ladder.referee): the page climbs
    text_below_visible          an image covers the page but the text layer holds almost nothing
    expected_script_low         OCR output barely holds the script the page was routed as
    low_confidence              OCR mean word confidence below the floor
    text_missing                OCR left text-like ink unread (lines no recognised word covers): more
                                than 3 % of the page's lines; fewer is a warning of that name
    repetition_loop             a VLM/OCR repetition loop
    engine_disagreement         two engines read the page and agree on < 85% of words
    table_unrecovered           (structure, workers.ladder.tablecheck) a table the page holds could not be
                                recovered, corroborated by Poppler; or a recovered table disagrees
                                with Poppler's words (precision or recall < 85%)

Pure functions, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from routing.arabic import arabic_signals, fold_presentation_forms, lam_alef_positions
from routing.lam import lam_signals, lam_violations
from routing.normalize import SYMBOL_PUA_MAP
from routing.order import PageOrder, page_order
from routing.scripts import ScriptStats, script_stats
from routing.charclass import (
    F_ARABIC, F_BIDI, F_CJK, F_CONTROL, F_CYRILLIC, F_GREEK, F_HEBREW, F_MOJIBAKE, F_PRESENTATION, F_PRIVATE_USE,
    FAMILY_TABLE, features,
)

Origin = Literal["text_layer", "fallback_text", "ocr"]
REPAIRABLE = frozenset({"visual_order_rtl"})

_UTF8_MOJIBAKE = re.compile("[ÃÂ×ØÙÚÛ][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc\u2013-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]")
_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r"[^\s\-\u05be/.,;:!?()\[\]{}\"'״׳«»]+")
_BIDI_CONTROL = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_PRIVATE_USE = re.compile("[^\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]+")  # all but Private Use
_SYMBOL_PUA_DELETE = dict.fromkeys(map(ord, SYMBOL_PUA_MAP))  # str.translate: drop the explained glyphs
_ANY_PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")
_PRESENTATION_FORM = re.compile("[\ufb50-\ufdff\ufe70-\ufeff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")  # Cc but tab, newline, form feed, return


@dataclass(frozen=True)
class GateThresholds:
    min_readable: int = 3
    min_readable_share: float = 0.5
    max_unexpected_share: float = 0.1
    mojibake_share: float = 0.3
    soup_share: float = 0.05
    min_expected_share: float = 0.3
    # calibrated on bench/eval_ocr.py (`make eval-ocr`, 64 pages): the lowest floor under which
    # every reading with CER > 0.15 falls (with the read-first multilingual reading they had 53.8,
    # 60.2 and 81.84; before it 53, 60 and 80.17; issue 12)
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


@dataclass
class GateInput:
    text: str
    origin: Origin
    expected_script: str | None = None
    layer: dict[str, Any] = field(default_factory=dict)  # glyphs, image_coverage, shared_position_runs, line_geometry
    confidence: float | None = None
    reference_text: str | None = None  # a second engine's reading of the same page
    missing_lines: int = 0  # OCR: ink regions no recognised word covers that a re-read could not read


@dataclass
class Verdict:
    ok: bool
    reasons: list[str]
    warnings: list[str]
    metrics: dict[str, float]
    order: PageOrder | None = None
    glyph_clusters: list[list[int]] | None = None  # text-layer spans from one glyph, for repair
    run_orders: list[list[list[int]]] | None = None  # per line, text-layer spans in reading order
    gap_repairs: list[list[Any]] | None = None  # word-gap edits the glyphs prove ([start, end, new, kind])
    glyph_rows: bool = False  # the text layer's RTL lines are rows read from the glyphs
    row_directions: list[int] | None = None  # per line, the direction its row was read in (1, 0, -1)

    @property
    def repairable(self) -> bool:
        return bool(self.reasons) and set(self.reasons) <= REPAIRABLE


def _character_reasons(text: str, stats: ScriptStats, t: GateThresholds,
                       metrics: dict[str, float]) -> tuple[list[str], list[str]]:
    """Counts come from the page's one statistics pass (`script_stats`), not from per-character loops."""
    reasons: list[str] = []
    warnings: list[str] = []
    controls, pua, moji = stats.controls, stats.pua, stats.mojibake
    unmapped_pua = len(_PRIVATE_USE.sub("", text.translate(_SYMBOL_PUA_DELETE))) if pua else 0
    letters = stats.all_letters
    unexpected = letters - stats.known_letters + pua
    latin, rtl = stats.latin, stats.he + stats.ar
    metrics.update(control_chars=controls, private_use=pua, unexpected_letters=unexpected, mojibake_chars=moji)
    if controls:
        reasons.append("control_chars")
    if unmapped_pua:
        reasons.append("private_use_chars")
    elif pua:
        warnings.append("symbol_glyphs")
    if unexpected >= 3 and unexpected / max(letters + pua, 1) > t.max_unexpected_share:
        reasons.append("unexpected_script_letters")
    if moji >= 5 and moji / max(moji + latin + rtl, 1) >= t.mojibake_share:
        reasons.append("latin1_mojibake")
    found = features(text)
    if found & F_MOJIBAKE and len(_UTF8_MOJIBAKE.findall(text)) >= 3:
        reasons.append("utf8_mojibake")
    if found & F_BIDI and _BIDI_CONTROL.search(text):
        warnings.append("bidi_controls")
    return reasons, warnings


def _arabic_reasons(text: str, t: GateThresholds, metrics: dict[str, float]) -> tuple[list[str], list[str]]:
    sig = arabic_signals(text)
    reasons: list[str] = []
    warnings: list[str] = []
    if not sig.letters:
        return reasons, warnings
    metrics.update(
        arabic_presentation_forms=sig.presentation_forms,
        decomposed_lam_alef=sig.decomposed_lam_alef,
        tatweel=sig.tatweel_chars,
        kashida_fffd=sig.kashida_fffd_chars,
        foreign_in_words=sig.foreign_letters_in_words,
        fragments=sig.isolated_letter_fragments,
    )
    if sig.foreign_letters_in_words >= 2 or (sig.foreign_letters_in_words and sig.words < 20):
        reasons.append("foreign_letters_in_words")
    if sig.isolated_letter_fragments >= t.fragment_runs:
        reasons.append("letter_fragmentation")
    if sig.presentation_forms:
        warnings.append("presentation_forms")
    if sig.decomposed_lam_alef:
        warnings.append("decomposed_lam_alef")
    if sig.ligature_order_suspects:
        warnings.append("ligature_order")
    if sig.tatweel_runs:
        warnings.append("tatweel")
    if sig.kashida_fffd:
        warnings.append("kashida_unmapped")
    return reasons, warnings


_FAMILIES = (F_HEBREW, F_ARABIC, F_GREEK, F_CYRILLIC, F_CJK)


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


def _replacement_reason(text: str, kashida_chars: int) -> bool:
    """U+FFFD anywhere but as an unmapped kashida glued to Arabic letters (repaired later)."""
    return text.count("\ufffd") > kashida_chars


def repetition_loop(text: str, min_tokens: int = 40, min_repeats: int = 8, max_period: int = 16) -> bool:
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


def _layer_reasons(gi: GateInput, readable: int, t: GateThresholds) -> list[str]:
    layer = gi.layer
    reasons = []
    if layer.get("shared_position_runs", 0) >= 1:
        reasons.append("broken_tounicode")
    if layer.get("image_coverage", 0.0) >= t.visible_coverage and readable < t.visible_min_readable:
        reasons.append("text_below_visible")
    unresolved = layer.get("line_order_unresolved")
    if isinstance(unresolved, int) and unresolved > 0:
        reasons.append("line_order_unresolved")
    return reasons


def _ocr_reasons(gi: GateInput, stats: Any, t: GateThresholds,
                 metrics: dict[str, float]) -> tuple[list[str], list[str]]:
    reasons: list[str] = []
    warnings: list[str] = []
    if gi.confidence is not None:
        metrics["ocr_confidence"] = round(gi.confidence, 2)
        if gi.confidence < t.min_ocr_confidence:
            reasons.append("low_confidence")
    if gi.missing_lines:
        metrics["missing_lines"] = gi.missing_lines
        read = sum(1 for line in gi.text.splitlines() if line.strip())
        if gi.missing_lines > t.max_missing_share * (read + gi.missing_lines):
            reasons.append("text_missing")
        else:
            warnings.append("text_missing")  # a few unread lines: kept, and said
    if repetition_loop(gi.text, t.loop_min_tokens, t.loop_min_repeats):
        reasons.append("repetition_loop")
    if gi.expected_script in ("he", "ar", "latin") and stats.scored >= 10:
        share = stats.share(gi.expected_script)
        metrics["expected_share"] = round(share, 4)
        if share < t.min_expected_share:
            reasons.append("expected_script_low")
    return reasons, warnings


def assess(gi: GateInput, t: GateThresholds = GateThresholds()) -> Verdict:
    """Run every detector on one candidate. Nothing here changes the text."""
    text = gi.text
    stats = script_stats(text)
    readable = stats.letters + stats.digits
    metrics: dict[str, float] = {"readable": readable, "letters": stats.letters, "non_space": stats.non_space}
    if readable == 0 and stats.non_space == 0:
        return Verdict(False, ["no_text"], [], metrics)
    reasons: list[str] = []
    warnings: list[str] = []
    if readable < t.min_readable:
        reasons.append("too_little_text")
    if stats.non_space >= 3 and readable / stats.non_space < t.min_readable_share:
        reasons.append("glyph_soup")
    char_reasons, char_warnings = _character_reasons(text, stats, t, metrics)
    ar_reasons, ar_warnings = _arabic_reasons(text, t, metrics)
    reasons += char_reasons + ar_reasons
    warnings += char_warnings + ar_warnings
    if _replacement_reason(text, int(metrics.get("kashida_fffd", 0))):
        reasons.append("replacement_chars")
    mixed = _mixed_words(text)
    metrics["mixed_script_words"] = mixed
    if mixed >= 2 or (mixed and mixed / max(len(_TOKEN.findall(text)), 1) > 0.02):  # words counted only then
        reasons.append("mixed_script_words")
    order = page_order(text, gi.layer.get("line_geometry"), from_ocr=gi.origin == "ocr")
    metrics.update(visual_votes=order.page.visual_votes, logical_votes=order.page.logical_votes,
                   visual_lines=order.visual_lines)
    hebrew_words = max(order.page.hebrew_words, 1)
    if order.page.final_mid_word >= 2 and order.page.final_mid_word / hebrew_words >= t.soup_share:
        reasons.append("hebrew_letter_soup")
    if order.visual_lines:
        reasons.append("visual_order_rtl")
    elif gi.origin == "ocr" and order.page.letters_say_visual:
        warnings.append("ocr_visual_order_suspect")
    if gi.origin != "ocr":
        reasons += _layer_reasons(gi, readable, t)
    else:
        ocr_reasons, ocr_warnings = _ocr_reasons(gi, stats, t, metrics)
        reasons += ocr_reasons
        warnings += ocr_warnings
    if gi.reference_text is not None:
        precision, recall = word_agreement(text, gi.reference_text)
        metrics.update(agreement_precision=precision, agreement_recall=recall)
        if precision < t.agreement or recall < t.agreement:
            reasons.append("engine_disagreement")
    if readable < 20:
        warnings.append("short_text")
    warnings += _lam_warnings(gi, metrics)
    geometry = gi.layer if gi.origin != "ocr" else {}
    return Verdict(not reasons, _dedupe(reasons), _dedupe(warnings), metrics, order,
                   glyph_clusters=_listed(geometry, "glyph_clusters"), run_orders=_listed(geometry, "run_orders"),
                   gap_repairs=_listed(geometry, "gap_repairs"), glyph_rows=geometry.get("glyph_rows") is True,
                   row_directions=_listed(geometry, "row_directions"))


def _listed(layer: dict[str, Any], name: str) -> list[Any] | None:
    """A span list of the text layer's evidence, or None where the layer holds something else
    (the evidence crosses a process boundary: a malformed value reads as no evidence, and the
    compiled build would otherwise refuse it with a TypeError)."""
    value = layer.get(name)
    return value if isinstance(value, list) else None


def _lam_warnings(gi: GateInput, metrics: dict[str, float]) -> list[str]:
    """Swapped lam ligatures (`routing.lam`): clusters the glyph geometry proves are repaired;
    what only the words show stays, and the canonical invariant refuses it after repair."""
    sig = lam_signals(gi.text, _listed(gi.layer, "glyph_clusters") if gi.origin != "ocr" else None)
    if not sig.arabic_words:
        return []
    metrics.update(swapped_lam_clusters=sig.swapped_clusters, lone_al=sig.lone_al)
    return (["swapped_lam_ligature"] if sig.swapped else []) + (["lone_al"] if sig.lone_al else [])


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
    if "\u0627" in folded and lam_alef_positions(folded):  # arabic_signals' decomposed_lam_alef, alone
        found.append("decomposed_lam_alef")
    if present & F_CONTROL and _CONTROL.search(text):
        found.append("control_chars")
    return found + lam_violations(text)


def _dedupe(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))
