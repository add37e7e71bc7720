"""Three per-character loops of the gate and of rung 1 became regular expressions (issue 15); each
must count what its loop counted, on random mixed text: final-only Arabic letters opening or
closing a word, nested brackets, and which lines `run_order` looks at."""

from __future__ import annotations

import random

from pagefleet.routing import lam, visual_order
from pagefleet.routing.charclass import classes
from pagefleet.routing.brackets import _OPENERS, brackets_balanced, mirror_brackets
from pagefleet.workers.pdf import runs

POOL = [
    *"ةىابتثجحخ ",
    "\u0620",
    "\u064a",
    "\u0671",
    "\u06d3",
    "\u06fa",
    "\u06ff",
    "\u0670",
    "\u064b",
    "\ufe8e",
    *"a1()[]{}<>",
    "ש",
    "\u05d0",
    "\n",
]


def _texts(n: int = 20000) -> list[str]:
    rng = random.Random(15)
    return ["".join(rng.choice(POOL) for _ in range(rng.randint(0, 30))) for _ in range(n)]


def _word_votes(text: str) -> tuple[int, int]:
    visual = logical = 0
    for word in visual_order._ARABIC_WORD.findall(text):
        if len(word) >= 2:
            visual += word[0] in visual_order._ARABIC_FINAL_ONLY
            logical += word[-1] in visual_order._ARABIC_FINAL_ONLY
    return visual, logical


def _balanced(line: str) -> bool:
    stack: list[str] = []
    for ch in line:
        if ch in _OPENERS:
            stack.append(_OPENERS[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return False
    return not stack


def _arabic_line(text: str) -> bool:
    codes = classes(text)
    arabic = codes.count("r")
    return bool(arabic) and arabic > codes.count("a") and runs._HEBREW_ANY.search(text) is None


def test_regular_expressions_count_what_the_loops_counted() -> None:
    for text in _texts():
        assert (
            len(visual_order._FINAL_FIRST.findall(text)),
            len(visual_order._FINAL_LAST.findall(text)),
        ) == _word_votes(text), text
        assert brackets_balanced(text) == _balanced(text), text
        assert runs._arabic_line(text) == _arabic_line(text), text


def test_a_page_without_brackets_has_no_bracket_work() -> None:
    assert mirror_brackets("שלום עולם\nمرحبا\nplain") == ([], 0)
    reps, unbalanced = mirror_brackets("שלום )עולם( טוב")
    assert unbalanced == 0 and [r.text for r in reps] == ["(", ")"]


def _lone_al_loop(text: str) -> list[int]:
    found, i = [], 0
    while i < len(text) - 1:
        alone = (
            text[i : i + 2] == "\u0627\u0644"
            and (i == 0 or not lam._attached(text[i - 1]))
            and (i + 2 == len(text) or not lam._attached(text[i + 2]))
        )
        if alone:
            found.append(i)
        i += 2 if alone else 1
    return found


def test_lone_al_searched_from_its_alef_finds_what_a_loop_finds() -> None:
    """`ال` standing alone: the pattern starts at the ا (a literal the search skips to) and looks
    behind it, and finds every position a character loop finds."""
    rng = random.Random(12)
    pool = [
        "\u0627",
        "\u0644",
        "\u0627\u0644",
        " ",
        "\n",
        "\u064b",
        "\u0640",
        "\u0628",
        "a",
        "\ufefb",
        "1",
    ]
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(0, 24))) for _ in range(20000)]
    for text in texts:
        assert lam.lone_al_positions(text) == _lone_al_loop(text), text
    assert sum(map(len, map(lam.lone_al_positions, texts))) > 1000  # the case is exercised
