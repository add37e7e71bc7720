"""The CPU visual router on real rendered scans with real Tesseract: OSD, the recognition probe
where OSD gives up, and the guard that keeps RTL pages away from English-only chains."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from pagefleet.routing.chains import VisualVote, decide
from pagefleet.workers.ladder import visual
from pagefleet.workers.engines.base import PageImage
from pagefleet.workers.settings import get_settings

pytestmark = pytest.mark.slow


def _png(pdf: Path, out: Path) -> PageImage:
    with pymupdf.open(pdf) as doc:
        doc[0].get_pixmap(dpi=300, colorspace=pymupdf.csGRAY).save(out)
    return PageImage(str(out), 1, 300)


@pytest.fixture(scope="module")
def scans(fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, PageImage]:
    tmp = tmp_path_factory.mktemp("scans")
    names = ("hebrew", "arabic", "english", "mixed_hebrew_english")
    return {s: _png(fixtures_dir / f"image_only_{s}_scan.pdf", tmp / f"{s}.png") for s in names}


@pytest.mark.parametrize(
    "name, script",
    [("hebrew", "he"), ("arabic", "ar"), ("english", "latin"), ("mixed_hebrew_english", "he")],
)
def test_cpu_router_finds_the_script(scans: dict[str, PageImage], name: str, script: str) -> None:
    vote = visual.osd_vote(scans[name], get_settings())
    assert vote.source == "osd" and vote.script == script, vote


def test_siglip_latin_on_a_hebrew_page_is_overruled(
    scans: dict[str, PageImage], monkeypatch: pytest.MonkeyPatch
) -> None:
    # stand-in for the SigLIP2 model (no weights here): it wrongly says "latin"
    monkeypatch.setattr(
        visual,
        "siglip_votes",
        lambda images, settings: [VisualVote("siglip2", "latin", 0.1)] * len(images),
    )
    votes = visual.visual_votes(
        [scans["hebrew"], scans["english"]], gpu=True, settings=get_settings()
    )
    chains = get_settings().ocr.chains.model_dump()
    hebrew = decide(None, None, votes[0], chains, gpu=True)
    english = decide(None, None, votes[1], chains, gpu=True)
    assert (hebrew.source, hebrew.script) == ("osd", "he") and "tesseract:heb+eng" in hebrew.chain
    assert (english.source, english.script) == ("siglip2", "latin")
