"""VLM engines on tiny random checkpoints of the real architectures, built offline in tmp dirs.

`dots` is tested on a Qwen2.5-VL-architecture stand-in with dots.ocr's tokens: the real dots.ocr
ships its own modeling code (NaViT vision + Qwen2, trust_remote_code), which cannot be had offline.
One test lays the stand-in out like the hub checkpoint (model_type `dots_ocr`, auto_map, modeling
files in the directory) to exercise the trust_remote_code path.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from PIL import Image, ImageDraw, ImageFont  # noqa: E402

from tests.support import tiny_models  # noqa: E402
from pagefleet.workers.fleet import deadline  # noqa: E402
from pagefleet.workers.engines import batching, hf, repetition, vlm, vlm_load, vlm_request  # noqa: E402
from pagefleet.workers.engines.base import PageImage, create  # noqa: E402
from pagefleet.workers.errors import EngineTimeout, EngineUnavailable, TaskDeadline  # noqa: E402
from pagefleet.workers.settings import get_settings  # noqa: E402

BUILDERS = {
    "qwen": tiny_models.save_tiny_qwen2_5_vl,
    "dots": tiny_models.save_tiny_dots,
    "lightonocr": tiny_models.save_tiny_lightonocr,
}
EXPECTED_CLASS = {
    "qwen": "Qwen2_5_VLForConditionalGeneration",
    "dots": "AutoModelForImageTextToText[Qwen2_5_VLForConditionalGeneration]",
    "lightonocr": "LightOnOcrForConditionalGeneration",
}


class ModelDirs:
    """Tiny checkpoints, built on first use and shared by the module's tests."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.built: dict[tuple[str, bool], str] = {}

    def __getitem__(self, key: tuple[str, bool]) -> str:
        if key not in self.built:
            name, looping = key
            path = self.root / f"{name}-{'loop' if looping else 'plain'}"
            self.built[key] = BUILDERS[name](str(path), looping=looping)
        return self.built[key]


@pytest.fixture(scope="module", autouse=True)
def one_thread(torch_one_thread: None) -> None:
    """Every test here runs torch on one thread (see tests/conftest.py)."""


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> ModelDirs:
    return ModelDirs(tmp_path_factory.mktemp("vlm-models"))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> list[PageImage]:
    root = tmp_path_factory.mktemp("vlm-pages")
    font = ImageFont.load_default(size=28)
    result = []
    for number, (size, words) in enumerate(
        [((420, 300), "Invoice 2024"), ((300, 420), "Total amount"), ((360, 360), "Hello world")],
        start=1,
    ):
        image = Image.new("RGB", size, "white")
        ImageDraw.Draw(image).text((20, 40), words, font=font, fill="black")
        path = root / f"page-{number}.png"
        image.save(path)
        result.append(PageImage(str(path), number, 150))
    return result


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    hf.clear_cache()


# ---------------------------------------------------------------- repetition stopping, synthetic ids


def test_repetition_period_finds_short_loops() -> None:
    policy = repetition.RepetitionPolicy()
    assert repetition.repetition_period([5] * 64, policy) == 1
    assert repetition.repetition_period(list(range(100)) + [7, 8, 9] * 22, policy) == 3
    unit = list(range(200, 232))  # a 32-token unit must repeat over 4 × 32 = 128 tokens
    assert repetition.repetition_period(unit * 3, policy) is None
    assert repetition.repetition_period(unit * 4, policy) == 32


def test_repetition_period_ignores_real_text_short_tails_and_padding() -> None:
    policy = repetition.RepetitionPolicy()
    assert repetition.repetition_period(list(range(300)), policy) is None
    assert repetition.repetition_period([5] * 63, policy) is None
    assert repetition.repetition_period([1, 2] * 40, policy, ignore=[2]) is None
    assert repetition.repetition_period([9] * 10 + [1, 2, 3, 4] * 16, policy) == 4
    assert (
        repetition.repetition_period(
            [5] * 20, repetition.RepetitionPolicy(max_period=4, min_span=16, min_repeats=2)
        )
        == 1
    )


