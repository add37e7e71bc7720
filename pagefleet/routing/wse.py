"""Word Shape Encoding decisions over plain data (seed 000). No I/O, no PyMuPDF.

    which words need a token        needs_token(word)           any RTL letter, or a character
                                                                Helvetica (WinAnsi) cannot draw
    how far a parser may alter one  token_tolerance(token)      Levenshtein distance accepted

Row order: rows are lists of cells with ``row[0]`` the rightmost cell of the original page (the
first a reader of Hebrew or Arabic reads), as `pagefleet.routing.structure.tables.logical_rows` defines it;
a parser on the *mirrored* page emits exactly that order, a parser on the original page the reverse.
"""

from __future__ import annotations

from pagefleet.routing.scripts import is_rtl_letter

_WINANSI_EXTRA = frozenset("€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ")


def needs_token(word: str) -> bool:
    """True when `word` is replaced by an English token: it holds an RTL letter or a character the
    base-14 Helvetica cannot draw (outside Latin-1 and WinAnsi), e.g. a Hebrew mark or ₪."""
    return any(is_rtl_letter(ch) or (ord(ch) > 0xFF and ch not in _WINANSI_EXTRA) for ch in word)


def token_tolerance(token: str) -> int:
    """Largest Levenshtein distance at which an altered `token` still decodes to a mapped token:
    one edit for short tokens, a third of the length for long ones."""
    return max(1, len(token) // 3)


def style_key(bold: bool, italic: bool) -> str:
    """PyMuPDF's base-14 Helvetica name for a style: helv, hebo, heit, hebi."""
    return {
        (False, False): "helv",
        (True, False): "hebo",
        (False, True): "heit",
        (True, True): "hebi",
    }[(bool(bold), bool(italic))]


def parse_pages(spec: str | None, count: int) -> list[int]:
    """``"1,3-5"`` → ``[1, 3, 4, 5]`` (1-based, inside 1..count, in order, no repeats); None or
    empty → every page. ValueError on anything else."""
    if not spec:
        return list(range(1, count + 1))
    pages: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            raise ValueError(f"bad page range {part!r}")
        lo, hi = int(first), int(last or first)
        if not 1 <= lo <= hi <= count:
            raise ValueError(f"page range {part!r} outside 1..{count}")
        pages += [p for p in range(lo, hi + 1) if p not in pages]
    return pages
