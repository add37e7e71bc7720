"""The child side of the sandbox: one command run and its JSON result written, in a child forked by
the sandbox server (`pagefleet.workers.pdf.forkserver`) or started as `python -m pagefleet.workers.pdf.sandbox`."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pydantic_core


def run_command(
    command: str, pdf: str, params: dict[str, Any], out: Path, in_place: bool = False
) -> None:  # pragma: no cover - child
    """Run one sandbox command and write its JSON result to `out` (a temp file, then a rename):
    what every child does, forked (`forkserver`) or started as `python -m pagefleet.workers.pdf.sandbox`.
    `in_place`: into `out` itself (a forked child, whose answer on its pipe says the file is whole)."""
    from pagefleet.workers.pdf import mupdf

    handlers = {
        "probe": mupdf.probe,
        "probe_many": mupdf.probe_many,
        "extract": mupdf.extract_range,
        "render": mupdf.render,
    }
    if command not in handlers:
        raise SystemExit(f"unknown sandbox command {command}")
    gc.disable()  # the command builds trees of plain objects (rawdict, layouts) that the cycle
    try:  # collector would walk again and again as they grow: a third of a structure-on range
        result = handlers[command](pdf, **params)
        tmp = out if in_place else out.with_suffix(".tmp")
        # pydantic-core's encoder: a page range in a sixth of json.dumps's time, NaN and infinities
        # written as json.dumps writes them (the worker reads the file with json.loads)
        tmp.write_bytes(pydantic_core.to_json(result, inf_nan_mode="constants"))
        if not in_place:
            tmp.replace(out)
        del result
    finally:
        gc.enable()
        gc.collect()  # what the command left in cycles goes before a reused child runs the next one