def test_stopping_criteria_flags_only_the_looping_rows() -> None:
    prompt = [3, 4] * 50  # a repetitive prompt must not count
    rows = [
        prompt + [7, 8] * 40,  # loops with period 2
        prompt + list(range(10, 90)),  # fresh text
        prompt + [11] * 10 + [0] * 70,  # finished: padded with the pad id 0
    ]
    criteria = repetition.make_repetition_criteria(
        len(prompt), repetition.RepetitionPolicy(), ignore_ids=[0]
    )
    done = criteria(torch.tensor(rows), None)
    assert done.tolist() == [True, False, False]
    assert criteria.periods == {0: 2}
    short = repetition.make_repetition_criteria(
        len(prompt), repetition.RepetitionPolicy(), ignore_ids=[0]
    )
    assert short(torch.tensor([r[: len(prompt) + 30] for r in rows]), None).tolist() == [
        False,
        False,
        False,
    ]


def test_stopping_criteria_keeps_a_row_stopped() -> None:
    criteria = repetition.make_repetition_criteria(
        0, repetition.RepetitionPolicy(max_period=2, min_span=8, min_repeats=2)
    )
    assert criteria(torch.tensor([[1] * 8]), None).tolist() == [True]
    assert criteria(torch.tensor([[1] * 8 + [2]]), None).tolist() == [True]


def test_looping_model_is_stopped_by_the_criteria(
    models: ModelDirs, pages: list[PageImage]
) -> None:
    engine = create(
        "lightonocr", model=models[("lightonocr", True)], max_new_tokens=300, batch_size=3
    )
    outputs = engine.read(pages, script="latin")
    assert len(outputs) == 3
    for out in outputs:
        assert out.details["finish_reason"] == "repetition"
        assert out.details["repetition_stop"] is True
        assert out.details["repetition_period"] == 1
        assert 64 <= out.details["tokens"] <= 66  # checked every 2 steps, far below 300
        assert out.text and set(out.text) == {out.text[0]}


# ---------------------------------------------------------------- batched generate per architecture


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_engine_reads_a_batch_of_pages(
    name: str, models: ModelDirs, pages: list[PageImage]
) -> None:
    engine = create(name, model=models[(name, False)], max_new_tokens=8, batch_size=2)
    assert engine.health().available
    outputs = engine.read(pages, script="he")
    assert [out.engine for out in outputs] == [name] * 3
    assert [out.details["batch_size"] for out in outputs] == [2, 2, 1]
    for out in outputs:
        assert isinstance(out.text, str)
        assert 1 <= out.details["tokens"] <= 8
        assert out.details["finish_reason"] in {"stop", "length"}
        assert out.details["class"] == EXPECTED_CLASS[name]
        assert out.details["device"] == "cpu"
        assert out.details["tokens_per_s"] > 0
        assert out.seconds > 0


def test_batched_and_single_reads_agree(models: ModelDirs, pages: list[PageImage]) -> None:
    """Left padding keeps batched greedy decoding equal to one page at a time."""
    model = models[("qwen", False)]
    batched = create("qwen", model=model, max_new_tokens=6, batch_size=3).read(
        pages, script="latin"
    )
    single = create("qwen", model=model, max_new_tokens=6, batch_size=1).read(pages, script="latin")
    assert [o.text for o in batched] == [o.text for o in single]


