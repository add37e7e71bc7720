"""Token assignment and the mapping stored beside an encoded PDF (``OUT.pdf`` → ``OUT.wse.json``).

One English token per distinct original word in the document (so decoding needs nothing but the
text a parser returns), chosen by `ShapeIndex.nearest` from the word's box scaled to 10 pt, never a
token already given to another word, nor a Latin word the document itself holds. Where every
candidate is taken (more distinct words than the index has) the nearest token is reused and the
mapping counts a collision.

    {"version": 1, "source": "in.pdf", "pages": [1, 2],
     "tokens": {"treat": {"word": "הכל", "occurrences": [{"page": 1, "bbox": [x0, y0, x1, y1]}]}},
     "passthrough": ["2014", "GDP"], "collisions": 0}
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from pagefleet.routing.wse import needs_token, style_key
from pagefleet.workers.wse.shapes import SIZE, Shape, shape_index
from pagefleet.workers.wse.words import PageWord

VERSION = 1
WIDTH_SLACK = 0.2  # points at 10 pt a token may exceed its word by


@dataclass
class Mapping:
    source: str = ""
    pages: list[int] = field(default_factory=list)
    tokens: dict[str, dict] = field(default_factory=dict)  # token -> {"word", "occurrences"}
    passthrough: set[str] = field(default_factory=set)
    collisions: int = 0
    _by_word: dict[str, str] = field(default_factory=dict, repr=False)

    def token_for(self, word: str) -> str | None:
        return self._by_word.get(word)

    def word_for(self, token: str) -> str | None:
        entry = self.tokens.get(token)
        return entry["word"] if entry else None

    def to_json(self) -> dict:
        return {
            "version": VERSION,
            "source": self.source,
            "pages": self.pages,
            "tokens": self.tokens,
            "passthrough": sorted(self.passthrough),
            "collisions": self.collisions,
        }

    @classmethod
    def from_json(cls, data: dict) -> Mapping:
        m = cls(
            data.get("source", ""),
            list(data.get("pages", [])),
            dict(data["tokens"]),
            set(data.get("passthrough", [])),
            int(data.get("collisions", 0)),
        )
        m._by_word = {entry["word"]: token for token, entry in m.tokens.items()}
        return m

    def save(self, path: str) -> None:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(self.to_json(), fh, ensure_ascii=False, indent=1)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str) -> Mapping:
        with open(path, encoding="utf-8") as fh:
            return cls.from_json(json.load(fh))


def mapping_path(pdf_path: str) -> str:
    """Where the mapping of an encoded PDF lives: beside it, ``X.pdf`` → ``X.wse.json``."""
    root, _ = os.path.splitext(pdf_path)
    return root + ".wse.json"


def shape_of(word: PageWord) -> Shape:
    """The word's box scaled to the index's 10 pt."""
    scale = SIZE / word.size if word.size > 0 else 1.0
    return Shape(word.length * scale, word.ink_height * scale)


def assign(mapping: Mapping, pages: list[tuple[int, list[PageWord]]]) -> list[list[str]]:
    """What to draw for each word of each page (a token, or the word itself), recording the tokens.

    The document's own Latin words are collected first so no token can be mistaken for one."""
    for _, words in pages:
        mapping.passthrough.update(w.text for w in words if not needs_token(w.text))
    reserved = {p.lower() for p in mapping.passthrough}
    return [[_draw(mapping, number, w, reserved) for w in words] for number, words in pages]


def _draw(mapping: Mapping, page_number: int, w: PageWord, reserved: set[str]) -> str:
    if not needs_token(w.text):
        return w.text
    token = mapping.token_for(w.text)
    if token is None:
        taken = reserved | mapping.tokens.keys()
        token = shape_index(style_key(w.bold, w.italic)).nearest(
            shape_of(w), taken, slack=WIDTH_SLACK
        )
        if token in taken:
            mapping.collisions += 1  # drawn, but it decodes to the word that owns it
            return token
        mapping.tokens[token] = {"word": w.text, "occurrences": []}
        mapping._by_word[w.text] = token
    mapping.tokens[token]["occurrences"].append(
        {"page": page_number, "bbox": [round(v, 2) for v in w.bbox]}
    )
    return token
