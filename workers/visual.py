"""The visual router's I/O: SigLIP2 zero-shot on GPU workers (batched), Tesseract OSD on CPU.

Returns votes; `routing.chains.decide` makes the decision. A router that fails or cannot decide
leaves an undecided vote (recorded in the page's `router.detail`), never an exception.
"""

from __future__ import annotations

import logging

from routing.chains import VisualVote, siglip_vote
from workers.engines.base import PageImage
from workers.engines.tesseract import detect_script
from workers.errors import EngineError
from workers.settings import Settings

log = logging.getLogger(__name__)
_SIGLIP = None


def _siglip(settings: Settings):
    global _SIGLIP
    if _SIGLIP is None:
        from workers.engines.siglip import SiglipRouter

        _SIGLIP = SiglipRouter()
    return _SIGLIP


def siglip_votes(images: list[PageImage], settings: Settings) -> list[VisualVote]:
    try:
        router = _siglip(settings)
        health = router.health()
        if not health.available:
            return [VisualVote("siglip2", None, None, f"unavailable: {health.detail}") for _ in images]
        verdicts = router.classify([img.path for img in images])
    except (EngineError, ModuleNotFoundError) as exc:
        detail = getattr(exc, "code", type(exc).__name__)
        return [VisualVote("siglip2", None, None, f"failed: {detail}") for _ in images]
    cfg = settings.router
    return [siglip_vote(v.margin, cfg.siglip_threshold, cfg.siglip_labels) for v in verdicts]


def osd_vote(image: PageImage, settings: Settings) -> VisualVote:
    try:
        result = detect_script(image.path, timeout_s=settings.tesseract_timeout_s)
    except EngineError as exc:
        return VisualVote("osd", None, None, f"failed: {exc.code}")
    if result.script is None or result.confidence < settings.router.osd_min_confidence:
        return VisualVote("osd", None, round(result.confidence, 3), f"script={result.raw_script}")
    return VisualVote("osd", result.script, round(result.confidence, 3), f"script={result.raw_script}")


def visual_votes(images: list[PageImage], *, gpu: bool, settings: Settings) -> list[list[VisualVote]]:
    """Votes per image, in the order routers are consulted: SigLIP2 (gpu fleets), then OSD."""
    votes: list[list[VisualVote]] = [[] for _ in images]
    if not images:
        return votes
    if gpu:
        for i, vote in enumerate(siglip_votes(images, settings)):
            votes[i].append(vote)
    for i, image in enumerate(images):
        if not any(v.script for v in votes[i]):
            votes[i].append(osd_vote(image, settings))
    return votes