def test_concurrent_reads_share_one_generate_call(
    models: ModelDirs, pages: list[PageImage]
) -> None:
    """A gpu worker's task threads: reads waiting while a generate call runs go together into the
    next one (`pagefleet.workers.engines.batching`), each thread gets its own page's reading back."""
    model = models[("qwen", False)]
    single = create("qwen", model=model, max_new_tokens=6, batch_size=1).read(pages, script="latin")
    engine = create("qwen", model=model, max_new_tokens=6, batch_size=4)
    entered, opened = threading.Event(), threading.Event()
    real = engine._read_pages

    def first_call_held(loaded: object, items: list[PageImage], script: str) -> list[object]:
        if not entered.is_set():
            entered.set()
            assert opened.wait(60)
        return real(loaded, items, script)

    engine._read_pages = first_call_held  # type: ignore[method-assign]
    with ThreadPoolExecutor(len(pages)) as pool:
        futures = [pool.submit(engine.read, [pages[0]], script="latin")]
        assert entered.wait(60)
        futures += [pool.submit(engine.read, [page], script="latin") for page in pages[1:]]
        for _ in range(3000):
            with batching.BATCHES._cond:
                if sum(map(len, batching.BATCHES._queues.values())) >= len(pages) - 1:
                    break
            time.sleep(0.01)
        opened.set()
        outputs = [f.result(timeout=120) for f in futures]
    assert [len(o) for o in outputs] == [1] * len(pages)
    assert [o[0].text for o in outputs] == [o.text for o in single]
    rest = len(pages) - 1
    assert [o[0].details["batch_size"] for o in outputs] == [1] + [rest] * rest


def test_prompts_follow_the_model_cards() -> None:
    assert vlm_request.ocr_prompt("lightonocr", "he") is None  # LightOnOCR reads the image alone
    assert vlm_request.ocr_prompt("dots", "ar") == "Extract the text content from this image."
    assert vlm_request.ocr_prompt("qwen", "latin") == "Read all the text in the image."
    assert "Hebrew" in (vlm_request.ocr_prompt("qwen", "he") or "")
    assert "Arabic" in (vlm_request.ocr_prompt("qwen", "ar") or "")


def test_model_ids_come_from_settings_variant_or_option() -> None:
    settings = get_settings().gpu.vlm
    assert create("lightonocr").model_id == settings.lightonocr_model
    assert create("dots").model_id == settings.dots_model
    assert create("qwen").model_id == settings.qwen_model
    variant = create("qwen:Qwen/Qwen2.5-VL-3B-Instruct")
    assert (
        variant.model_id == "Qwen/Qwen2.5-VL-3B-Instruct"
        and variant.label == "qwen:Qwen/Qwen2.5-VL-3B-Instruct"
    )
    assert create("qwen", model="/models/q", max_new_tokens=32).max_new_tokens == 32


# ---------------------------------------------------------------- load once, fail clearly


