"""Symbol and Wingdings glyphs that Word and PDF producers leave at Private Use code points, and
what each one is in Unicode. Pure data."""

from __future__ import annotations


def _symbol_pua_map() -> dict[str, str]:
    """Adobe Symbol encoding at U+F0xx (the form Word and PDF producers leave in text layers),
    with the common Wingdings bullets where the two fonts collide (F0A7 ▪, F0D8 ➢, F0FC ✓)."""
    greek_lower = "αβχδεφγηιϕκλμνοπθρστυϖωξψζ"
    greek_upper = "ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ"
    table = {0xF061 + i: ch for i, ch in enumerate(greek_lower)}
    table |= {0xF041 + i: ch for i, ch in enumerate(greek_upper)}
    table |= {0xF030 + i: str(i) for i in range(10)}
    table |= {
        0xF020: " ", 0xF021: "!", 0xF022: "∀", 0xF023: "#", 0xF024: "∃", 0xF025: "%", 0xF026: "&",
        0xF027: "∋", 0xF028: "(", 0xF029: ")", 0xF02A: "∗", 0xF02B: "+", 0xF02C: ",", 0xF02D: "−",
        0xF02E: ".", 0xF02F: "/", 0xF03A: ":", 0xF03B: ";", 0xF03C: "<", 0xF03D: "=", 0xF03E: ">",
        0xF03F: "?", 0xF040: "≅", 0xF05B: "[", 0xF05C: "∴", 0xF05D: "]", 0xF05E: "⊥", 0xF05F: "_",
        0xF07B: "{", 0xF07C: "|", 0xF07D: "}", 0xF07E: "∼", 0xF0A2: "′", 0xF0A3: "≤", 0xF0A4: "⁄",
        0xF0A5: "∞", 0xF0A6: "ƒ", 0xF0A7: "▪", 0xF0AB: "↔", 0xF0AC: "←", 0xF0AD: "↑", 0xF0AE: "→",
        0xF0AF: "↓", 0xF0B0: "°", 0xF0B1: "±", 0xF0B2: "″", 0xF0B3: "≥", 0xF0B4: "×", 0xF0B5: "∝",
        0xF0B6: "∂", 0xF0B7: "•", 0xF0B8: "÷", 0xF0B9: "≠", 0xF0BA: "≡", 0xF0BB: "≈", 0xF0BC: "…",
        0xF0C4: "⊗", 0xF0C5: "⊕", 0xF0C6: "∅", 0xF0C7: "∩", 0xF0C8: "∪", 0xF0C9: "⊃", 0xF0CA: "⊇",
        0xF0CB: "⊄", 0xF0CC: "⊂", 0xF0CD: "⊆", 0xF0CE: "∈", 0xF0CF: "∉", 0xF0D0: "∠", 0xF0D1: "∇",
        0xF0D5: "∏", 0xF0D6: "√", 0xF0D7: "⋅", 0xF0D8: "➢", 0xF0D9: "∧", 0xF0DA: "∨", 0xF0DB: "⇔",
        0xF0DC: "⇐", 0xF0DD: "⇑", 0xF0DE: "⇒", 0xF0DF: "⇓", 0xF0E0: "◊", 0xF0E5: "∑", 0xF0F2: "∫",
        0xF0FC: "✓",
    }  # fmt: skip
    return {chr(cp): ch for cp, ch in sorted(table.items())}


SYMBOL_PUA_MAP: dict[str, str] = _symbol_pua_map()
