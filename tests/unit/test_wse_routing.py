"""Word Shape Encoding: the pure decisions (pagefleet.routing.wse) and the shape index."""

from __future__ import annotations

import pytest

from pagefleet.routing.wse import needs_token, parse_pages, style_key, token_tolerance
from pagefleet.workers.wse.shapes import Shape, ShapeIndex, measure, shape_index, word_list


def test_needs_token_for_rtl_letters_and_undrawable_characters():
    assert needs_token("שלום") and needs_token("مرحبا") and needs_token("(ללא")
    assert needs_token("00.511₪")  # the shekel sign is not in WinAnsi: Helvetica cannot draw it
    assert not needs_token("2014") and not needs_token("GDP") and not needs_token("-4.3%")
    assert not needs_token("“quoted”")  # WinAnsi punctuation above U+00FF


def test_parse_pages():
    assert parse_pages(None, 3) == [1, 2, 3]
    assert parse_pages("3,1-2,2", 5) == [3, 1, 2]
    for bad in ("0", "4", "2-1", "a", "1-x"):
        with pytest.raises(ValueError):
            parse_pages(bad, 3)


def test_tolerance_and_style():
    assert token_tolerance("ab") == 1 and token_tolerance("abcdefghi") == 3
    assert style_key(True, True) == "hebi" and style_key(False, False) == "helv"


def test_word_list_is_deterministic_and_has_no_single_letters():
    words = word_list()
    assert len(words) == len(set(words)) > 4000
    assert all(len(w) >= 2 and w.isalpha() and w.islower() for w in words)


def test_measure_records_width_and_ink_height():
    day, eat = measure("day"), measure("eat")
    assert day.height > eat.height  # ascender + descender against x-height only
    assert measure("mm").width > measure("ii").width
    assert measure("ab", "hebo").width > measure("ab", "helv").width  # bold has its own widths


def test_nearest_word_matches_the_box_and_skips_taken_words():
    index = shape_index("helv")
    target = measure("window")
    first = index.nearest(target)
    assert abs(measure(first).width - target.width) < 0.5
    second = index.nearest(target, {first})
    assert second != first and abs(measure(second).width - target.width) < 1.0


def test_a_full_index_reuses_the_nearest_word():
    index = ShapeIndex.build(["aa", "bbbb"])
    assert index.nearest(Shape(measure("aa").width, 6.0), {"aa", "bbbb"}) == "aa"