def test_model_loads_once_per_process(
    models: ModelDirs, pages: list[PageImage], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    real = vlm_load.load_model

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(vlm, "load_model", counting)
    first = create("qwen", model=models[("qwen", False)], max_new_tokens=2)
    first.read(pages[:1], script="latin")
    second = create("qwen", model=models[("qwen", False)], max_new_tokens=2)
    second.read(pages[1:2], script="latin")
    assert len(calls) == 1
    assert first.load() is second.load()
    assert hf.loaded_keys() == [
        ("Qwen2_5_VLForConditionalGeneration", models[("qwen", False)], "cpu")
    ]


def test_missing_local_checkpoint_is_unavailable(tmp_path: Path, pages: list[PageImage]) -> None:
    engine = create("qwen", model=str(tmp_path / "no-such-model"))
    health = engine.health()
    assert not health.available and "neither a local directory nor a hub id" in health.detail
    with pytest.raises(EngineUnavailable, match="cannot load"):
        engine.read(pages[:1], script="latin")
    assert hf.loaded_keys() == []


def test_uncached_hub_model_is_unavailable_and_never_downloaded(
    tmp_path: Path, pages: list[PageImage], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    engine = create("lightonocr")  # lightonai/LightOnOCR-2-1B, not on this machine
    health = engine.health()
    assert not health.available and "not in the local Hugging Face cache" in health.detail
    with pytest.raises(EngineUnavailable, match="LightOnOCR-2-1B"):
        engine.read(pages[:1], script="latin")


def test_directory_without_weights_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    health = create("dots", model=str(tmp_path)).health()
    assert not health.available and "no weight files" in health.detail


def test_unknown_architecture_needs_remote_code(tmp_path: Path, pages: list[PageImage]) -> None:
    """The hub dots.ocr says model_type `dots_ocr`: only its own code (trust_remote_code) loads it."""
    (tmp_path / "config.json").write_text(
        '{"model_type": "dots_ocr", "architectures": ["DotsOCRForCausalLM"]}'
    )
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(EngineUnavailable, match="trust_remote_code"):
        create("dots", model=str(tmp_path), trust_remote_code=False).read(pages[:1], script="ar")
    with pytest.raises(
        EngineUnavailable, match="cannot load"
    ):  # no modeling code shipped in the dir
        create("dots", model=str(tmp_path)).read(pages[:1], script="ar")


def test_dots_hub_layout_loads_through_trust_remote_code(
    tmp_path: Path, pages: list[PageImage], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like rednote-hilab/dots.ocr: model_type `dots_ocr`, auto_map to modeling code in the checkpoint."""
    import transformers.dynamic_module_utils as dynamic

    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(tmp_path / "hf-modules"))  # not ~/.cache
    monkeypatch.setattr(sys, "path", list(sys.path))
    path = tiny_models.save_tiny_dots(str(tmp_path / "dots-hub-layout"), remote_code=True)
    with pytest.raises(EngineUnavailable, match="trust_remote_code"):
        create("dots", model=path, trust_remote_code=False).read(pages[:1], script="ar")
    outputs = create("dots", model=path, max_new_tokens=4, batch_size=2).read(pages, script="ar")
    assert [o.details["class"] for o in outputs] == [
        "AutoModelForCausalLM[remote:DotsOCRForCausalLM]"
    ] * 3
    assert all(1 <= o.details["tokens"] <= 4 for o in outputs)


def test_generation_past_its_time_budget_times_out(
    models: ModelDirs, pages: list[PageImage]
) -> None:
    engine = create(
        "qwen", model=models[("qwen", True)], max_new_tokens=500, min_span=10_000, timeout_s=0.001
    )
    with pytest.raises(EngineTimeout, match="generation passed"):
        engine.read(pages[:2], script="latin")


def test_generation_stops_at_the_task_deadline(models: ModelDirs, pages: list[PageImage]) -> None:
    """A task on a thread (pagefleet.workers.fleet.deadline): generate gets max_time up to the deadline, and a page
    cut there is the task's time limit, not the engine's timeout."""
    engine = create("qwen", model=models[("qwen", True)], max_new_tokens=2000, min_span=10_000)
    with deadline.until(time.monotonic() + 0.3), pytest.raises(TaskDeadline, match="time limit"):
        engine.read(pages[:2], script="latin")
    with deadline.until(time.monotonic() - 1), pytest.raises(TaskDeadline, match="on its pages"):
        engine.read(pages[:1], script="latin")  # past already: no generate call at all
    kwargs = engine.generate_options("cpu", None, 0)
    assert "max_time" not in kwargs  # no deadline, no timeout_s: generation is not cut short
    with deadline.until(time.monotonic() + 30):
        assert 29 < engine.generate_options("cpu", None, 0)["max_time"] <= 30


def test_static_cache_is_opt_in_and_cuda_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """`static_cache` (compiled decoding, measured on an H200, docs/benchmarks/gpu.md) reaches `generate` only on CUDA."""
    from pagefleet.workers.engines.base import create
    from pagefleet.workers.settings import get_settings

    assert get_settings().gpu.vlm.static_cache is False
    plain = create("lightonocr", model="unused", timeout_s=30)
    assert "cache_implementation" not in plain.generate_options("cuda", object(), 0)
    static = create("lightonocr", model="unused", static_cache=True)
    assert static.generate_options("cuda:0", object(), 0)["cache_implementation"] == "static"
    assert "cache_implementation" not in static.generate_options("cpu", object(), 0)
    assert plain.generate_options("cpu", object(), 0)["max_time"] == 30.0
    monkeypatch.setenv("PAGEFLEET_GPU__VLM__STATIC_CACHE", "true")
    get_settings.cache_clear()
    try:
        assert create("lightonocr", model="unused").static_cache is True
    finally:
        monkeypatch.delenv("PAGEFLEET_GPU__VLM__STATIC_CACHE")
        get_settings.cache_clear()
