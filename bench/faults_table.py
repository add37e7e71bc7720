"""The fault drills' table (docs/benchmarks/faults.md, written by `make faults`) from their tallies (tests/faults writes one JSON line per
drill to $PAGEFLEET_FAULTS_RESULTS, default /tmp/pagefleet-faults.jsonl):

    PAGEFLEET_FAULTS_RESULTS=/tmp/f.jsonl pytest -m faults -v && python bench/faults_table.py /tmp/f.jsonl
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

COLUMNS = (
    "drill",
    "documents in",
    "pages in",
    "artifacts",
    "error.json",
    "dead-lettered",
    "pages out",
    "lost",
    "orphans",
    "settled / stopped (s)",
)


# the tallies each drill counts, in the table's column order after the drill's name
COUNTS = (
    "documents_in",
    "pages_in",
    "artifacts",
    "errors",
    "dead_lettered",
    "pages_out",
    "lost",
    "orphans",
)


def row(t: dict) -> list[str]:
    took = t.get("settled_s", t.get("stopped_s", ""))
    return [t["drill"], *(str(t[k]) for k in COUNTS), str(took)]


def table(lines: list[dict]) -> str:
    rows = [row(t) for t in lines]
    total = {k: sum(t[k] for t in lines) for k in COUNTS}
    rows.append([f"**{len(lines)} drills**", *(str(total[k]) for k in COUNTS), ""])
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    return "\n".join([*out, *("| " + " | ".join(r) + " |" for r in rows)])


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else Path(tempfile.gettempdir()) / "pagefleet-faults.jsonl"
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    print(table(lines))
    lost = sum(t["lost"] for t in lines)
    print(
        f"\nfaults: {len(lines)} drills, {sum(t['documents_in'] for t in lines)} documents, "
        f"{sum(t['pages_in'] for t in lines)} pages in, lost = {lost}"
    )
    return 0 if lost == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
