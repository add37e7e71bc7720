"""Did a change alter any page's verdict? Compare two `pagefleet run` output folders page by page.

    python bench/compare_verdicts.py BEFORE_DIR AFTER_DIR [--show 5]

For every document folder in either run: its error.json code, or per page the route, the text
(accepted pages; `review_preview.text` for refused ones), and the quality verdict (ok, reasons,
warnings). Prints each difference and a closing line `documents=N pages=M differences=K`; exits 1
when anything differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def verdicts(folder: Path) -> dict[str, Any]:
    """document stem -> {"error": code} or {page number: (route, text, ok, reasons, warnings)}."""
    found: dict[str, Any] = {}
    for doc in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if (doc / "document.json").exists():
            data = json.loads((doc / "document.json").read_text(encoding="utf-8"))
            found[doc.name] = {int(p["number"]): _page(p) for p in data["pages"]}
        elif (doc / "error.json").exists():
            found[doc.name] = {
                "error": json.loads((doc / "error.json").read_text(encoding="utf-8")).get("code")
            }
    return found


def _page(page: dict[str, Any]) -> tuple[Any, ...]:
    quality = page.get("quality") or {}
    text = page.get("text") or ((page.get("review_preview") or {}).get("text")) or ""
    return (
        page.get("route"),
        text,
        quality.get("ok"),
        tuple(quality.get("reasons") or ()),
        tuple(sorted(quality.get("warnings") or ())),
    )


FIELDS = ("route", "text", "ok", "reasons", "warnings")


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = []
    for name in sorted(set(before) | set(after)):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            out.append(f"{name}: only in {'after' if a is None else 'before'}")
            continue
        for number in sorted(set(a) | set(b), key=str):
            pa, pb = a.get(number), b.get(number)
            if pa == pb:
                continue
            if not isinstance(pa, tuple) or not isinstance(pb, tuple):
                out.append(f"{name} {number}: {pa!r} → {pb!r}")
                continue
            changed = [f"{f}: {x!r:.80} → {y!r:.80}" for f, x, y in zip(FIELDS, pa, pb) if x != y]
            out.append(f"{name} page {number}: " + "; ".join(changed))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    before, after = verdicts(args.before), verdicts(args.after)
    diffs = differences(before, after)
    for line in diffs:
        print(line)
    pages = sum(len([k for k in v if k != "error"]) for v in after.values())
    print(f"documents={len(after)} pages={pages} differences={len(diffs)}")
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
