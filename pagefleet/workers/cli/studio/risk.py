"""Which pages a reviewer should look at first. Pure functions over `document.json` page dicts.

Risk ranks: 0 refused (route `review_required`/`failed`, or `needs_review`), 1 warnings (repairs,
blank pages, …), 2 low OCR confidence, 3 nothing to see. Within a rank the least confident and
then the lowest page number come first (pages with nothing
to see in page order). A page is *unresolved* while it is risky (rank < 3) and
holds no reviewer decision. *Next flagged* is the next refused page in page order, wrapping round.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

REFUSED_ROUTES = ("review_required", "failed")
RANK_NAMES = ("refused", "warnings", "low confidence", "ok")


def is_refused(page: dict[str, Any]) -> bool:
    return bool(page.get("needs_review")) or page.get("route") in REFUSED_ROUTES


def rank(page: dict[str, Any], low_confidence: float) -> int:
    if is_refused(page):
        return 0
    if (page.get("quality") or {}).get("warnings"):
        return 1
    confidence = page.get("ocr_confidence")
    if confidence is not None and confidence < low_confidence:
        return 2
    return 3


def risk_order(pages: list[dict[str, Any]], low_confidence: float) -> list[dict[str, Any]]:
    def key(page: dict[str, Any]) -> tuple[int, float, int]:
        confidence, r = page.get("ocr_confidence"), rank(page, low_confidence)
        return r, 101.0 if confidence is None or r == 3 else float(confidence), int(page["number"])

    return sorted(pages, key=key)


def unresolved(page: dict[str, Any], decisions: dict[str, Any], low_confidence: float) -> bool:
    return rank(page, low_confidence) < 3 and str(page["number"]) not in decisions


def next_flagged(pages: list[dict[str, Any]], current: int | None, step: int = 1) -> int | None:
    """The next (step=1) or previous (step=-1) refused page after `current`, wrapping round."""
    flagged = sorted(int(p["number"]) for p in pages if is_refused(p))
    if not flagged:
        return None
    if current is None:
        return flagged[0] if step > 0 else flagged[-1]
    after = [n for n in flagged if (n > current if step > 0 else n < current)]
    if after:
        return after[0] if step > 0 else after[-1]
    return flagged[0] if step > 0 else flagged[-1]


def page_stats(
    pages: list[dict[str, Any]], decisions: dict[str, Any], low_confidence: float
) -> dict[str, Any]:
    ranks = Counter(RANK_NAMES[rank(p, low_confidence)] for p in pages)
    verdicts = Counter(
        str(d["decision"] if isinstance(d, dict) else d.decision) for d in decisions.values()
    )
    confidences = [float(p["ocr_confidence"]) for p in pages if p.get("ocr_confidence") is not None]
    return {
        "pages": len(pages),
        "routes": dict(sorted(Counter(str(p.get("route")) for p in pages).items())),
        "scripts": dict(sorted(Counter(str(p.get("script")) for p in pages).items())),
        "risk": {name: ranks.get(name, 0) for name in RANK_NAMES},
        "approved": verdicts.get("approve", 0),
        "flagged": verdicts.get("flag", 0),
        "rejected": verdicts.get("reject", 0),
        "unresolved": sum(unresolved(p, decisions, low_confidence) for p in pages),
        "mean_ocr_confidence": round(sum(confidences) / len(confidences), 1)
        if confidences
        else None,
    }
