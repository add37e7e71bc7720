"""The replayable edit map: replay, verification, JSON form, and composition of stages."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pagefleet.routing import compiled
from pagefleet.routing.edit_builder import EditMapBuilder, Replacement, combine_kinds
from pagefleet.routing.edits import (
    EDIT_KINDS,
    Edit,
    EditCheck,
    EditMapError,
    apply_edits,
    verify_edits,
)

RAW = "a\u200fb\u00a0c"


def _map() -> list[Edit]:
    return [Edit(1, 2, "", "bidi_control_removed", 1, 1), Edit(3, 4, " ", "whitespace", 2, 3)]


def test_apply_edits_replays_the_display_text() -> None:
    assert apply_edits(RAW, _map()) == "ab c"
    assert apply_edits(RAW, []) == RAW
    assert apply_edits("", [Edit(0, 0, "x", "nfkc", 0, 1)]) == "x"


def test_edit_kinds_are_the_documented_set() -> None:
    assert set(EDIT_KINDS) == {
        "nfkc", "whitespace", "line_ending", "bidi_control_removed", "rtl_punctuation_repair",
        "mirrored_bracket", "visual_order_reversal", "lam_alef_order", "ligature_order", "tatweel",
        "kashida_unmapped", "symbol_glyph_mapped", "word_space_inserted", "split_word_rejoined",
        "space_under_glyph",
    }  # fmt: skip


def test_dict_round_trip_uses_exactly_the_field_names() -> None:
    edit = _map()[1]
    data = edit.to_dict()
    assert set(data) == {"start", "end", "replacement", "kind", "out_start", "out_end"}
    assert data == __import__("dataclasses").asdict(edit)
    assert Edit.from_dict(json.loads(json.dumps(data))) == edit


@pytest.mark.parametrize(
    "data",
    [
        {"start": 0, "end": 1, "replacement": "", "kind": "nfkc", "out_start": 0},
        {
            "start": 0,
            "end": 1,
            "replacement": "",
            "kind": "nfkc",
            "out_start": 0,
            "out_end": 0,
            "x": 1,
        },
        {"start": True, "end": 1, "replacement": "", "kind": "nfkc", "out_start": 0, "out_end": 0},
        {"start": 0, "end": "1", "replacement": "", "kind": "nfkc", "out_start": 0, "out_end": 0},
        {"start": 0, "end": 1, "replacement": None, "kind": "nfkc", "out_start": 0, "out_end": 0},
    ],
)
def test_from_dict_rejects_malformed_edits(data: dict) -> None:
    with pytest.raises(EditMapError):
        Edit.from_dict(data)


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        (
            [Edit(3, 4, " ", "whitespace", 3, 4), Edit(1, 2, "", "bidi_control_removed", 1, 1)],
            "out of order",
        ),
        ([Edit(1, 3, "", "nfkc", 1, 1), Edit(2, 4, "", "nfkc", 1, 1)], "overlaps"),
        ([Edit(4, 9, "", "nfkc", 4, 4)], "out of bounds"),
        ([Edit(-1, 0, "", "nfkc", 0, 0)], "out of bounds"),
        ([Edit(2, 1, "", "nfkc", 2, 2)], "out of bounds"),
        (
            [Edit(1, 2, "", "bidi_control_removed", 1, 1), Edit(3, 4, " ", "whitespace", 3, 4)],
            "disagrees",
        ),
        ([Edit(1, 2, "xy", "nfkc", 1, 2)], "disagrees"),
    ],
)
def test_apply_edits_raises_on_invalid_lists(edits: list[Edit], message: str) -> None:
    with pytest.raises(EditMapError, match=message):
        apply_edits(RAW, edits)
    check = verify_edits(RAW, edits, "ab c")
    assert not check.ok and message in check.reason


def test_edit_map_error_is_a_value_error_with_a_position() -> None:
    with pytest.raises(ValueError) as info:
        apply_edits(
            RAW, [Edit(1, 2, "", "bidi_control_removed", 1, 1), Edit(3, 4, " ", "whitespace", 3, 4)]
        )
    assert info.value.index == 1 and info.value.at == 2


def test_verify_edits_ok_and_mismatch() -> None:
    assert verify_edits(RAW, _map(), "ab c") == EditCheck(True, None, "ok")
    check = verify_edits(RAW, _map(), "ab_c")
    assert not check.ok and check.first_mismatch_at == 2
    check = verify_edits(RAW, _map(), "ab c and more")
    assert not check.ok and check.first_mismatch_at == 4


def test_verify_edits_accepts_the_json_form() -> None:
    assert verify_edits(RAW, [e.to_dict() for e in _map()], "ab c").ok


@pytest.mark.parametrize(
    ("raw", "edits"),
    [
        (RAW, [None]),
        (RAW, [{"start": "x"}]),
        (RAW, lambda: [Edit("1", 2, "", "nfkc", 1, 1)]),  # type: ignore[arg-type]
        (None, _map()),
        (RAW, 5),
    ],
)
def test_verify_edits_never_raises(raw: object, edits: object) -> None:  # deliberately ill-typed
    if callable(edits):
        try:
            edits = edits()
        except TypeError:  # only the mypyc build (pagefleet/routing/compiled.py) checks an Edit's field types when it is made
            assert compiled.active()
            return
    check = verify_edits(raw, edits, "ab c")
    assert check.ok is False and check.reason


def test_combine_kinds_keeps_first_appearance_order_once_each() -> None:
    assert combine_kinds(["nfkc", "tatweel", "nfkc"]) == "nfkc+tatweel"
    assert combine_kinds(["nfkc+tatweel", "whitespace", "tatweel"]) == "nfkc+tatweel+whitespace"


def test_builder_merges_overlapping_edits_of_different_kinds() -> None:
    builder = EditMapBuilder("xﻫـy")
    builder.apply([Replacement(1, 2, "ه", "nfkc")])
    builder.apply([Replacement(1, 3, "ه", "tatweel")])  # the ه and the tatweel after it
    assert builder.text == "xهy"
    assert builder.edits() == [Edit(1, 3, "ه", "nfkc+tatweel", 1, 2)]
    assert builder.counters == {"nfkc": 1, "tatweel": 1}


def test_builder_keeps_touching_edits_separate() -> None:
    builder = EditMapBuilder("a\u00a0\u200fb")
    builder.apply([Replacement(1, 2, " ", "whitespace")])
    builder.apply([Replacement(2, 3, "", "bidi_control_removed")])
    assert builder.text == "a b"
    assert [e.kind for e in builder.edits()] == ["whitespace", "bidi_control_removed"]
    assert apply_edits(builder.raw, builder.edits()) == "a b"


def test_builder_absorbs_a_deletion_inside_a_later_replacement() -> None:
    builder = EditMapBuilder("ab\u200fcd")
    builder.apply([Replacement(2, 3, "", "bidi_control_removed")])
    assert builder.text == "abcd"
    builder.apply([Replacement(1, 3, "CB", "visual_order_reversal")])
    assert builder.edits() == [Edit(1, 4, "CB", "bidi_control_removed+visual_order_reversal", 1, 3)]
    assert apply_edits(builder.raw, builder.edits()) == "aCBd"


def test_builder_partial_overlap_keeps_the_rest_of_the_old_output() -> None:
    builder = EditMapBuilder("xﻻy")
    builder.apply([Replacement(1, 2, "لا", "nfkc")])
    builder.apply([Replacement(2, 3, "A", "test")])  # only the alef of the expansion
    assert builder.text == "xلAy"
    assert builder.edits() == [Edit(1, 2, "لA", "nfkc+test", 1, 3)]


def test_builder_drops_a_merge_that_restores_the_raw_text() -> None:
    builder = EditMapBuilder("abc")
    builder.apply([Replacement(1, 2, "X", "one")])
    builder.apply([Replacement(1, 2, "b", "two")])
    assert builder.text == "abc" and builder.edits() == []


def test_builder_insertions_at_boundaries_and_inside_outputs() -> None:
    builder = EditMapBuilder("ab")
    builder.apply([Replacement(1, 1, "X", "ins")])  # a|b
    builder.apply(
        [Replacement(1, 1, "Y", "ins"), Replacement(2, 2, "Z", "ins")]
    )  # before and after X
    assert builder.text == "aYXZb"
    assert apply_edits("ab", builder.edits()) == "aYXZb"
    builder.apply([Replacement(3, 3, "-", "mid")])  # between X and Z: two insertions touch there
    assert apply_edits("ab", builder.edits()) == builder.text == "aYX-Zb"


def test_builder_insertion_inside_an_earlier_output_merges() -> None:
    builder = EditMapBuilder("ab")
    builder.apply([Replacement(0, 1, "XYZ", "nfkc")])
    builder.apply([Replacement(2, 2, "-", "tatweel")])  # inside "XYZ"
    assert builder.edits() == [Edit(0, 1, "XY-Z", "nfkc+tatweel", 0, 4)]


def test_builder_two_replacements_inside_one_earlier_edit() -> None:
    builder = EditMapBuilder("")
    builder.apply([Replacement(0, 0, "aa", "nfkc")])
    builder.apply([Replacement(0, 1, "", "tatweel"), Replacement(1, 2, "", "tatweel")])
    assert builder.text == "" and builder.edits() == []
    builder = EditMapBuilder("q")
    builder.apply([Replacement(0, 1, "abc", "nfkc")])
    builder.apply([Replacement(0, 1, "A", "one"), Replacement(2, 3, "C", "two")])
    assert builder.edits() == [Edit(0, 1, "AbC", "nfkc+one+two", 0, 3)]
    assert builder.counters == {"nfkc": 1, "one": 1, "two": 1}


def test_builder_skips_no_op_replacements() -> None:
    builder = EditMapBuilder("abc")
    assert builder.apply([Replacement(0, 1, "a", "nfkc")]) == 0
    assert builder.edits() == [] and builder.counters == {}


@pytest.mark.parametrize(
    "reps",
    [
        [Replacement(2, 1, "x", "k")],
        [Replacement(0, 9, "x", "k")],
        [Replacement(1, 3, "x", "k"), Replacement(2, 3, "y", "k")],
        [Replacement(2, 3, "x", "k"), Replacement(0, 1, "y", "k")],
        [Replacement(0, 1, "x", "")],
    ],
)
def test_builder_rejects_invalid_stages(reps: list[Replacement]) -> None:
    with pytest.raises(EditMapError):
        EditMapBuilder("abcd").apply(reps)


# -- composition, property-based ---------------------------------------------------------------

ALPHABET = "ab\u200f "
KINDS = ("nfkc", "tatweel", "whitespace", "bidi_control_removed")


@st.composite
def stage(draw: st.DrawFn, text: str) -> list[Replacement]:
    """Random ordered, non-overlapping replacements against `text`."""
    points = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    reps = []
    for i in range(0, len(points) - 1, 2):
        new = draw(st.text(alphabet=ALPHABET, max_size=3))
        reps.append(Replacement(points[i], points[i + 1], new, draw(st.sampled_from(KINDS))))
    return reps


def _replay_local(text: str, reps: list[Replacement]) -> str:
    out, pos = [], 0
    for rep in reps:
        out += [text[pos : rep.start], rep.text]
        pos = rep.end
    return "".join(out) + text[pos:]


@settings(max_examples=400, deadline=None)
@given(raw=st.text(alphabet=ALPHABET, max_size=14), data=st.data())
def test_random_stages_compose_to_one_map_that_replays(raw: str, data: st.DataObject) -> None:
    builder = EditMapBuilder(raw)
    expected = raw
    for _ in range(data.draw(st.integers(1, 5))):
        reps = data.draw(stage(expected))
        builder.apply(reps)
        expected = _replay_local(expected, reps)
        assert builder.text == expected
    edits = builder.edits()
    assert apply_edits(raw, edits) == expected
    assert verify_edits(raw, [json.loads(json.dumps(e.to_dict())) for e in edits], expected).ok
    for prev, nxt in zip(edits, edits[1:]):
        assert prev.end <= nxt.start
    for edit in edits:
        assert edit.replacement != raw[edit.start : edit.end]  # no identity edits
        assert set(edit.kind.split("+")) <= set(KINDS)
