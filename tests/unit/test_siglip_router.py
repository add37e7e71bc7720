"""The SigLIP2 visual router on tiny random SigLIP (FixRes: the default checkpoint's architecture)
and Siglip2 (NaFlex) checkpoints built offline."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from tests.support import tiny_models  # noqa: E402
from pagefleet.workers.engines import hf  # noqa: E402
from pagefleet.workers.ladder.siglip import SiglipRouter, VisualVerdict  # noqa: E402
from pagefleet.workers.errors import EngineUnavailable  # noqa: E402
from pagefleet.workers.settings import get_settings  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def one_thread(torch_one_thread: None) -> None:
    """Every test here runs torch on one thread (see tests/conftest.py)."""


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("siglip")
    return {
        "SiglipModel": tiny_models.save_tiny_siglip(str(root / "fixres")),
        "Siglip2Model": tiny_models.save_tiny_siglip2(str(root / "naflex")),
    }


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    root = tmp_path_factory.mktemp("siglip-pages")
    font = ImageFont.load_default(size=24)
    paths = []
    for i, (size, words) in enumerate(
        [
            ((400, 560), "Annual report"),
            ((560, 400), "Chapter one"),
            ((300, 300), "Invoice"),
            ((420, 600), "Table of contents"),
            ((500, 500), ""),
        ]
    ):
        image = Image.new("RGB", size, (255, 255, 255 - 40 * i))
        ImageDraw.Draw(image).text((20, 30), words, font=font, fill="black")
        path = root / f"page-{i}.png"
        image.save(path)
        paths.append(str(path))
    return paths


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    hf.clear_cache()


@pytest.mark.parametrize("architecture", ["SiglipModel", "Siglip2Model"])
def test_classifies_a_batch(
    architecture: str, checkpoints: dict[str, str], images: list[str]
) -> None:
    router = SiglipRouter(model=checkpoints[architecture], batch_size=2)
    assert router.health().available
    verdicts = router.classify(images)
    assert len(verdicts) == len(images)
    assert router.load().class_name == architecture
    for verdict in verdicts:
        assert set(verdict.probs) == {"latin", "ar", "he"}  # the default labels: seed pair + Hebrew
        assert all(0.0 < p < 1.0 for p in verdict.probs.values())
        assert verdict.margin == pytest.approx(verdict.probs["latin"] - verdict.probs["ar"])
        assert verdict.script == ("latin" if verdict.margin > router.threshold else "ar")


@pytest.mark.parametrize("architecture", ["SiglipModel", "Siglip2Model"])
def test_batching_changes_nothing_but_the_batches(
    architecture: str,
    checkpoints: dict[str, str],
    images: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sizes: list[int] = []
    real = SiglipRouter.probabilities

    def spy(self: SiglipRouter, loaded: object, batch: list) -> list[list[float]]:
        sizes.append(len(batch))
        return real(self, loaded, batch)

    monkeypatch.setattr(SiglipRouter, "probabilities", spy)
    batched = SiglipRouter(model=checkpoints[architecture], batch_size=2).classify(images)
    assert sizes == [2, 2, 1]
    one_by_one = SiglipRouter(model=checkpoints[architecture], batch_size=1).classify(images)
    assert sizes[3:] == [1] * len(images)
    for a, b in zip(batched, one_by_one):
        assert a.script == b.script
        assert a.margin == pytest.approx(b.margin, abs=1e-5)


def test_margin_rule_of_seed_003() -> None:
    pair = {
        "prompts": ["this is a photo of English text.", "this is a photo of Arabic text."],
        "labels": ["latin", "ar"],
    }
    router = SiglipRouter(model="unused", threshold=-0.028, **pair)
    assert router.verdict([0.10, 0.12]) == VisualVerdict(
        "latin", pytest.approx(-0.02), {"latin": 0.10, "ar": 0.12}
    )
    assert (
        router.verdict([0.10, 0.13]).script == "ar"
    )  # margin −0.03 ≤ −0.028: the multilingual chain
    assert SiglipRouter(model="unused", threshold=0.02, **pair).verdict([0.30, 0.29]).script == "ar"


def test_more_than_two_labels() -> None:
    router = SiglipRouter(
        model="unused",
        prompts=["English text", "Arabic text", "Hebrew text"],
        labels=["latin", "ar", "he"],
        threshold=0.0,
    )
    verdict = router.verdict([0.2, 0.1, 0.5])
    assert verdict.script == "he" and verdict.margin == pytest.approx(-0.3)
    assert router.verdict([0.6, 0.1, 0.5]).script == "latin"


def test_defaults_come_from_settings() -> None:
    settings = get_settings().ocr.router
    router = SiglipRouter()
    assert router.model_id == settings.siglip_model == "google/siglip2-base-patch16-224"
    assert router.prompts == settings.siglip_prompts and router.labels == settings.siglip_labels
    assert (
        router.threshold == settings.siglip_threshold
        and router.batch_size == settings.siglip_batch_size
    )
    with pytest.raises(ValueError, match="one prompt per label"):
        SiglipRouter(prompts=["only one"], labels=["latin", "ar"])


def test_unreadable_image_gets_no_verdict(
    checkpoints: dict[str, str], images: list[str], tmp_path: Path
) -> None:
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG broken")
    verdicts = SiglipRouter(model=checkpoints["SiglipModel"]).classify(
        [images[0], str(broken), images[1]]
    )
    assert verdicts[1] == VisualVerdict(None, 0.0, {})
    assert verdicts[0].script in {"latin", "ar", "he"} and verdicts[2].script in {
        "latin",
        "ar",
        "he",
    }


def test_loads_once_per_process(checkpoints: dict[str, str], images: list[str]) -> None:
    first = SiglipRouter(model=checkpoints["SiglipModel"])
    first.classify(images[:1])
    second = SiglipRouter(model=checkpoints["SiglipModel"], batch_size=3)
    assert second.load() is first.load()
    assert hf.loaded_keys() == [("AutoModel[siglip]", checkpoints["SiglipModel"], "cpu")]


def test_missing_weights_are_unavailable(
    tmp_path: Path, images: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    router = SiglipRouter()  # google/siglip2-base-patch16-224 is not on this machine
    health = router.health()
    assert not health.available and "not in the local Hugging Face cache" in health.detail
    with pytest.raises(EngineUnavailable, match="siglip2-base-patch16-224"):
        router.classify(images[:1])
    empty = SiglipRouter(model=str(tmp_path))
    assert not empty.health().available


def test_page_images_are_reduced_before_the_processor(tmp_path: Path) -> None:
    """A 300-DPI A4 page reaches the processor box-reduced (short side 448…895 px, aspect kept) and
    the 224-px input it yields is the full image's to within a few levels; small images pass as they are."""
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    from pagefleet.workers.ladder.siglip import THUMB_SIDE, open_thumbnail

    page = Image.new("RGB", (2480, 3508), "white")
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=60)
    for y in range(200, 3300, 120):
        draw.text((200, y), "Annual report, chapter one: 0123456789", font=font, fill="black")
    big, small = tmp_path / "big.png", tmp_path / "small.png"
    page.save(big)
    page.resize((300, 424)).save(small)
    thumb = open_thumbnail(str(big))
    assert THUMB_SIDE <= min(thumb.size) < 2 * THUMB_SIDE and thumb.size == (
        496,
        702,
    )  # 2480/5, ceil(3508/5)
    with Image.open(small) as raw:
        assert open_thumbnail(str(small)).tobytes() == raw.convert("RGB").tobytes()
    processor = SiglipImageProcessorPil(size={"height": 224, "width": 224})
    full = processor(images=[page], return_tensors="pt")["pixel_values"]
    reduced = processor(images=[thumb], return_tensors="pt")["pixel_values"]
    assert (full - reduced).abs().mean().item() < 0.02  # values span [-1, 1]
    (tmp_path / "broken.png").write_bytes(b"\x89PNG not really")
    assert open_thumbnail(str(tmp_path / "broken.png")) is None
