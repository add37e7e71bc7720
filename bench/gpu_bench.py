"""GPU smoke benchmark for the router and one VLM engine, with random weights (nothing downloaded).

    python bench/gpu_bench.py                      # cuda, real sizes, < 4 min on an H200
    python bench/gpu_bench.py --device cpu --quick # tiny sizes: checks the script itself here
    python bench/gpu_bench.py --parts e2e profile  # some parts (profile: a VLM decode step); --json FILE

1. Router: a SigLIP model of google/siglip2-base-patch16-224's size (FixRes: vision and text
   towers 768 wide, 12 layers, 224 px, 16-px patches, 256k vocabulary), built from a hand-written
   config. Pages/s of the forward pass (both prompts + a batch of images) at batch sizes 1…64:
   warm-up, cuda synchronize, median of a few runs; plus the CPU cost of preprocessing one page.
   Then the same weights saved as a checkpoint and run through the real `SiglipRouter`
   (from_pretrained onto the device, PIL decode + processor + forward) over 64 page files at
   each batch size: the figure `settings.ocr.router.siglip_batch_size` is chosen from.
2. VLM: a LightOnOCR-2-1B-sized LightOnOcrForConditionalGeneration (Pixtral 24×1024 vision, Qwen3
   28×1024 text, 151,936 vocabulary) with random weights and the byte-level test tokenizer, run
   through the real `lightonocr` engine (processor, batching, stopping criteria) on rendered A4
   pages; generate tokens/s and pages/s with max_new_tokens 256. Random weights decode garbage,
   so the repetition stopper is idled (min_span huge) for the fixed-length runs and left on in
   one extra run, whose tokens/s include its cost. The checkpoint is saved and loaded by the engine
   (from_pretrained, `device_map` onto the GPU); a batch that runs out of memory is a row, not a
   crash: the largest batch that fits and pays is `settings.gpu.vlm.batch_size`'s figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support import tiny_models
from pagefleet.workers.engines import hf  # noqa: E402
from pagefleet.workers.engines.base import PageImage, create  # noqa: E402

ROUTER_BATCHES = (1, 2, 4, 8, 16, 32, 64)
ROUTER_E2E_BATCHES = (1, 8, 16, 32, 64)
ROUTER_E2E_PAGES = 64
IDLE = (
    10**9
)  # min_span that never triggers: random weights loop, the stopper would cut the fixed-length runs
VLM_RUNS = ((1, IDLE), (4, IDLE), (8, IDLE), (16, IDLE), (8, 64))
PROMPTS = ["this is a photo of English text.", "this is a photo of Arabic text."]


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def build_on(device: str, factory: Any) -> Any:
    """Instantiate a model directly on `device` in its inference dtype (fast random init on the GPU)."""
    import torch

    dtype = hf.torch_dtype(device)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = factory()
    finally:
        torch.set_default_dtype(previous)
    return model.eval()


def router_model(device: str, quick: bool) -> tuple[Any, Any, Any]:
    from transformers import SiglipModel
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    tokenizer = tiny_models.siglip_tokenizer()
    if quick:
        sizes = {"hidden": 64, "layers": 2, "heads": 2, "intermediate": 128}
        vocab = len(tokenizer)
    else:
        sizes = {"hidden": 768, "layers": 12, "heads": 12, "intermediate": 3072}
        vocab = 256_000
    config = tiny_models.siglip_config(
        vocab,
        image_size=224,
        patch_size=16,
        pad_id=tokenizer.pad_token_id,
        eos_id=tokenizer.eos_token_id,
        **sizes,
    )
    model = build_on(device, lambda: SiglipModel(config))
    images = SiglipImageProcessorPil(size={"height": 224, "width": 224})
    return model, tokenizer, images


def median_seconds(run: Any, device: str, warmup: int, repeats: int) -> float:
    for _ in range(warmup):
        run()
    sync(device)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        sync(device)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_router(device: str, built: tuple[Any, Any, Any], page: Any) -> dict[str, Any]:
    import torch

    model, tokenizer, images = built
    params = sum(p.numel() for p in model.parameters())
    text = tokenizer(
        PROMPTS, padding="max_length", max_length=64, truncation=True, return_tensors="pt"
    ).to(device)
    prep = median_seconds(lambda: images(images=[page], return_tensors="pt"), "cpu", 1, 3)
    pixel = images(images=[page], return_tensors="pt")["pixel_values"].to(
        device, hf.torch_dtype(device)
    )
    rows = []
    for batch in ROUTER_BATCHES if device.startswith("cuda") else ROUTER_BATCHES[:3]:
        pixels = pixel.expand(batch, -1, -1, -1).contiguous()

        def run() -> None:
            with torch.inference_mode():
                model(input_ids=text["input_ids"], pixel_values=pixels)

        seconds = median_seconds(run, device, warmup=2, repeats=5)
        rows.append({"batch": batch, "seconds": seconds, "pages_per_s": batch / seconds})
    return {"params": params, "preprocess_s_per_page": prep, "rows": rows}


def vlm_loaded(device: str, quick: bool) -> hf.LoadedModel:
    from transformers import LightOnOcrForConditionalGeneration, LightOnOcrProcessor
    from transformers.models.pixtral.image_processing_pil_pixtral import PixtralImageProcessorPil

    tokenizer = tiny_models.lightonocr_tokenizer()
    if quick:
        sizes: dict[str, Any] = {"image_size": 224}
    else:
        sizes = {
            "hidden": 1024,
            "layers": 28,
            "heads": 16,
            "kv_heads": 8,
            "intermediate": 3072,
            "head_dim": 128,
            "vocab_size": 151_936,
            "vision_hidden": 1024,
            "vision_layers": 24,
            "vision_heads": 16,
            "vision_intermediate": 4096,
            "image_size": 1540,
        }
    config = tiny_models.lightonocr_config(tokenizer, **sizes)
    model = build_on(device, lambda: LightOnOcrForConditionalGeneration(config))
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    images = PixtralImageProcessorPil(size={"longest_edge": sizes["image_size"]}, patch_size=14)
    processor = LightOnOcrProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        patch_size=14,
        spatial_merge_size=2,
        chat_template=tiny_models.LIGHTON_TEMPLATE,
    )
    return hf.LoadedModel(
        model, processor, device, type(model).__name__, "bench/lightonocr-random", 0.0
    )


def bench_router_e2e(
    device: str, quick: bool, built: tuple[Any, Any, Any], root: Path, pages: list[PageImage]
) -> dict[str, Any]:
    """The router as the fleet runs it: a checkpoint on disk, SiglipRouter.load() and classify(paths)."""
    from transformers import SiglipProcessor

    from pagefleet.workers.ladder.siglip import SiglipRouter

    model, tokenizer, images = built
    path = root / "siglip-checkpoint"
    model.save_pretrained(path)
    SiglipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(path)
    count = 8 if quick else ROUTER_E2E_PAGES
    paths = [pages[i % len(pages)].path for i in range(count)]
    started = time.perf_counter()
    SiglipRouter(model=str(path), device=device, local_files_only=True).load()
    load_s = time.perf_counter() - started
    rows = []
    for batch in ROUTER_E2E_BATCHES[:3] if quick else ROUTER_E2E_BATCHES:
        router = SiglipRouter(
            model=str(path), batch_size=batch, device=device, local_files_only=True
        )
        router.classify(paths[:batch])  # warm-up at this shape
        sync(device)
        started = time.perf_counter()
        verdicts = router.classify(paths)
        sync(device)
        seconds = time.perf_counter() - started
        rows.append(
            {
                "batch": batch,
                "seconds": seconds,
                "pages_per_s": count / seconds,
                "labelled": sum(v.script is not None for v in verdicts),
            }
        )
    return {"pages": count, "load_s": load_s, "rows": rows}


def vlm_checkpoint(device: str, quick: bool, root: Path) -> tuple[Path, int]:
    """A LightOnOCR-sized random checkpoint saved to disk (the engine loads it like a pulled model)."""
    loaded = vlm_loaded(device, quick)
    params = sum(p.numel() for p in loaded.model.parameters())
    path = root / "lightonocr-checkpoint"
    loaded.model.save_pretrained(path)
    loaded.processor.save_pretrained(path)
    del loaded
    free_cuda(device)
    return path, params


def free_cuda(device: str) -> None:
    import gc

    import torch

    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def vlm_row(
    engine: Any, pages: list[PageImage], batch: int, min_span: int, device: str
) -> dict[str, Any]:
    batch_pages = [pages[i % len(pages)] for i in range(batch)]
    max_new = engine.max_new_tokens
    engine.max_new_tokens = 8
    engine.read(batch_pages, script="latin")  # warm-up: kernels, allocator, the vision tower
    engine.max_new_tokens = max_new
    sync(device)
    started = time.perf_counter()
    outputs = engine.read(batch_pages, script="latin")
    sync(device)
    wall = time.perf_counter() - started
    details = outputs[0].details
    return {
        "batch": batch,
        "stopper": "idle" if min_span >= IDLE else "on",
        "tokens": sum(o.details["tokens"] for o in outputs),
        "gen_tokens_per_s": details["tokens_per_s"],
        "generate_s": details["generate_seconds"],
        "wall_s": wall,
        "pages_per_s": batch / wall,
        "stopped_for_repetition": sum(o.details["repetition_stop"] for o in outputs),
    }


def bench_vlm(device: str, quick: bool, pages: list[PageImage], root: Path) -> dict[str, Any]:
    import torch

    from pagefleet.workers.errors import EngineCrashed

    path, params = vlm_checkpoint(device, quick, root)
    max_new = 16 if quick else 256
    runs = ((1, IDLE), (2, IDLE), (2, 64)) if quick else VLM_RUNS
    rows: list[dict[str, Any]] = []
    load_s = 0.0
    for batch, min_span in runs:
        engine = create(
            "lightonocr",
            model=str(path),
            device=device,
            batch_size=batch,
            max_new_tokens=max_new,
            min_span=min_span,
            max_pixels=1540 * 1540,
            local_files_only=True,
        )
        if not load_s:
            started = time.perf_counter()
            engine.load()
            load_s = time.perf_counter() - started
        try:
            rows.append(vlm_row(engine, pages, batch, min_span, device))
        except (torch.cuda.OutOfMemoryError, EngineCrashed) as e:
            rows.append(
                {
                    "batch": batch,
                    "stopper": "idle" if min_span >= IDLE else "on",
                    "error": str(e)[:160],
                }
            )
            free_cuda(device)
        if device.startswith("cuda"):
            rows[-1]["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
            torch.cuda.reset_peak_memory_stats()
    hf._CACHE.clear()  # the next part's models get the memory
    return {"params": params, "max_new_tokens": max_new, "load_s": load_s, "rows": rows}


def profile_vlm(device: str, quick: bool, pages: list[PageImage], root: Path) -> dict[str, Any]:
    """cProfile of one batch-1 engine read (64 new tokens), beside a bare `generate` on the same inputs."""
    import cProfile
    import io
    import pstats

    import torch

    path, _ = vlm_checkpoint(device, quick, root)
    engine = create(
        "lightonocr",
        model=str(path),
        device=device,
        batch_size=1,
        max_new_tokens=64,
        min_span=IDLE,
        max_pixels=1540 * 1540,
        local_files_only=True,
    )
    engine.read(pages[:1], script="latin")  # load + warm-up
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    engine.read(pages[:1], script="latin")
    profiler.disable()
    engine_s = time.perf_counter() - started
    loaded = engine.load()
    inputs = engine._prepare(loaded, pages[:1], "latin")
    pad = loaded.processor.tokenizer.pad_token_id
    with torch.inference_mode():
        loaded.model.generate(**inputs, max_new_tokens=8, do_sample=False, pad_token_id=pad)
        sync(device)
        started = time.perf_counter()
        loaded.model.generate(
            **inputs, max_new_tokens=64, min_new_tokens=64, do_sample=False, pad_token_id=pad
        )
        sync(device)
    bare_s = time.perf_counter() - started
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
    hf._CACHE.clear()
    return {"engine_s": engine_s, "bare_generate_s": bare_s, "profile": text.getvalue()}


def bench_static(device: str, quick: bool, pages: list[PageImage], root: Path) -> dict[str, Any]:
    """The engine with and without `static_cache` (compiled decoding): seconds of each call, 64 new
    tokens, batch 1 then 8; the first static call of a shape includes its compile."""
    path, _ = vlm_checkpoint(device, quick, root)
    rows = []
    for static in (False, True):
        for batch in (1, 8):
            engine = create(
                "lightonocr",
                model=str(path),
                device=device,
                batch_size=batch,
                max_new_tokens=64,
                min_span=IDLE,
                max_pixels=1540 * 1540,
                local_files_only=True,
                static_cache=static,
            )
            engine.load()
            for call in range(3):
                sync(device)
                started = time.perf_counter()
                out = engine.read([pages[i % len(pages)] for i in range(batch)], script="latin")
                sync(device)
                rows.append(
                    {
                        "static": static,
                        "batch": batch,
                        "call": call + 1,
                        "seconds": time.perf_counter() - started,
                        "tokens": sum(o.details["tokens"] for o in out),
                    }
                )
                print(
                    f"static={static} batch={batch} call={call + 1}: {rows[-1]['seconds']:.2f}s",
                    flush=True,
                )
    hf._CACHE.clear()
    return {"rows": rows}


def render_pages(root: Path, count: int, quick: bool) -> list[PageImage]:
    """A4 pages at 150 DPI (quick: a quarter of that) with lines of text."""
    from PIL import Image, ImageDraw, ImageFont

    width, height = (310, 438) if quick else (1240, 1754)
    font = ImageFont.load_default(size=max(10, width // 40))
    pages = []
    for number in range(1, count + 1):
        image = Image.new("RGB", (width, height), "white")
        draw = ImageDraw.Draw(image)
        for line in range(0, height - 60, max(14, height // 40)):
            words = f"Page {number}, line {line}: the quick brown fox 0123456789"
            draw.text((width // 12, 40 + line), words, font=font, fill="black")
        path = root / f"page-{number}.png"
        image.save(path)
        pages.append(PageImage(str(path), number, 150))
    return pages


def environment(device: str) -> dict[str, Any]:
    import torch
    import transformers

    info = {"torch": torch.__version__, "transformers": transformers.__version__, "device": device}
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def recommend(
    results: dict[str, Any], gpu_gib: float, share: float = 0.85, room: float = 0.8
) -> dict[str, int]:
    """Batch settings from a run: the smallest batch within `share` of the best pages/s — for the VLM
    among fixed-length (stopper idle) rows that ran and peaked under `room` of the GPU's memory."""
    candidates = {
        "PAGEFLEET_OCR__ROUTER__SIGLIP_BATCH_SIZE": results.get("router_e2e", {}).get("rows", []),
        "PAGEFLEET_GPU__VLM__BATCH_SIZE": [
            r
            for r in results.get("vlm", {}).get("rows", [])
            if "error" not in r
            and r["stopper"] == "idle"
            and r.get("peak_gib", 0.0) <= room * gpu_gib
        ],
    }
    picks: dict[str, int] = {}
    for name, rows in candidates.items():
        if rows:
            best = max(r["pages_per_s"] for r in rows)
            picks[name] = min(r["batch"] for r in rows if r["pages_per_s"] >= share * best)
    return picks


