"""Decode a parser's output on an encoded page back to the original words (seed 000, step 3).

Each whitespace-separated piece of a cell or of the parser's text, Markdown emphasis stripped:

    1. a mapped token                         → its original word
    2. a word the document itself holds       → kept (numbers, Latin: never "corrected")
    3. otherwise its letter runs, each:
         a mapped token                       → its word
         two mapped tokens run together       → both words
         within `pagefleet.routing.wse.token_tolerance` Levenshtein edits of one mapped token (rapidfuzz)
                                              → that token's word
         anything else                        → kept as the parser wrote it

Rows keep the parser's cell order: on the mirrored page that is already logical RTL order
(``row[0]`` = the rightmost cell of the original page; see `pagefleet.routing.wse`).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from pagefleet.routing.wse import token_tolerance
from pagefleet.workers.wse.mapping import Mapping

Table = list[list[str]]
_EMPHASIS = "*_`#"
_LETTERS = re.compile(r"([A-Za-z]+)")


def clean_piece(piece: str) -> str:
    """A piece of parser output without Markdown emphasis or heading marks around it."""
    return piece.strip(_EMPHASIS)


class Decoder:
    """Decodes text with one mapping; caches fuzzy look-ups."""

    def __init__(self, mapping: Mapping) -> None:
        self.mapping = mapping
        self.tokens = list(mapping.tokens)
        self.keep = set(mapping.passthrough)
        self.keep_runs = {r for word in mapping.passthrough for r in _LETTERS.findall(word)}
        self.altered = 0  # letter runs recovered by edit distance or by splitting (counted per use)
        self._cache: dict[str, str | None] = {}

    def piece(self, piece: str) -> str:
        piece = clean_piece(piece)
        word = self.mapping.word_for(piece)
        if word is not None:
            return word
        if piece in self.keep:
            return piece
        parts = []
        for i, part in enumerate(_LETTERS.split(piece)):
            decoded = self._run(part) if i % 2 else part
            parts.append(f" {decoded} " if decoded != part else part)  # a word, not glued to digits
        return " ".join("".join(parts).split())

    def _run(self, run: str) -> str:
        if run in self.keep_runs:
            return run
        if run not in self._cache:
            self._cache[run] = self._recover(run)
        found = self._cache[run]
        if found is None:
            return run
        self.altered += self.mapping.word_for(run) is None
        return found

    def _recover(self, run: str) -> str | None:
        word = self.mapping.word_for(run)
        if word is not None:
            return word
        parts = self._segment(run)
        if parts and any(self.mapping.word_for(p) is not None for p in parts):
            return " ".join(self._whole(p) or p for p in parts)
        if not self.tokens or not run.islower():
            return None
        best = process.extractOne(
            run, self.tokens, scorer=Levenshtein.distance, score_cutoff=token_tolerance(run)
        )
        return self.mapping.word_for(best[0]) if best else None

    def _segment(self, run: str) -> list[str] | None:
        """`run` as the fewest tokens / Latin runs written together (a parser that lost the spaces
        between words drawn close), or None."""
        best: list[list[str] | None] = [[]] + [None] * len(run)
        for end in range(2, len(run) + 1):
            for start in range(0, end - 1):
                head = best[start]
                if head is not None and self._whole(run[start:end]) is not None:
                    if best[end] is None or len(head) + 1 < len(best[end]):
                        best[end] = head + [run[start:end]]
        return best[-1] if best[-1] and len(best[-1]) > 1 else None

    def _whole(self, run: str) -> str | None:
        """A run that is exactly a token (→ its word) or a Latin run of the document (→ itself)."""
        word = self.mapping.word_for(run)
        return word if word is not None else (run if run in self.keep_runs else None)

    def text(self, text: str) -> str:
        """Every line of `text` decoded (HTML tags of Markdown output dropped, ``<br>`` a space),
        pieces joined by single spaces."""
        text = strip_tags(text)
        return "\n".join(
            " ".join(self.piece(p) for p in line.split()) for line in text.splitlines()
        )

    def tables(self, tables: Iterable[Table]) -> list[Table]:
        return [
            [[self.text(cell).replace("\n", " ") for cell in row] for row in table]
            for table in tables
        ]


_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_TAG = re.compile(
    r"</?(?:u|b|i|s|em|strong|mark|sup|sub|span|code|del|ins)(?:\s[^>]*)?>", re.IGNORECASE
)


def strip_tags(text: str) -> str:
    """Inline HTML that Markdown converters emit inside cells: ``<br>`` → space, others dropped."""
    return _TAG.sub("", _BREAK.sub(" ", text))


def words_of(text: str) -> list[str]:
    """Words for counting: runs of characters that are neither whitespace nor punctuation, so a
    parser that glues ``(`` or ``-`` to a neighbour (spacing is layout, not content) loses
    nothing, and Markdown emphasis, pipes and ``<br>`` drop out."""
    text = strip_tags(text)
    chars = [
        " " if ch.isspace() or unicodedata.category(ch).startswith("P") or ch in "*|`#" else ch
        for ch in text
    ]
    return "".join(chars).split()


def word_recovery(original: Iterable[str], decoded_text: str) -> tuple[int, int]:
    """(found, total): how many of the original words (a multiset) the decoded text holds."""
    want = Counter(w for text in original for w in words_of(text))
    have = Counter(words_of(decoded_text))
    return sum((want & have).values()), sum(want.values())
