"""Normalization after acceptance: every change an edit, clean text untouched."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pagefleet.routing.brackets import brackets_balanced
from pagefleet.routing.edits import EDIT_KINDS, apply_edits, verify_edits
from pagefleet.routing.normalize import (
    SYMBOL_PUA_MAP,
    Normalized,
    OrderEvidence,
    hebrew_order_evidence,
    looks_visual_order,
    normalize,
)
from pagefleet.routing.mirrored_lines import paragraph_direction, visual_to_logical
from pagefleet.routing.scripts import is_private_use

RLE, PDF, LRE, RLM, LRM = "\u202b", "\u202c", "\u202a", "\u200f", "\u200e"


def kinds(result: Normalized) -> set[str]:
    return {part for e in result.edits for part in e.kind.split("+")}


def check_map(raw: str, result: Normalized) -> None:
    assert apply_edits(raw, result.edits) == result.text
    assert verify_edits(raw, result.edits, result.text).ok
    again = normalize(result.text)
    assert again.edits == [] and again.text == result.text, "a second pass changed the output"


# -- the corpus strings from the brief -------------------------------------------------------


def test_visual_ltr_paragraph_reverses_only_the_hebrew_run() -> None:
    raw = "Hebrew: םלוע םולש"
    result = normalize(raw, line_visual=[True])
    assert result.text == "Hebrew: שלום עולם"
    assert (
        kinds(result) == {"visual_order_reversal"} and result.counters["visual_order_reversal"] == 1
    )
    assert result.edits[0].start == len("Hebrew: ")  # the Latin run is not part of the edit
    check_map(raw, result)


def test_visual_rtl_paragraph_pdfcpu_table_line() -> None:
    # MuPDF reverses each RTL run in place; so does the repair: words come back, runs stay put
    raw = ":רצונ1  לֶׁש1 דומע"
    result = normalize(raw, line_visual=[True])
    assert {"נוצר:", "עמוד"} <= set(result.text.replace("1", " ").split())
    assert "רצונ" not in result.text and "דומע" not in result.text
    assert "שֶׁל" in result.text  # the marks travelled with their letter, NFC order
    check_map(raw, result)


def test_unshaped_producer_line_with_numbers() -> None:
    # "מספר החשבון הוא 12345 והסכום 250" drawn left to right, as MuPDF extracts it
    raw = " אוה ןובשחה רפסמ12345  םוכסהו250"
    # each run kept the space that followed it: `12345 ` stays, ` םוכסהו` is the run `והסכום ` mirrored
    assert normalize(raw, line_visual=[True]).text == "מספר החשבון הוא 12345 והסכום 250"


def test_unmapped_kashida_runs_removed() -> None:
    raw = "تس\ufffd\ufffd\ufffdرى أحكام ه\ufffd\ufffd\ufffdذا"
    result = normalize(raw)
    assert result.text == "تسرى أحكام هذا"
    assert kinds(result) == {"kashida_unmapped"} and result.counters["kashida_unmapped"] == 2
    check_map(raw, result)


def test_arabic_presentation_forms_folded() -> None:
    raw = "اﻧﻮاع اﳋﻄﻮط اﻟﻌﺮﺑﻴﺔ"
    result = normalize(raw)
    assert result.text == "انواع الخطوط العربية"
    assert kinds(result) == {"nfkc"}
    check_map(raw, result)


def test_lam_alef_ligature_is_normalized_to_logical_order() -> None:
    assert normalize("\ufefb").text == "لا"
    assert normalize("ﻻ ﺑﺄﺱ").text == "لا بأس"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("قائمة حزب األمان", "قائمة حزب الأمان"),
        ("اآلتى", "الآتى"),
        ("األولى", "الأولى"),
        ("واالشتراطات", "والاشتراطات"),
        ("باألمس", "بالأمس"),
    ],
)
def test_decomposed_lam_alef_swapped(raw: str, expected: str) -> None:
    result = normalize(raw)
    assert result.text == expected
    assert kinds(result) == {"lam_alef_order"}
    check_map(raw, result)


def test_valid_arabic_is_not_guessed_at() -> None:
    for word in ("لإلغاء", "لالتزام", "الأمان", "سالم", "إلى"):
        assert normalize(word).edits == []


def test_ligature_order_needs_evidence() -> None:
    raw = "قائمة حزب املجد"
    assert normalize(raw).text == raw  # no lam-alef decomposition on this text: no evidence
    assert normalize(raw, ligature_evidence=False).text == raw
    result = normalize(raw, ligature_evidence=True)
    assert result.text == "قائمة حزب المجد" and kinds(result) == {"ligature_order"}
    check_map(raw, result)


def test_ligature_evidence_computed_from_the_same_text() -> None:
    raw = "اجلريدة اآلتى املجد احلكومة اخلاصة"
    result = normalize(raw)
    assert result.text == "الجريدة الآتى المجد الحكومة الخاصة"
    assert result.counters["ligature_order"] == 4 and result.counters["lam_alef_order"] == 1
    assert normalize(raw, ligature_evidence=False).text == "اجلريدة الآتى املجد احلكومة اخلاصة"


def test_clean_hebrew_paragraph_round_trips_byte_identical() -> None:
    raw = "רוב ההרפתקאות שתועדו בספר זה באמת התרחשו; אחד או"
    result = normalize(raw)
    assert result.text == raw and result.edits == []
    assert sum(v for k, v in result.counters.items()) == 0


def test_clean_english_round_trips_byte_identical() -> None:
    raw = (
        "Most of the adventures recorded in this book really occurred; one or two were\n"
        "experiences of my own (the rest [those of boys] were {schoolmates}). Cost: $1,000.00 - 12:30, "
        "1.2.2024, 100%, https://example.com/a?b=1 mail@example.org \u2026 x\u00b2 \u2122 \u00bd\n"
    )
    result = normalize(raw)
    assert result.text == raw and result.edits == []


# -- stage 1: line endings and spaces ----------------------------------------------------------


def test_line_endings_and_unicode_spaces() -> None:
    raw = "a\r\nb\rc\u00a0d\u2009e\u3000f\u202fg\th"
    result = normalize(raw)
    assert result.text == "a\nb\nc d e f g\th"
    assert result.counters["line_ending"] == 2 and result.counters["whitespace"] == 4
    check_map(raw, result)


def test_line_visual_flags_follow_lone_carriage_returns() -> None:
    raw = "abc\rHebrew: םלוע םולש\r\nםולש"
    result = normalize(raw, line_visual=[True, False])
    assert result.text == "abc\nHebrew: שלום עולם\nםולש"
    with pytest.raises(ValueError, match="line_visual"):
        normalize(raw, line_visual=[True])


# -- stage 2: displaced punctuation and bidi controls -------------------------------------------


def test_bidi_controls_removed() -> None:
    controls = "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    raw = "א" + controls + "ב"
    result = normalize(raw)
    assert result.text == "אב" and result.counters["bidi_control_removed"] == len(controls)
    check_map(raw, result)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (f".{RLE}שלום עולם{PDF}", "שלום עולם."),
        (f"  :{RLE}הוראה זו תחול {PDF} ", "  הוראה זו תחול:  "),
        (f"?!{RLE}מה{PDF}\nx", "מה?!\nx"),
        (f"،{RLE}مرحبا{PDF}", "مرحبا،"),
    ],
)
def test_punctuation_displaced_across_an_embedding_edge(raw: str, expected: str) -> None:
    result = normalize(raw)
    assert result.text == expected
    assert result.counters["rtl_punctuation_repair"] == 2  # one deletion, one insertion
    check_map(raw, result)


@pytest.mark.parametrize(
    "raw",
    [
        f"{RLE}AA-{PDF}",  # a sign written onto a token
        f"{RLE}100%{PDF}",
        f"-{RLE}AA{PDF}",  # not sentence punctuation
        f".{RLE}5 שקלים{PDF}",  # could be written onto the number
        f".{RLE}שלום.{PDF}",  # already ends with punctuation
        f"x .{RLE}שלום{PDF}",  # text before the mark: not the line-edge case
        f".{RLE}abc{PDF}",  # no RTL letter
        f".{LRE}שלום{PDF}",  # an LTR embedding
        f".{RLE}שלום{PDF} עוד",  # the embedding does not end the line
        f"{RLE}שלום{PDF}.",
    ],
)
def test_punctuation_repair_is_conservative(raw: str) -> None:
    result = normalize(raw)
    assert result.counters["rtl_punctuation_repair"] == 0
    assert result.text == "".join(c for c in raw if c not in (RLE, PDF, LRE))


# -- stage 3: visual order ---------------------------------------------------------------------


def test_order_evidence_counts() -> None:
    assert hebrew_order_evidence("שלום עולם") == OrderEvidence(0, 0, 2, 2)
    assert hebrew_order_evidence("םולש םלוע") == OrderEvidence(2, 0, 0, 2)
    assert hebrew_order_evidence("ךלמה ונכ") == OrderEvidence(1, 1, 0, 2)
    # abbreviations, hyphen-joined prefixes and one-letter words are not medial-last evidence
    assert hebrew_order_evidence("עמ' 5, כ-50, מ־2019, ב 3").medial_last == 0
    assert hebrew_order_evidence('צה"ל').words == 1


def test_looks_visual_order() -> None:
    assert looks_visual_order(hebrew_order_evidence("םולש םלוע"))
    assert looks_visual_order(OrderEvidence(final_first=1, medial_last=0, final_last=0, words=2))
    assert not looks_visual_order(
        OrderEvidence(final_first=1, medial_last=0, final_last=0, words=9)
    )
    assert not looks_visual_order(
        OrderEvidence(final_first=1, medial_last=1, final_last=3, words=20)
    )
    assert looks_visual_order(OrderEvidence(final_first=3, medial_last=2, final_last=1, words=20))
    assert not looks_visual_order(hebrew_order_evidence("רוב ההרפתקאות שתועדו בספר זה באמת התרחשו"))
    assert not looks_visual_order(OrderEvidence())


def test_auto_detection_reverses_mirrored_lines_only() -> None:
    raw = "םלוע םולש\nשלום עולם\nEnglish only"
    result = normalize(raw)
    assert result.text == "שלום עולם\nשלום עולם\nEnglish only"
    assert result.edits[0].end <= len("םלוע םולש")
    check_map(raw, result)


def test_ocr_output_is_never_reversed() -> None:
    raw = "Hebrew: םלוע םולש"
    assert normalize(raw, line_visual=[True], from_ocr=True).text == raw
    assert normalize(raw, from_ocr=True).text == raw


def test_explicit_false_flag_wins_over_evidence() -> None:
    raw = "םולש םלוע"
    assert normalize(raw, line_visual=[False]).text == raw


def test_numbers_latin_urls_and_dates_keep_their_order() -> None:
    line = "1,000.00 ₪ 12:30 2.Jun 1.2.2024 https://x.co/a?b=1 a@b.org 100% םולש"
    assert paragraph_direction(line) == "ltr"
    logical = visual_to_logical(line)
    assert logical == "1,000.00 ₪ 12:30 2.Jun 1.2.2024 https://x.co/a?b=1 a@b.org 100% שלום"
    # "שלום 1,000.00 ₪ 12:30 2.Jun" drawn left to right: MuPDF mirrors the run "שלום " in place
    rtl = visual_to_logical(" םולש1,000.00 ₪ 12:30 2.Jun")
    assert (
        rtl == "שלום 1,000.00 ₪ 12:30 2.Jun"
    )  # RTL paragraph: runs reversed in place, never moved


def test_rtl_paragraph_with_numbers_between_words() -> None:
    # logical "שילמתי 100 ₪ ב-2024" drawn left to right, each RTL run mirrored in place
    assert visual_to_logical(" יתמליש100-ב ₪ 2024") == "שילמתי 100 ₪ ב-2024"


def test_brackets_travel_with_the_reversed_run() -> None:
    # the extractor reversed brackets as plain characters; reversing the run restores them
    assert visual_to_logical(")םלוע( םולש") == "שלום (עולם)"
    assert visual_to_logical("א ]ב[") == "[ב] א"


def test_marks_travel_with_code_point_reversal() -> None:
    logical = unicodedata.normalize("NFC", "כַּמּוּת")
    visual = logical[::-1]
    assert visual_to_logical(visual) == logical
    result = normalize(visual, line_visual=[True])
    assert result.text == logical
    check_map(visual, result)


def test_visual_arabic_is_reversed_before_it_is_unshaped() -> None:
    # shaped Arabic stored left to right: reversal first, then NFKC (ﻻ must come out as لا)
    assert normalize("ﺱﺄﺑ ﻻ", line_visual=[True]).text == "لا بأس"
    assert normalize("ىﺮﺘﺷإ", line_visual=[True]).text == "إشترى"


def test_never_a_whole_string_reversal() -> None:
    raw = "Hebrew: םלוע םולש 2024"
    text = normalize(raw, line_visual=[True]).text
    assert text.startswith("Hebrew:") and text.endswith("2024") and text != raw[::-1]


# -- stage 4: NFKC and NFC ---------------------------------------------------------------------


def test_nfkc_only_on_shape_variants() -> None:
    raw = "… x² ™ ½ ① ﬁ ＡＢＣ１ ﾊ \ufb2a \ufb4f"
    result = normalize(raw)
    assert result.text == "… x² ™ ½ ① fi ABC1 ハ \u05e9\u05c1 אל"
    assert kinds(result) == {"nfkc"}
    check_map(raw, result)


def test_nfc_reorders_marks_in_rtl_clusters_only_when_needed() -> None:
    raw = "\u05db\u05bc\u05b7"  # kaf, dagesh, patah: not NFC
    result = normalize(raw)
    assert result.text == "\u05db\u05b7\u05bc" and kinds(result) == {"nfkc"}
    assert normalize(result.text).edits == []
    assert normalize("\u0627\u0654").text == "\u0623"  # alef + hamza above is أ
    assert normalize("e\u0301").text == "e\u0301"  # not a Hebrew/Arabic cluster


# -- stage 5: Arabic ---------------------------------------------------------------------------


def test_tatweel_removed_after_arabic_letters() -> None:
    raw = "رسـالة العـــربية"
    result = normalize(raw)
    assert result.text == "رسالة العربية" and result.counters["tatweel"] == 2
    check_map(raw, result)


def test_tatweel_kept_when_not_after_a_letter_or_under_a_mark() -> None:
    for raw in ("ـ", " ـه", "بـَ", "x ـ"):
        assert normalize(raw).text == raw


def test_kashida_only_when_glued_to_an_arabic_word() -> None:
    # a replacement glyph standing alone or outside Arabic is a missing glyph: never removed
    for raw in ("تس \ufffd رى", "ab\ufffdcd", "א\ufffdב", "1\ufffdتس"):
        assert normalize(raw).text == raw
    assert normalize("تـ\ufffdـرى").text == "ترى"
    # a kashida at a line break inside a stretched word (InDesign gazette, page 8)
    assert normalize("للضو\n \ufffd\ufffd\ufffdا للش").text == "للضو\n ا للش"
    assert normalize("تس\ufffd").text == "تس" and normalize("\ufffdتس").text == "تس"


def test_presentation_forms_with_tatweel_compose_into_one_edit() -> None:
    raw = "ﻫـذا"
    result = normalize(raw)
    assert result.text == "هذا"
    assert [e.kind for e in result.edits] == ["nfkc", "tatweel"]
    check_map(raw, result)


# -- stage 6: Symbol-font glyphs ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("pua", "expected"),
    [
        ("\uf0b7", "•"), ("\uf0a7", "▪"), ("\uf0d8", "➢"), ("\uf0fc", "✓"), ("\uf02d", "−"),
        ("\uf0b4", "×"), ("\uf0b8", "÷"), ("\uf0a3", "≤"), ("\uf0b3", "≥"), ("\uf0b1", "±"),
        ("\uf061", "α"), ("\uf062", "β"), ("\uf070", "π"), ("\uf073", "σ"), ("\uf077", "ω"),
        ("\uf07a", "ζ"), ("\uf044", "Δ"), ("\uf053", "Σ"),
    ],
)  # fmt: skip
def test_symbol_pua_map(pua: str, expected: str) -> None:
    assert SYMBOL_PUA_MAP[pua] == expected
    result = normalize(f"x {pua} y")
    assert result.text == f"x {expected} y" and kinds(result) == {"symbol_glyph_mapped"}


def test_symbol_map_covers_greek_and_only_private_use() -> None:
    assert all(is_private_use(k) and not is_private_use(v) for k, v in SYMBOL_PUA_MAP.items())
    greek = "".join(SYMBOL_PUA_MAP[chr(cp)] for cp in range(0xF061, 0xF07B))
    assert greek == "αβχδεφγηιϕκλμνοπθρστυϖωξψζ"


def test_unmapped_private_use_left_for_the_gate() -> None:
    raw = "a\ue000b\uf8ffc"
    assert normalize(raw).text == raw


# -- stage 7: brackets -------------------------------------------------------------------------


def test_mirrored_brackets_swapped_when_that_balances_the_line() -> None:
    raw = ")English :אנגלית (באנגלית"
    result = normalize(raw)
    assert brackets_balanced(result.text)
    assert result.text == "(English :אנגלית )באנגלית"
    assert result.counters["mirrored_bracket"] == 2 and result.counters["unbalanced_brackets"] == 0
    check_map(raw, result)


def test_balanced_lines_are_never_rewritten() -> None:
    for raw in ("שלום (עולם) [א] {ב}", "(a) ((ב))", "(א)(ב)", "ב ([א] {ג})", ""):
        assert normalize(raw).edits == []


def test_unfixable_or_ltr_unbalanced_lines_are_counted_not_touched() -> None:
    raw = "א) סעיף ראשון\n1) first item\nשלום (עולם\n)Hebrew text( x"
    result = normalize(raw)
    assert result.text == raw
    assert result.counters["unbalanced_brackets"] == 4


def test_counters_cover_every_kind() -> None:
    counters = normalize("").counters
    assert set(EDIT_KINDS) | {"unbalanced_brackets"} == set(counters)
    assert normalize("").text == "" and normalize("").edits == []


# -- properties --------------------------------------------------------------------------------

HEB = "אבגדהוזחטיכלמנסעפצקרשת"
FINAL_OF = dict(zip("כמנפצ", "ךםןףץ"))
AR = "بتثجحخدذرزسشصضطظعغفقكلمنهويةىء"
AR_WORDS = (
    "العربية",
    "الأولى",
    "لإلغاء",
    "الآتى",
    "سلام",
    "قائمة",
    "حزب",
    "لالتزام",
    "إلى",
    "مرحبا",
)
POINTED = tuple(unicodedata.normalize("NFC", w) for w in ("שָׁלוֹם", "כַּמּוּת", "בְּרֵאשִׁית"))
LATIN = ("Hebrew", "the", "URL", "https://example.com/a?b=1", "mail@example.org", "PDF-2")
NUMBERS = ("1,000.00", "12:30", "1.2.2024", "100%", "₪50", "2.Jun", "3")
PUNCT = (",", ".", ";", ":", "!", "?", "-", "\u2013", "\u2026", "'", '"', "\u05be", "/")


@st.composite
def hebrew_word(draw: st.DrawFn) -> str:
    word = draw(st.text(alphabet=HEB, min_size=1, max_size=7))
    if len(word) >= 2 and word[-1] in FINAL_OF:
        word = word[:-1] + FINAL_OF[word[-1]]
    return word


@st.composite
def arabic_word(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from(AR_WORDS))
    return draw(st.text(alphabet=AR + "ا", min_size=1, max_size=7).filter(lambda w: "اا" not in w))


TOKEN = st.one_of(
    hebrew_word(),
    arabic_word(),
    st.sampled_from(POINTED),
    st.sampled_from(LATIN),
    st.sampled_from(NUMBERS),
)


@st.composite
def clean_line(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 8))):
        token = draw(TOKEN)
        if draw(st.integers(0, 5)) == 0:
            token = draw(st.sampled_from(("()", "[]", "{}")))[0] + token + "ZZ"
            token = token.replace("ZZ", {"(": ")", "[": "]", "{": "}"}[token[0]])
        if draw(st.integers(0, 3)) == 0:
            token += draw(st.sampled_from(PUNCT))
        parts.append(token)
    return draw(st.sampled_from((" ", "  ", "\t"))).join(parts)


CLEAN_TEXT = st.lists(clean_line(), max_size=5).map("\n".join)

DIRTY_ALPHABET = (
    HEB + "ךםןףץ" + "بتجحخلماأإآ" + "\u0640\ufffd\ufefb\ufe8e\ufedf\ufb2a\ufb4f\ufb01\uff21\uff11"
    + "\u05b7\u05bc\u0651\u064e" + "\u200e\u200f\u202a\u202b\u202c\u2067\u2069\u061c"
    + "\u00a0\u2009\r\n \t" + "()[]{}<>.,:;!?%₪-" + "aZ09" + "\uf0b7\uf061\ue000" + "…²"
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(raw=CLEAN_TEXT)
def test_clean_text_round_trips_byte_identical(raw: str) -> None:
    result = normalize(raw)
    assert result.edits == []
    assert result.text == raw


@settings(max_examples=300, deadline=None)
@given(
    raw=st.one_of(st.text(max_size=40), st.text(alphabet=DIRTY_ALPHABET, max_size=40)),
    data=st.data(),
)
def test_any_input_replays_from_its_edit_map(raw: str, data: st.DataObject) -> None:
    lines = raw.split("\n")
    flags = data.draw(
        st.one_of(st.none(), st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    )
    result = normalize(
        raw,
        line_visual=flags,
        from_ocr=data.draw(st.booleans()),
        ligature_evidence=data.draw(st.sampled_from((None, True, False))),
    )
    assert apply_edits(raw, result.edits) == result.text
    assert verify_edits(raw, [e.to_dict() for e in result.edits], result.text).ok
    for prev, nxt in zip(result.edits, result.edits[1:]):
        assert prev.end <= nxt.start
    assert all(set(e.kind.split("+")) <= set(EDIT_KINDS) for e in result.edits)


@settings(max_examples=300, deadline=None)
@given(raw=st.text(alphabet=DIRTY_ALPHABET, max_size=40))
def test_normalize_is_idempotent(raw: str) -> None:
    once = normalize(raw)
    twice = normalize(once.text)
    assert twice.edits == [], (once.text, twice.edits)
    assert twice.text == once.text


def test_bracket_stage_matches_its_per_line_rule_with_and_without_rtl_letters() -> None:
    """`mirror_brackets` decides each unbalanced line by its RTL and Latin letters; a page without
    an RTL letter is decided without counting them (every unbalanced line stays, counted): both
    ways give what the per-line rule gives, on random pages of brackets, Latin, Hebrew and Arabic."""
    import random

    from pagefleet.routing.charclass import is_latin, is_rtl_letter
    from pagefleet.routing.brackets import BRACKET_SWAP, mirror_brackets

    def by_rule(text: str) -> tuple[list[tuple[int, int, str]], int]:
        reps, left, offset = [], 0, 0
        for line in text.split("\n"):
            if not brackets_balanced(line):
                swapped = line.translate(BRACKET_SWAP)
                rtl, latin = sum(map(is_rtl_letter, line)), sum(map(is_latin, line))
                if rtl > latin and brackets_balanced(swapped):
                    reps += [
                        (offset + i, offset + i + 1, swapped[i])
                        for i, c in enumerate(line)
                        if c != swapped[i]
                    ]
                else:
                    left += 1
            offset += len(line) + 1
        return reps, left

    rng = random.Random(11)
    for pool in (list("()[]{}\n ab"), list("()[]{}\n ab\u05d0\u05d1\u0628")):
        for _ in range(1500):
            text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 50)))
            reps, left = mirror_brackets(text)
            assert ([(r.start, r.end, r.text) for r in reps], left) == by_rule(text), text
