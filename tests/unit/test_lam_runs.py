"""Numbers and brackets in Arabic lines (issue 12): the reading order the glyph boxes prove
(`pagefleet.workers.pdf.runs`) and its repair in the edit map (`pagefleet.routing.normalize`)."""

from __future__ import annotations

from pagefleet.routing.edits import apply_edits
from pagefleet.routing.normalize import normalize
from pagefleet.workers.pdf.runs import run_order

ADVANCE = 6.0


def _chars(logical: str, *, right: float = 500.0, y: float = 100.0) -> list[dict]:
    """Boxes for `logical` laid out right to left as a reader sees it: Arabic letters leftwards,
    each LTR run (digits, Latin with the spaces inside it) left to right in its own slot."""
    boxes: list[tuple[str, float]] = []
    x = right
    i = 0
    while i < len(logical):
        j = i
        while j < len(logical) and (
            logical[j].isdigit()
            or logical[j].isascii()
            and logical[j].isalpha()
            or (
                j > i
                and logical[j] in " .,"
                and j + 1 < len(logical)
                and (
                    logical[j + 1].isdigit()
                    or logical[j + 1].isascii()
                    and logical[j + 1].isalpha()
                )
            )
        ):
            j += 1
        if j > i:  # an LTR run: its first character at the left of its slot
            x -= ADVANCE * (j - i)
            boxes += [(logical[k], x + ADVANCE * (k - i)) for k in range(i, j)]
            i = j
            continue
        x -= ADVANCE
        boxes.append((logical[i], x))
        i += 1
    return [
        {"c": c, "bbox": (x0, y - 10, x0 + ADVANCE, y + 2), "origin": (x0, y)} for c, x0 in boxes
    ]


def _scramble(chars: list[dict], pieces: list[tuple[int, int]]) -> tuple[list[dict], str]:
    out = [c for a, b in pieces for c in chars[a:b]]
    return out, "".join(c["c"] for c in out)


LOGICAL = "قانون رقم 8 لسنة 2022"


def test_geometry_gives_the_reading_order_of_a_scrambled_line() -> None:
    chars = _chars(LOGICAL)
    assert run_order(chars) is None  # already in reading order
    # what MuPDF made of InDesign's line: `2022 لسنة8 قانون رقم`
    scrambled, text = _scramble(
        chars, [(17, 21), (16, 17), (12, 16), (10, 11), (11, 12), (9, 10), (0, 9)]
    )
    assert text == "2022 لسنة8  قانون رقم"
    order = run_order(scrambled)
    assert order is not None
    assert "".join(text[a:b] for a, b in order) == LOGICAL


def test_ltr_runs_keep_their_inside_and_stay_together() -> None:
    logical = "اسمي Tel Aviv و 1,000.5 دينار"
    chars = _chars(logical)
    tail = logical.index("دينار")
    scrambled, text = _scramble(chars, [(tail, len(logical)), (tail - 1, tail), (0, tail - 1)])
    assert text == "دينار اسمي Tel Aviv و 1,000.5"
    order = run_order(scrambled)
    assert order is not None and "".join(text[a:b] for a, b in order) == logical
    glued, _ = _scramble(chars, [(tail, len(logical)), (0, tail)])  # two words glued: no proof
    assert run_order(glued) is None


def test_nothing_is_proven_on_hebrew_latin_two_baselines_or_overlaps() -> None:
    assert run_order(_scramble(_chars("שלום 12 עולם"), [(5, 12), (0, 5)])[0]) is None
    assert run_order(_scramble(_chars("Hello world 12 عالم"), [(12, 19), (0, 12)])[0]) is None
    two = _chars("قانون رقم") + _chars(" 8", y=130.0)
    assert run_order(_scramble(two, [(9, 11), (0, 9)])[0]) is None
    overlapping = _chars(LOGICAL)
    overlapping[10] = {**overlapping[10], "bbox": (480.0, 90.0, 499.0, 102.0)}
    assert run_order(_scramble(overlapping, [(10, 11), (0, 10), (11, 21)])[0]) is None


def test_a_word_stored_visually_proves_nothing() -> None:
    chars = _chars(LOGICAL)
    visual = list(reversed(chars[:5])) + chars[5:]  # a word whose x rises: a visual-order line
    assert run_order(_scramble(visual, [(17, 21), (0, 17)])[0]) is None


def test_repair_puts_the_runs_in_order_and_replays() -> None:
    raw = "2022 لسنة8  قانون رقم\nسطر ثان"
    order = [[12, 21], [11, 12], [9, 10], [10, 11], [5, 9], [4, 5], [0, 4]]
    result = normalize(raw, run_orders=[order])
    assert result.text == "قانون رقم 8 لسنة 2022\nسطر ثان"
    assert apply_edits(raw, result.edits) == result.text
    assert [e.kind for e in result.edits] == ["visual_order_reversal"]
    assert normalize(raw, run_orders=[order], from_ocr=True).edits == []


def test_spans_that_do_not_tile_the_line_are_left_alone() -> None:
    raw = "2022 لسنة8"
    assert normalize(raw, run_orders=[[[5, 9], [0, 4]]]).edits == []
