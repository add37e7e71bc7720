"""List markers at the logical start of a line: bullets, Latin and Arabic-Indic numbering,
Hebrew and Arabic letters, Roman numerals.

    •  ◦  ▪  -  –  *           bullets
    1.  1)  (1)  1.2.  ١.  (١)  ۱-   numbers (ASCII, Arabic-Indic, Extended Arabic-Indic); a bare
                                    number is not a marker ("1 for (…)" is code, "2024 …" a year),
                                    except when the text layer split "1" and "." across a line end
    a.  b)  (c)  iv.  (ii)      Latin letters and Roman numerals
    א.  ב)  (ג)  ד'  יא.        Hebrew letters (one to three, with geresh)
    أ.  (ب)  ج-  د)             Arabic letters (one, Abjad order)

A marker must be followed by whitespace and some text. A lone letter that is a whole line is not a
list item. Pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BULLETS = "•◦▪▫‣⁃●○■□–-*·►✓"
_NUM = r"[0-9]{1,3}(?:\.[0-9]{1,3}){0,3}"
_AR_NUM = r"[\u0660-\u0669\u06F0-\u06F9]{1,3}"
_LATIN = r"[a-zA-Z]"
_ROMAN = r"(?:i{1,3}|iv|v|vi{1,3}|ix|x|I{1,3}|IV|V|VI{1,3}|IX|X)"
_HEBREW = r"[\u05D0-\u05EA]{1,2}['\u05F3]?"
_ARABIC = r"[\u0623\u0627\u0628\u062C\u062F\u0647\u0648\u0632\u062D\u0637\u064A]"
_ORDINAL = rf"(?:{_NUM}|{_AR_NUM}|{_ROMAN}|{_LATIN}|{_HEBREW}|{_ARABIC})"
_MARKER = re.compile(
    rf"^\s*(?P<m>[{re.escape(BULLETS)}]|\({_ORDINAL}\)|{_ORDINAL}[.)\-]|{_HEBREW}(?=\s)|{_NUM}[ \t]*\n[ \t]*[.)])"
    rf"\s+(?=\S)"
)
_CAPTION = re.compile(
    r"^\s*(?:figure|fig\.|table|chart|איור|תרשים|טבלה|לוח|شكل|الشكل|جدول|الجدول)\s*[0-9\u0660-\u0669]+[.:)]?(?:\s|$)",
    re.IGNORECASE,
)


def is_caption(text: str) -> bool:
    """ "Figure 2. …", "Table 3: …", "איור 1 …", "جدول ٢ …"."""
    return bool(_CAPTION.match(text))


@dataclass(frozen=True)
class Marker:
    marker: str  # as written: "א.", "(ב)", "1.", "•"
    kind: str  # bullet | number | letter
    length: int  # characters from the line start up to the item text


def list_marker(line: str) -> Marker | None:
    """The list marker that opens `line` (logical order), or None."""
    match = _MARKER.match(line)
    if not match:
        return None
    marker = " ".join(match.group("m").split()).replace(" .", ".").replace(" )", ")")
    core = marker.strip("().-")
    if marker in BULLETS:
        kind = "bullet"
    elif core and (core[0].isdigit()):
        kind = "number"
    else:
        kind = "letter"
    if kind == "letter" and not _letter_marker_ok(marker, core):
        return None
    return Marker(marker, kind, match.end())


def _letter_marker_ok(marker: str, core: str) -> bool:
    """A bare Hebrew word is not a marker: letters need punctuation, a geresh, or one letter only."""
    if marker[0] == "(" or marker[-1] in ".)-":
        return len(core.rstrip("'\u05f3")) <= 2
    return core.endswith(("'", "\u05f3"))