def print_batches(
    title: str, rows: list[dict[str, Any]], seconds: str, scale: float, width: int, digits: int
) -> None:
    """One router table: batch, its time (`seconds` column, times `scale`), pages/s."""
    print(f"\n{title}")
    print(f"{'batch':>6} {seconds:>{width}} {'pages/s':>10}")
    for row in rows:
        print(
            f"{row['batch']:>6} {row['seconds'] * scale:>{width}.{digits}f} {row['pages_per_s']:>10.1f}"
        )


def print_report(results: dict[str, Any]) -> None:
    print(f"environment: {results['environment']}")
    if "router" in results:
        router = results["router"]
        print_batches(
            f"router (SigLIP, {router['params'] / 1e6:.1f}M params); CPU preprocessing "
            f"{router['preprocess_s_per_page'] * 1000:.1f} ms/page",
            router["rows"],
            "ms/batch",
            1000,
            10,
            2,
        )
    if "router_e2e" in results:
        e2e = results["router_e2e"]
        print_batches(
            f"router end to end (SiglipRouter.classify on {e2e['pages']} page files; load "
            f"{e2e['load_s']:.1f}s)",
            e2e["rows"],
            "s",
            1,
            8,
            2,
        )
    if "vlm" in results:
        print_vlm(results["vlm"])
    if "profile" in results:
        prof = results["profile"]
        print(
            f"\nvlm decode, batch 1, 64 tokens: engine {prof['engine_s']:.2f}s, bare generate "
            f"{prof['bare_generate_s']:.2f}s\n{prof['profile']}"
        )
    print(f"\ntotal {results['seconds']:.1f}s")
    picks = results.get("recommended") or {}
    if picks:
        print("recommended: " + " ".join(f"{k}={v}" for k, v in picks.items()))


