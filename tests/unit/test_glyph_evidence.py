"""Rung 1's per-line glyph evidence (pagefleet/workers/pdf/mupdf.py) computed from one translation of the line
(`glyph_kinds`) and a sorted-origin screen equals its per-character definition, on random lines
built to hit every branch: shared origins, zero-width code points, marks, spaces, RTL and Latin."""

from __future__ import annotations

import random
import unicodedata
from typing import Any

import pytest

from pagefleet.routing.scripts import is_rtl_letter
from pagefleet.workers.pdf.mupdf import (
    _rtl_order,
    _shared_position_runs,
    glyph_clusters,
    glyph_kinds,
)

ALPHABET = (
    "אבגדהוזחטיכלמנסעפצקרשת"
    + "ابتثجحخدذرزسشصضطظعغفقكلمنهوي"
    + "abcdefxyz019"
    + "\u05b0\u05b4\u064e\u0651"
    + "  .,()"
)


def _is_base(ch: str) -> bool:
    return not ch.isspace() and not unicodedata.category(ch).startswith("M")


def reference_rtl_order(chars: list[dict[str, Any]]) -> list[int]:
    inc = dec = 0
    prev: float | None = None
    for c in chars:
        if not is_rtl_letter(c["c"]):
            if not unicodedata.category(c["c"]).startswith("M"):
                prev = None
            continue
        centre = (c["bbox"][0] + c["bbox"][2]) / 2
        if prev is not None and abs(centre - prev) > 0.5:
            inc, dec = (inc + 1, dec) if centre > prev else (inc, dec + 1)
        prev = centre
    return [inc, dec]


def reference_shared_runs(chars: list[dict[str, Any]]) -> int:
    runs = count = 0
    prev: tuple[float, float] | None = None
    for c in chars:
        if not _is_base(c["c"]):
            continue
        x, y = c["origin"]
        if (
            prev is not None
            and round(x, 1) == round(prev[0], 1)
            and round(y, 1) == round(prev[1], 1)
        ):
            count += 1
            runs += count == 3
        else:
            count = 1
        prev = (x, y)
    return runs


def reference_clusters(chars: list[dict[str, Any]]) -> list[tuple[int, int]]:
    def partner(i: int) -> int | None:
        best = None
        for j in (i + 1, i - 1):
            box = chars[j]["bbox"] if 0 <= j < len(chars) else None
            if box and _is_base(chars[j]["c"]) and box[2] - box[0] > 0.01:
                distance = abs(box[2] - chars[i]["bbox"][0])
                if distance < 1.0 and (best is None or distance < best[0]):
                    best = (distance, j)
        return best[1] if best else None

    joined = [False] * len(chars)
    for i, c in enumerate(chars):
        if not _is_base(c["c"]):
            continue
        if c["bbox"][2] - c["bbox"][0] <= 0.01:
            j = partner(i)
            if j is not None:
                joined[min(i, j)] = True
        elif i + 1 < len(chars) and _is_base(chars[i + 1]["c"]):
            joined[i] = all(abs(a - b) <= 0.01 for a, b in zip(c["bbox"], chars[i + 1]["bbox"]))
    found, i = [], 0
    while i < len(chars):
        j = i
        while j < len(joined) and joined[j]:
            j += 1
        if j > i and any(is_rtl_letter(ch["c"]) for ch in chars[i : j + 1]):
            found.append((i, j + 1))
        i = j + 1
    return found


def random_line(rng: random.Random) -> list[dict[str, Any]]:
    chars, x = [], 500.0
    for _ in range(rng.randint(0, 40)):
        ch = rng.choice(ALPHABET)
        width = rng.choice([0.0, 0.005, 4.0, 5.5, 6.0])
        step = rng.choice(
            [0.0, 0.0, 0.04, 0.1, 0.2, -width, width, -width]
        )  # shared origins, both directions
        x += step
        box = (x, 90.0, x + width, 102.0)
        if chars and rng.random() < 0.15:
            box = chars[-1]["bbox"]  # two code points, one box
        chars.append(
            {
                "c": ch,
                "origin": (x + rng.choice([0.0, 0.049, 0.051]), 100.0 + rng.choice([0.0, 0.02])),
                "bbox": box,
            }
        )
    return chars


@pytest.mark.parametrize("seed", range(6))
def test_glyph_evidence_equals_its_per_character_definition(seed: int) -> None:
    rng = random.Random(seed)
    hits = {"runs": 0, "clusters": 0, "order": 0}
    for _ in range(400):
        chars = random_line(rng)
        kinds = glyph_kinds("".join(c["c"] for c in chars))
        assert len(kinds) == len(chars)
        assert _shared_position_runs(chars, kinds) == reference_shared_runs(chars)
        assert glyph_clusters(chars, kinds) == reference_clusters(chars)
        assert _rtl_order(chars, kinds) == _rtl_order(chars) == reference_rtl_order(chars)
        hits["runs"] += reference_shared_runs(chars) > 0
        hits["clusters"] += bool(reference_clusters(chars))
        hits["order"] += sum(reference_rtl_order(chars)) > 0
    assert all(hits.values()), hits  # every branch was exercised


def test_glyph_kinds_codes() -> None:
    assert glyph_kinds("a א\u05b4ب1\t.") == "o RMRo o"


def reference_units(
    chars: list[dict[str, Any]], kinds: str
) -> list[tuple[str, int, int, float, float]]:
    """`pagefleet.workers.pdf.runs` units by their definition, a character at a time: a mark joins the unit
    before it (a leading one starts a neutral unit), Arabic letters join Arabic letters and LTR
    characters LTR ones; anything else is a unit of its own."""
    units: list[list[Any]] = []
    for i, c in enumerate(chars):
        kind, (x0, _, x1, _) = kinds[i], c["bbox"]
        if units and (kind == "M" or (kind == units[-1][0] and kind in "RL")):
            units[-1][2:] = [i + 1, min(units[-1][3], x0), max(units[-1][4], x1)]
        else:
            units.append(["N" if kind == "M" else kind, i, i + 1, x0, x1])
    return [tuple(u) for u in units]


def test_run_units_match_their_definition() -> None:
    from pagefleet.workers.pdf.runs import _KINDS, _units

    rng = random.Random(15)
    for _ in range(400):
        chars = random_line(rng)
        kinds = "".join(c["c"] for c in chars).translate(_KINDS)
        x0s, x1s = [c["bbox"][0] for c in chars], [c["bbox"][2] for c in chars]
        got = [(u.kind, u.start, u.end, u.x0, u.x1) for u in _units(x0s, x1s, kinds)]
        assert got == reference_units(chars, kinds)
    assert any(
        k.startswith("M")
        for k in ("".join(c["c"] for c in random_line(rng)).translate(_KINDS) for _ in range(200))
    )  # lines that open with a mark occur
