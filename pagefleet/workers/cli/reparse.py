"""`pagefleet reparse OUT|s3://bucket/prefix`: find the documents made by an older pipeline or
holding weak pages, and process just those again (seed 002: "re-parse selectively").

    pagefleet reparse OUT [--below-version V] [--route ocr] [--min-confidence C] [--dry-run]
                          [--include-reviewed] [--broker URL] [--workers N]

A document is chosen when any given test holds: its `pipeline_version` is below V (default: the
running version, when no other test is given); a page took route R (`ocr`, `review_required`,
`fallback_text` …); a page's OCR confidence is below C. A local OUT (from `pagefleet run`) is
processed again on the embedded fleet; an s3:// target is resubmitted to the fleet's broker with
the original options, each job forced. `--dry-run` only lists them. The page tests skip the pages
a reviewer decided (approved or rejected, in the document's review.json) unless `--include-reviewed`.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from pagefleet.workers.settings import PIPELINE_VERSION, Options
from pagefleet.workers.store.uri import is_s3


@dataclass(frozen=True)
class Criteria:
    below_version: str | None = None
    route: str | None = None
    min_confidence: float | None = None
    include_reviewed: bool = False


def version_key(version: str) -> tuple[int, ...]:
    parts = []
    for part in version.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def reviewed_pages(document: Mapping[str, Any], review: Any) -> set[int]:
    """The pages a reviewer's decision (approve or reject, not stale) settles."""
    from pagefleet.workers.review.decisions import effective, parse

    decided = parse(review)
    return {
        int(p["number"])
        for p in document.get("pages", [])
        if (made := effective(p, decided)) is not None and made.decision in ("approve", "reject")
    }


def why_reparse(document: Mapping[str, Any], criteria: Criteria, review: Any = None) -> list[str]:
    """The reasons this document should be made again (empty: leave it); `review`: its review.json."""
    reasons = []
    version = str(document.get("pipeline_version", "0"))
    if criteria.below_version and version_key(version) < version_key(criteria.below_version):
        reasons.append(f"pipeline {version} < {criteria.below_version}")
    settled = set() if criteria.include_reviewed or not review else reviewed_pages(document, review)
    pages = [p for p in document.get("pages", []) if int(p["number"]) not in settled]
    if criteria.route:
        hits = [p["number"] for p in pages if p.get("route") == criteria.route]
        if hits:
            reasons.append(f"route {criteria.route} on pages {hits[:10]}")
    if criteria.min_confidence is not None:
        weak = [
            p["number"]
            for p in pages
            if p.get("ocr_confidence") is not None and p["ocr_confidence"] < criteria.min_confidence
        ]
        if weak:
            reasons.append(f"OCR confidence < {criteria.min_confidence:g} on pages {weak[:10]}")
    return reasons


def options_of(document: Mapping[str, Any]) -> Options:
    known = {k: v for k, v in (document.get("options") or {}).items() if k in Options.model_fields}
    return Options.model_validate(known)


def find(storage: Any, criteria: Criteria) -> list[tuple[str, dict[str, Any], list[str]]]:
    """(document.json key, document, reasons) for every chosen document under the storage root."""
    chosen = []
    for key in sorted(k for k in storage.list_keys("") if k.endswith("document.json")):
        document = storage.get_json(key)
        try:
            review = (
                None
                if criteria.include_reviewed
                else storage.get_json(key[: -len("document.json")] + "review.json")
            )
        except KeyError:
            review = None
        reasons = why_reparse(document, criteria, review)
        if reasons:
            chosen.append((key, document, reasons))
    return chosen


def _local_rerun(
    target: str,
    chosen: list[tuple[str, dict[str, Any], list[str]]],
    args: argparse.Namespace,
    console: Console,
) -> int:
    from pagefleet.workers.cli.run import run

    by_options: dict[str, tuple[Options, list[str]]] = defaultdict(lambda: (Options(), []))
    for _, document, _ in chosen:
        uri = (document.get("source") or {}).get("uri")
        if not uri or is_s3(uri):
            console.print(
                f"pagefleet: skipped {document['source']['filename']}: its source is not a local file"
            )
            continue
        options = options_of(document)
        key = options.model_dump_json()
        by_options[key] = (options, [*by_options[key][1], uri])
    code = 0
    for options, paths in by_options.values():
        code = max(
            code,
            run(
                paths,
                target,
                options,
                workers=args.workers,
                broker=args.broker,
                force=True,
                console=console,
            ),
        )
    return code


def _resubmit(
    target: str, chosen: list[tuple[str, dict[str, Any], list[str]]], args: argparse.Namespace
) -> int:
    from pagefleet.workers.app import use_broker
    from pagefleet.workers.store.uri import split_s3_uri
    from pagefleet.workers.split.submit import enqueue, spec_for_object, spec_for_path

    if args.broker:
        use_broker(args.broker)
    for key, document, _ in chosen:
        uri = document["source"].get("uri") or ""
        prefix = key.rsplit("/", 1)[0] if "/" in key else ""
        options = options_of(document)
        if is_s3(uri):
            bucket, obj = split_s3_uri(uri)
            spec = spec_for_object(bucket, obj, target, options, force=True, prefix_template=prefix)
        else:
            spec = spec_for_path(uri, target, prefix, options, force=True)
        print(enqueue(spec))
    return 0


def cmd_reparse(args: argparse.Namespace, console: Console) -> int:
    from pagefleet.workers.store.storage import open_storage

    include = bool(getattr(args, "include_reviewed", False))
    criteria = Criteria(args.below_version, args.route, args.min_confidence, include)
    if not (criteria.below_version or criteria.route or criteria.min_confidence is not None):
        criteria = Criteria(below_version=PIPELINE_VERSION, include_reviewed=include)
    chosen = find(open_storage(args.target), criteria)
    for key, _, reasons in chosen:
        console.print(f"{key}: {'; '.join(reasons)}", markup=False)
    console.print(f"pagefleet reparse: {len(chosen)} document(s) chosen", markup=False)
    if args.dry_run or not chosen:
        return 0
    if is_s3(args.target):
        return _resubmit(args.target, chosen, args)
    return _local_rerun(args.target, chosen, args, console)


def register(sub: argparse._SubParsersAction) -> None:
    import os

    p = sub.add_parser(
        "reparse", help="process again the documents an older pipeline made or with weak pages"
    )
    p.add_argument(
        "target",
        help="a `pagefleet run` output folder, or s3://bucket/prefix of a fleet's artifacts",
    )
    p.add_argument(
        "--below-version",
        metavar="V",
        help=f"made by a pipeline older than V (default {PIPELINE_VERSION})",
    )
    p.add_argument(
        "--route",
        metavar="ROUTE",
        help="a page took this route (ocr, review_required, fallback_text …)",
    )
    p.add_argument(
        "--min-confidence",
        type=float,
        metavar="C",
        help="a page's OCR confidence is below C (0-100)",
    )
    p.add_argument("--dry-run", action="store_true", help="list the documents, change nothing")
    p.add_argument(
        "--include-reviewed",
        action="store_true",
        help="let pages a reviewer approved or rejected (review.json) count for --route/--min-confidence",
    )
    p.add_argument("--broker", help="Redis broker URL (s3 targets; local targets start their own)")
    p.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 2,
        help="CPU OCR workers for a local target",
    )
    p.set_defaults(handler=cmd_reparse)