def print_vlm(engine: dict[str, Any]) -> None:
    print(
        f"\nvlm (lightonocr engine, {engine['params'] / 1e6:.1f}M params, "
        f"max_new_tokens {engine['max_new_tokens']}, load {engine['load_s']:.1f}s)"
    )
    print(
        f"{'batch':>6} {'stopper':>8} {'tokens':>7} {'gen tok/s':>10} {'gen s':>7} {'wall s':>7} "
        f"{'pages/s':>8} {'loops':>6} {'peak GiB':>8}"
    )
    for row in engine["rows"]:
        if "error" in row:
            print(f"{row['batch']:>6} {row['stopper']:>8} failed: {row['error']}")
            continue
        print(
            f"{row['batch']:>6} {row['stopper']:>8} {row['tokens']:>7} {row['gen_tokens_per_s']:>10.1f} "
            f"{row['generate_s']:>7.2f} {row['wall_s']:>7.2f} {row['pages_per_s']:>8.2f} "
            f"{row['stopped_for_repetition']:>6} {row.get('peak_gib', float('nan')):>8.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument(
        "--quick", action="store_true", help="tiny model sizes (smoke-test the script on a CPU)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["router", "e2e", "vlm"],
        choices=["router", "e2e", "vlm", "profile", "static"],
        help="what to run (default: all but profile)",
    )
    args = parser.parse_args(argv)
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: use --device cpu --quick", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pagefleet-bench-") as tmp:
        pages = render_pages(Path(tmp), 8, args.quick)
        from PIL import Image

        with Image.open(pages[0].path) as first:
            page = first.convert("RGB")
        results: dict[str, Any] = {"environment": environment(args.device)}
        built = (
            router_model(args.device, args.quick) if {"router", "e2e"} & set(args.parts) else None
        )
        if "router" in args.parts:
            results["router"] = bench_router(args.device, built, page)
            save(args.json, results)
        if "e2e" in args.parts:
            results["router_e2e"] = bench_router_e2e(
                args.device, args.quick, built, Path(tmp), pages
            )
            save(args.json, results)
        del built
        free_cuda(args.device)
        if "vlm" in args.parts:
            results["vlm"] = bench_vlm(args.device, args.quick, pages, Path(tmp))
            save(args.json, results)
        if "profile" in args.parts:
            results["profile"] = profile_vlm(args.device, args.quick, pages, Path(tmp))
        if "static" in args.parts:
            results["static"] = bench_static(args.device, args.quick, pages, Path(tmp))
    gpu_gib = (
        torch.cuda.get_device_properties(0).total_memory / 2**30
        if args.device.startswith("cuda")
        else 0.0
    )
    results["recommended"] = recommend(results, gpu_gib) if gpu_gib else {}
    if args.device.startswith("cuda"):
        results["environment"]["peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    results["seconds"] = time.perf_counter() - started
    save(args.json, results)
    print_report(results)
    return 0


def save(path: Path | None, results: dict[str, Any]) -> None:
    """Written after each part, so a run cut short still leaves what it measured."""
    if path:
        path.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    sys.exit(main())
