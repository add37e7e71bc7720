"""A fleet run as a row of the benchmarks' table, and the table printed (`bench_fleet.py`,
`bench_events.py`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import bench_docs
from tests.support.warm_fleet import RunResult, WarmFleet


@dataclass
class Row:
    work: str
    system: str
    pages: int
    wall: float
    rss: str = ""
    redis_mb: float | None = None
    tasks: int | None = None
    note: str = ""
    cpu_s: float | None = None
    cpu_roles: dict[str, float] | None = None

    @property
    def pps(self) -> float:
        return self.pages / self.wall if self.wall else 0.0


def fleet_row(work: str, result: RunResult, note: str = "") -> Row:
    rss = " ".join(f"{role}={mb:.0f}" for role, mb in sorted(result.rss_mb.items()))
    ocr = sum(n for route, n in result.routes.items() if not route.startswith("text_layer"))
    note = note or (f"{ocr} pages climbed" if ocr else "")
    return Row(
        work,
        "fleet",
        result.pages,
        result.wall,
        rss,
        result.redis_mb,
        result.tasks,
        note,
        result.cpu_s,
        result.cpu_roles,
    )


def options(structure: bool, **extra: object) -> dict[str, object]:
    from pagefleet.workers.settings import Options

    opts: dict[str, object] = {"max_pages": 100_000, "max_bytes": 4 * 1024**3, **extra}
    if "structure" in Options.model_fields:
        opts["structure"] = structure
    return opts


def median_run(runs: list[Any], wall: Callable[[Any], float]) -> Any:
    return sorted(runs, key=wall)[len(runs) // 2]


def warm_up(fleet: WarmFleet, tmp: Path, corpus: Path, storage: str) -> None:
    """A one-page document, and one of 150 pages whose ranges reach the cpu worker's processes."""
    warm = bench_docs.one_page_pdfs(corpus, 1, tmp / "warm")
    fleet.run(
        [*warm, bench_docs.digital_pdf(corpus, 150, tmp / "warm" / "w150.pdf")],
        storage,
        options(False),
        "warm",
    )


HEAD = (
    "work",
    "system",
    "pages",
    "wall s",
    "pages/s",
    "ms/page",
    "CPU ms/page",
    "peak RSS MB",
    "Redis MB",
    "tasks",
    "note",
)


def cells(r: Row) -> list[str]:
    cpu = f"{1000 * r.cpu_s / r.pages:.1f}" if r.cpu_s is not None and r.pages else ""
    return [
        r.work,
        r.system,
        str(r.pages),
        f"{r.wall:.2f}",
        f"{r.pps:.1f}",
        f"{1000 / r.pps:.1f}" if r.pps else "-",
        cpu,
        r.rss,
        f"{r.redis_mb:.1f}" if r.redis_mb is not None else "",
        "" if r.tasks is None else str(r.tasks),
        r.note,
    ]


def print_table(rows: list[Row], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in HEAD:
        table.add_column(
            col, justify="left" if col in ("work", "system", "peak RSS MB", "note") else "right"
        )
    for r in rows:
        table.add_row(*cells(r))
    Console(width=200).print(table)
