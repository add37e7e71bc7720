"""The fleet's gpu queue on a GPU: the fleet `pagefleet run --gpu` starts (a real Redis, a
split/collect, a cpu and a gpu Celery worker; the gpu worker on task threads, or `--pool prefork`
× 1) reads scanned documents with the SigLIP router and the lightonocr engine. Random weights
of the real sizes (nothing downloaded), saved as checkpoints and loaded by the worker exactly like
pulled models.

    python bench/gpu_fleet.py                        # cuda: LightOnOCR-2-1B / siglip2-base sizes
    python bench/gpu_fleet.py --device cpu --quick   # tiny models and pages: the script itself (a test runs it)

It checks, and prints as a table:
- every page of every document climbed to the gpu queue: router source `siglip2`, a `lightonocr`
  attempt on rung `gpu_ocr` (random weights read garbage: the gate refuses it, the page is
  quarantined, which is the right verdict);
- the models stay loaded between tasks and documents: the gpu worker's log has one `loaded …`
  line per model for the whole run;
- the time per page of the first document (model loading included) and of the later ones, beside
  the same engine reading the same pages in this process with no fleet (the fleet's overhead);
- the GPU's memory in use (nvidia-smi, sampled), the calls that merged several tasks' pages (the
  worker's log) and the exporter's counters of pages and tasks a call (`pagefleet_generate_*`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import gpu_bench  # noqa: E402
from workers.engines.base import PageImage  # noqa: E402

LOADED = re.compile(r"loaded (\S+) (\S+) on (\S+) in ([\d.]+)s")
BATCHED = re.compile(r"batched (\d+) requests, (\d+) items in one call")


def checkpoints(device: str, quick: bool, root: Path) -> dict[str, Any]:
    """SigLIP (router) and LightOnOCR (VLM) checkpoints with random weights, saved to `root`."""
    from transformers import SiglipProcessor

    model, tokenizer, images = gpu_bench.router_model(device, quick)
    siglip = root / "siglip-checkpoint"
    model.save_pretrained(siglip)
    SiglipProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(siglip)
    router_params = sum(p.numel() for p in model.parameters())
    del model
    gpu_bench.free_cuda(device)
    vlm, vlm_params = gpu_bench.vlm_checkpoint(device, quick, root)
    return {"siglip": siglip, "vlm": vlm, "router_params": router_params, "vlm_params": vlm_params}


def scanned_documents(root: Path, docs: int, pages: int, quick: bool) -> list[Path]:
    """`docs` image-only PDFs of `pages` A4 pages each (rendered text lines, 150 DPI; quick: smaller)."""
    import pymupdf

    images = gpu_bench.render_pages(root, pages, quick)
    paths = []
    for number in range(1, docs + 1):
        doc = pymupdf.open()
        for image in images:
            page = doc.new_page(width=595, height=842)
            page.insert_image(page.rect, filename=image.path)
        doc.set_metadata({"subject": f"gpu fleet bench document {number}"})  # a distinct job a document
        path = root / f"scan-{number}.pdf"
        doc.save(path)
        doc.close()
        paths.append(path)
    return paths


def fleet_env(models: dict[str, Any], batch: int, tokens: int) -> dict[str, str]:
    """The gpu worker's settings: every unread page to the gpu queue, the random SigLIP made to
    route to Hebrew (a threshold no margin reaches), whose chain is the lightonocr engine alone."""
    return {
        "PAGEFLEET_ROUTER__SIGLIP_MODEL": str(models["siglip"]),
        "PAGEFLEET_ROUTER__SIGLIP_PROMPTS": '["this is a photo of English text.", "this is a photo of Hebrew text."]',
        "PAGEFLEET_ROUTER__SIGLIP_LABELS": '["latin", "he"]',
        "PAGEFLEET_ROUTER__SIGLIP_THRESHOLD": "1.5",
        "PAGEFLEET_VLM__LIGHTONOCR_MODEL": str(models["vlm"]),
        "PAGEFLEET_CHAINS__HE": '["lightonocr"]',
        "PAGEFLEET_VLM__BATCH_SIZE": str(batch),
        "PAGEFLEET_VLM__MAX_NEW_TOKENS": str(tokens),
        "OMP_NUM_THREADS": "4",
    }


class GpuMemory:
    """The GPU's memory in use, sampled by nvidia-smi every half second (all processes)."""

    def __init__(self) -> None:
        self.binary = shutil.which("nvidia-smi")
        self.peak_mib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            with contextlib.suppress(OSError, ValueError, subprocess.SubprocessError):
                out = subprocess.run([self.binary, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=10).stdout
                self.peak_mib = max(self.peak_mib, int(out.split()[0]))

    def __enter__(self) -> "GpuMemory":
        if self.binary:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.binary:
            self._thread.join(timeout=15)


@contextlib.contextmanager
def gpu_fleet(workdir: Path, env_extra: dict[str, str], pool: str = "threads") -> Iterator[list[Any]]:
    """The fleet `pagefleet run --gpu` starts (`workers.cli.embedded.EmbeddedFleet`): a Redis, a
    split/collect, a cpu and a gpu worker — on task threads as deployed (`vlm.batch_size` of them),
    or prefork × 1 as before cross-task batching — stopped on the way out."""
    from workers.app import use_broker
    from workers.cli.embedded import EmbeddedFleet
    from workers.settings import get_settings

    os.environ.update(env_extra, PAGEFLEET_GPU_POOL=pool, PAGEFLEET_CACHE_DIR=str(workdir / "cache"))
    get_settings.cache_clear()
    with EmbeddedFleet(broker_url=None, cpu_workers=1, gpu=True, logdir=workdir / "logs") as fleet:
        use_broker(fleet.broker_url)
        get_settings.cache_clear()
        yield fleet.workers


def wait_done(job_id: str, workers: list[Any], timeout_s: float) -> dict[str, str]:
    from workers.fleet import jobs

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        info = jobs.get(job_id)
        if info.get("state") in jobs.TERMINAL:
            return info
        dead = next((w for w in workers if not w.alive()), None)
        if dead is not None:
            raise RuntimeError(f"worker {dead.name} died:\n{dead.tail()}")
        time.sleep(0.1)
    raise RuntimeError(f"job {job_id} not done in {timeout_s:.0f}s: {jobs.get(job_id)}\n{workers[-1].tail()}")


def run_documents(paths: list[Path], out: Path, workers: list[Any], timeout_s: float) -> list[dict[str, Any]]:
    """Each document submitted alone (the next once the last is done): its wall time and pages."""
    from workers.settings import Options
    from workers.store.storage import LocalStorage
    from workers.split.submit import enqueue, spec_for_path

    rows = []
    for path in paths:
        spec = spec_for_path(str(path), LocalStorage(out).url, path.stem, Options())
        started = time.perf_counter()
        enqueue(spec)
        info = wait_done(spec.job_id, workers, timeout_s)
        seconds = time.perf_counter() - started
        document = json.loads((out / path.stem / "document.json").read_text(encoding="utf-8"))
        rows.append({"document": path.name, "state": info.get("state"), "seconds": seconds,
                     "pages": len(document["pages"]), "checks": page_checks(document["pages"])})
    return rows


def run_at_once(paths: list[Path], out: Path, workers: list[Any], timeout_s: float) -> dict[str, Any]:
    """One-page documents submitted together (`enqueue_many`, as a bucket's batch or the CLI sends
    them): the wall time until the last is done, and what their pages went through."""
    from workers.settings import Options
    from workers.store.storage import LocalStorage
    from workers.split.submit import enqueue_many, spec_for_path

    specs = [spec_for_path(str(p), LocalStorage(out).url, p.stem, Options()) for p in paths]
    started = time.perf_counter()
    enqueue_many(specs)
    states = [wait_done(spec.job_id, workers, timeout_s).get("state") for spec in specs]
    seconds = time.perf_counter() - started
    pages = [page for p in paths for page in
             json.loads((out / p.stem / "document.json").read_text(encoding="utf-8"))["pages"]]
    return {"document": f"{len(paths)} one-page documents at once", "state": ",".join(sorted(set(states))),
            "seconds": seconds, "pages": len(pages), "checks": page_checks(pages)}


def merged_calls(logdir: Path) -> list[tuple[int, int]]:
    """(requests, pages) of every generate call that merged several tasks' reads (`batching`)."""
    calls = []
    for log in sorted(logdir.glob("worker-gpu-*.log")):
        calls += [(int(a), int(b)) for a, b in BATCHED.findall(log.read_text(errors="replace"))]
    return calls


def generate_counters(wait_s: float = 2.5) -> dict[str, float]:
    """The gpu worker's VLM call counters as the metrics exporter reads them (`workers.metrics`:
    flushed to Redis every 2 s, hence the wait): calls, pages and tasks."""
    from workers import metrics

    from workers.fleet import jobs
    time.sleep(wait_s)
    found: dict[str, float] = {}
    for key, value in jobs.client().hgetall(metrics.HASH).items():
        name, _ = metrics.parse_field(key.decode() if isinstance(key, bytes) else key)
        if name.startswith("generate_"):  # summed over engines
            short = name.removeprefix("generate_").removesuffix("_total")
            found[short] = found.get(short, 0.0) + float(value)
    return found


def page_checks(pages: list[dict[str, Any]]) -> dict[str, int]:
    """How many pages were routed by SigLIP and read by lightonocr on the gpu rung."""
    return {
        "siglip2": sum(p.get("router", {}).get("source") == "siglip2" for p in pages),
        "lightonocr_gpu": sum(any(a["engine"] == "lightonocr" and a["rung"] == "gpu_ocr" for a in p["attempts"])
                              for p in pages),
        "quarantined": sum(p.get("status") != "accepted" for p in pages),
    }


def model_loads(logdir: Path) -> list[dict[str, Any]]:
    """Every `loaded …` line the workers logged (hf.cached_load: once per model, device and process)."""
    loads = []
    for log in sorted(logdir.glob("worker-gpu-*.log")):
        for line in log.read_text(errors="replace").splitlines():
            found = LOADED.search(line)
            if found:
                loads.append({"model": found[1], "device": found[3], "seconds": float(found[4])})
    return loads


def bare_engine(models: dict[str, Any], pages: list[PageImage], batch: int, tokens: int, device: str) -> dict[str, Any]:
    """The same checkpoint read by the lightonocr engine in this process, no fleet: a warm-up read,
    then all the pages timed (the figure the fleet's warm documents are set beside)."""
    from workers.engines import hf
    from workers.engines.base import create

    engine = create("lightonocr", model=str(models["vlm"]), batch_size=batch, max_new_tokens=tokens, device=device)
    started = time.perf_counter()
    engine.read(pages[:1], script="he")
    first = time.perf_counter() - started
    gpu_bench.sync(device)
    started = time.perf_counter()
    outputs = engine.read(pages, script="he")
    gpu_bench.sync(device)
    seconds = time.perf_counter() - started
    hf._CACHE.clear()
    gpu_bench.free_cuda(device)
    return {"pages": len(pages), "seconds": seconds, "first_read_s": first,
            "tokens": sum(int(o.details.get("tokens", 0)) for o in outputs)}


def measure(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    started = time.perf_counter()
    models = checkpoints(args.device, args.quick, root)
    (root / "docs").mkdir()
    (root / "small").mkdir()
    paths = scanned_documents(root / "docs", args.docs, args.pages, args.quick)
    results: dict[str, Any] = {"environment": gpu_bench.environment(args.device), "batch": args.batch,
                               "max_new_tokens": args.tokens, "router_params": models["router_params"],
                               "vlm_params": models["vlm_params"], "build_s": time.perf_counter() - started}
    small = scanned_documents(root / "small", args.small, 1, args.quick) if args.small else []
    env = fleet_env(models, args.batch, args.tokens)
    with GpuMemory() as memory, gpu_fleet(root / "fleet", env, args.pool) as workers:
        results["documents"] = run_documents(paths, root / "out", workers, args.timeout)
        if small:
            results["documents"].append(run_at_once(small, root / "out", workers, args.timeout))
        results["counters"] = generate_counters()
    results["gpu_peak_mib"] = memory.peak_mib
    results["pool"] = args.pool
    results["loads"] = model_loads(root / "fleet" / "logs")
    results["merged"] = merged_calls(root / "fleet" / "logs")
    (root / "bare").mkdir()
    images = gpu_bench.render_pages(root / "bare", args.pages, args.quick)
    results["bare"] = bare_engine(models, images, args.batch, args.tokens, args.device)
    results["seconds"] = time.perf_counter() - started
    return results


def print_report(results: dict[str, Any]) -> None:
    print(f"environment: {results['environment']}")
    print(f"models: SigLIP {results['router_params'] / 1e6:.1f}M, LightOnOCR {results['vlm_params'] / 1e6:.1f}M "
          f"parameters (random, built and saved in {results['build_s']:.1f}s); vlm.batch_size {results['batch']}, "
          f"max_new_tokens {results['max_new_tokens']}")
    print(f"\n| document | state | pages | wall s | s/page | routed by SigLIP | lightonocr on gpu_ocr | quarantined |")
    print("|---|---|---|---|---|---|---|---|")
    for row in results["documents"]:
        c = row["checks"]
        print(f"| {row['document']} | {row['state']} | {row['pages']} | {row['seconds']:.2f} | "
              f"{row['seconds'] / max(row['pages'], 1):.3f} | {c['siglip2']} | {c['lightonocr_gpu']} | {c['quarantined']} |")
    bare = results["bare"]
    print(f"| same pages, engine alone (no fleet) | | {bare['pages']} | {bare['seconds']:.2f} | "
          f"{bare['seconds'] / max(bare['pages'], 1):.3f} | | | |")
    print("\nmodel loads in the gpu worker (whole run): "
          + (", ".join(f"{x['model']} on {x['device']} {x['seconds']:.1f}s" for x in results["loads"]) or "none"))
    counters = results.get("counters") or {}
    if counters.get("calls"):
        print(f"metrics (pagefleet_generate_*): {counters['calls']:.0f} calls, "
              f"{counters.get('pages', 0) / counters['calls']:.1f} pages and "
              f"{counters.get('tasks', 0) / counters['calls']:.1f} tasks a call")
    merged = results["merged"]
    print(f"gpu worker: pool {results['pool']}; generate calls that merged several tasks: {len(merged)}"
          + (f" (tasks a call {max(r for r, _ in merged)} at most, pages {max(p for _, p in merged)} at most)"
             if merged else ""))
    if results["gpu_peak_mib"]:
        print(f"GPU memory in use, peak (nvidia-smi): {results['gpu_peak_mib'] / 1024:.1f} GiB")
    many = [r for r in results["documents"] if r["document"].endswith("at once")]
    warm = [r for r in results["documents"][1:] if r not in many]
    if warm:
        per_page = sum(r["seconds"] for r in warm) / sum(r["pages"] for r in warm)
        print(f"warm fleet s/page {per_page:.3f} vs engine alone {bare['seconds'] / max(bare['pages'], 1):.3f}"
              f" (x{per_page / max(bare['seconds'] / max(bare['pages'], 1), 1e-9):.2f})")
        for row in many:
            print(f"{row['document']}: s/page {row['seconds'] / max(row['pages'], 1):.3f}, "
                  f"x{per_page / max(row['seconds'] / max(row['pages'], 1), 1e-9):.2f} the pages/s of the warm documents")
    print(f"total {results['seconds']:.1f}s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--quick", action="store_true", help="tiny models and pages (the script itself, on a CPU)")
    parser.add_argument("--docs", type=int, default=3, help="documents, submitted one after the other (default 3)")
    parser.add_argument("--pages", type=int, default=16, help="pages a document (default 16)")
    parser.add_argument("--batch", type=int, default=8, help="vlm.batch_size: pages a gpu task and a generate call")
    parser.add_argument("--tokens", type=int, default=128, help="vlm.max_new_tokens (default 128)")
    parser.add_argument("--small", type=int, default=16, help="then this many one-page documents at once (0: none)")
    parser.add_argument("--pool", choices=["threads", "prefork"], default="threads",
                        help="the gpu worker's pool: threads (as deployed: tasks share generate calls) or prefork × 1")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a document may take")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device: use --device cpu --quick", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="pagefleet-gpu-fleet-") as tmp:
        results = measure(args, Path(tmp))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    print_report(results)
    ok = all(r["checks"]["lightonocr_gpu"] == r["pages"] for r in results["documents"]) and \
        len(results["loads"]) == len({x["model"] for x in results["loads"]})
    print(f"gpu_fleet_ok={int(ok)} loads={len(results['loads'])}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
