"""The visual router's I/O: SigLIP2 zero-shot on GPU workers (batched), Tesseract OSD on CPU.

Returns votes; `pagefleet.routing.chains.decide` makes the decision. A router that fails or cannot decide
leaves an undecided vote (recorded in the page's `router.detail`), never an exception.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pagefleet.routing.chains import VisualVote
from pagefleet.routing.scripts import ScriptStats, classify_text_layer
from pagefleet.workers.engines.base import PageImage
from pagefleet.workers.engines.tesseract import OsdResult, TesseractEngine, bounded, detect_script
from pagefleet.workers.errors import EngineError
from pagefleet.workers.settings import Settings

log = logging.getLogger(__name__)
_SIGLIP = None
PROBE_LANGS = ("heb", "ara", "eng")


def _siglip(settings: Settings):
    global _SIGLIP
    if _SIGLIP is None:
        from pagefleet.workers.ladder.siglip import SiglipRouter

        _SIGLIP = SiglipRouter()
    return _SIGLIP


def siglip_votes(images: list[PageImage], settings: Settings) -> list[VisualVote]:
    try:
        router = _siglip(settings)
        health = router.health()
        if not health.available:
            return [
                VisualVote("siglip2", None, None, f"unavailable: {health.detail}") for _ in images
            ]
        verdicts = router.classify([img.path for img in images])
    except (EngineError, ModuleNotFoundError) as exc:
        detail = getattr(exc, "code", type(exc).__name__)
        return [VisualVote("siglip2", None, None, f"failed: {detail}") for _ in images]
    votes = []
    for v in verdicts:
        if v.script is None:  # the image could not be classified: undecided, never the first label
            votes.append(VisualVote("siglip2", None, None, "unclassified"))
        else:
            votes.append(
                VisualVote("siglip2", v.script, round(v.margin, 5), f"threshold={router.threshold}")
            )
    return votes


_OSD_CACHE: dict[str, OsdResult] = {}


def _osd(image: PageImage, settings: Settings) -> OsdResult:
    """OSD once per rendered image (orientation and script come from the same pass)."""
    if image.path not in _OSD_CACHE:
        if len(_OSD_CACHE) > 256:
            _OSD_CACHE.clear()
        # no later than the task's deadline where it keeps one (a gpu worker's task threads)
        timeout_s = bounded(settings.ocr.tesseract_timeout_s)
        _OSD_CACHE[image.path] = detect_script(image.path, timeout_s=timeout_s, dpi=image.dpi)
    return _OSD_CACHE[image.path]


def orientation(image: PageImage, settings: Settings) -> int:
    """Degrees to turn a scan upright (0 when upright or unsure)."""
    try:
        result = _osd(image, settings)
    except EngineError:
        return 0
    if (
        result.rotate
        and result.orientation_confidence >= settings.ocr.router.min_orientation_confidence
    ):
        return result.rotate
    return 0


def forget(image: PageImage) -> None:
    _OSD_CACHE.pop(image.path, None)


def osd_vote(image: PageImage, settings: Settings) -> VisualVote:
    """Tesseract OSD; where OSD gives up (it often says "too few characters" on a full Hebrew
    page), a half-resolution recognition probe in every script, classified by Unicode ranges."""
    try:
        result = _osd(image, settings)
    except EngineError as exc:
        return probe_vote(image, settings, f"osd failed: {exc.code}")
    floor = (
        settings.ocr.router.osd_min_confidence_latin
        if result.script == "latin"
        else settings.ocr.router.osd_min_confidence
    )
    if result.script is None or result.confidence < floor:
        return probe_vote(
            image, settings, f"osd script={result.raw_script} conf={result.confidence:.2f}"
        )
    return VisualVote(
        "osd", result.script, round(result.confidence, 3), f"script={result.raw_script}"
    )


def probe_vote(image: PageImage, settings: Settings, why: str) -> VisualVote:
    import pymupdf

    probe_png = str(Path(image.path).with_suffix(".probe.png"))
    try:
        pix = pymupdf.Pixmap(image.path)
        shrink = image.dpi >= 250  # a half-resolution probe, never below 125 DPI
        if shrink:
            pix.shrink(1)
        pix.save(probe_png)
        probe = TesseractEngine(
            "+".join(PROBE_LANGS), deskew=False, coverage=False
        )  # a script probe: one pass
        if not probe.health().available:
            return VisualVote("osd", None, None, f"{why}; probe unavailable")
        probe_dpi = image.dpi // 2 if shrink else image.dpi
        text = probe.read([PageImage(probe_png, image.page, max(probe_dpi, 72))], script="default")[
            0
        ].text
    except (EngineError, RuntimeError, ValueError) as exc:
        return VisualVote("osd", None, None, f"{why}; probe failed: {exc}")
    finally:
        Path(probe_png).unlink(missing_ok=True)
    script, margin = script_of_reading(text)
    if script is None:
        return VisualVote("osd", None, margin, f"{why}; probe undecided")
    return VisualVote("osd", script, margin, f"{why}; probe script={script}")


def script_of_reading(text: str) -> tuple[str | None, float | None]:
    """The script an OCR reading is in (a mixed RTL+Latin page: its RTL script), with the
    classifier's margin; None when it names none. The probe and the read-first router use it."""
    decision = classify_text_layer(text)
    return decision.script or _mixed_rtl(decision.stats), decision.margin


def _mixed_rtl(stats: ScriptStats) -> str | None:
    """A mixed Hebrew+Latin (or Arabic+Latin) page: the RTL script's chain reads its Latin too
    (heb+eng, ara+eng), the three-language default would mix Arabic into Hebrew and back."""
    for rtl, other in (("he", "ar"), ("ar", "he")):
        if stats.share(rtl) >= 0.15 and getattr(stats, other) <= 0.2 * getattr(stats, rtl):
            return rtl
    return None


def visual_votes(
    images: list[PageImage], *, gpu: bool, settings: Settings
) -> list[list[VisualVote]]:
    """Votes per image, in the order routers are consulted: SigLIP2 (gpu fleets), then OSD."""
    votes: list[list[VisualVote]] = [[] for _ in images]
    if not images:
        return votes
    if gpu:
        for i, vote in enumerate(siglip_votes(images, settings)):
            votes[i].append(vote)
            if vote.script == "latin" and settings.ocr.router.confirm_latin:
                check = osd_vote(images[i], settings)
                if check.script in (
                    "he",
                    "ar",
                ):  # the CPU router sees RTL: it decides, SigLIP2 is overruled
                    votes[i].insert(0, check)
    for i, image in enumerate(images):
        if not any(v.script for v in votes[i]):
            votes[i].append(osd_vote(image, settings))
    return votes
