"""`pagefleet wse`: Word Shape Encoding (seed 000). Registered by `pagefleet.workers.cli.main` when importable.

    pagefleet wse encode IN.pdf --out OUT.pdf [--pages 1,3-5]
        a mirrored, English-looking PDF; the mapping beside it (OUT.wse.json)
    pagefleet wse decode OUT.pdf [--mapping OUT.wse.json] [--parser pymupdf4llm] [--page N]
        run an LTR parser on an encoded PDF and map its output back: JSON lines, one per page
        {"page", "source_page", "tables", "text"}
    pagefleet wse parse IN.pdf [--parser pymupdf4llm] [--pages …] [--direct]
        the whole route on an original PDF (encode, parse, decode), or with --direct the same
        parser on the original page: JSON lines {"page", "route", "tables", "word_recovery", "seconds"}

Tables are rows of cells in logical RTL order (``row[0]`` = the rightmost cell of the page).
"""

from __future__ import annotations

import argparse
import json
import os

from rich.console import Console

from pagefleet.routing.wse import parse_pages
from pagefleet.workers.errors import InvalidOptionsError
from pagefleet.workers.wse.parsers import PARSERS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("wse", help="Word Shape Encoding: let LTR parsers read RTL tables")
    wse = p.add_subparsers(dest="wse_command", required=True)
    enc = wse.add_parser("encode", help="mirror an RTL PDF and replace its words by English tokens")
    enc.add_argument("input", help="PDF to encode")
    enc.add_argument(
        "--out", required=True, help="encoded PDF (its mapping goes beside it: OUT.wse.json)"
    )
    enc.add_argument("--pages", help="pages to encode, e.g. 1,3-5 (default: all)")
    enc.set_defaults(handler=cmd_encode)
    dec = wse.add_parser("decode", help="parse an encoded PDF and map the output back")
    dec.add_argument("input", help="encoded PDF")
    dec.add_argument("--mapping", help="mapping JSON (default: beside the PDF)")
    dec.add_argument(
        "--parser",
        default="pymupdf4llm",
        choices=sorted(PARSERS),
        help="the LTR parser to run (default pymupdf4llm)",
    )
    dec.add_argument("--page", type=int, help="one page of the encoded PDF (default: all)")
    dec.set_defaults(handler=cmd_decode)
    par = wse.add_parser("parse", help="tables of an RTL PDF through the encoding (or --direct)")
    par.add_argument("input", help="original PDF")
    par.add_argument(
        "--parser",
        default="pymupdf4llm",
        choices=sorted(PARSERS),
        help="the LTR parser to run (default pymupdf4llm)",
    )
    par.add_argument("--pages", help="pages, e.g. 1,3-5 (default: all)")
    par.add_argument(
        "--direct", action="store_true", help="run the parser on the original page instead"
    )
    par.set_defaults(handler=cmd_parse)


def _pages(spec: str | None, path: str) -> list[int]:
    from pagefleet.workers.wse.encode import open_pdf

    with open_pdf(path) as doc:
        count = doc.page_count
    try:
        return parse_pages(spec, count)
    except ValueError as exc:
        raise InvalidOptionsError(f"--pages: {exc}") from exc


def cmd_encode(args: argparse.Namespace, console: Console) -> int:
    from pagefleet.workers.wse.encode import encode_pdf

    result = encode_pdf(args.input, args.out, _pages(args.pages, args.input))
    m = result.mapping
    console.print(
        f"{result.pdf}: {len(m.pages)} page(s), {len(m.tokens)} tokens, {m.collisions} collisions, "
        f"{result.seconds:.2f} s; mapping {result.mapping_path}"
    )
    return 0


def cmd_decode(args: argparse.Namespace, console: Console) -> int:
    from pagefleet.workers.wse.decode import Decoder
    from pagefleet.workers.wse.mapping import Mapping, mapping_path
    from pagefleet.workers.wse.parsers import get_parser

    side = args.mapping or mapping_path(args.input)
    if not os.path.isfile(side):
        raise InvalidOptionsError(f"no mapping at {side} (pass --mapping)")
    mapping = Mapping.load(side)
    decoder = Decoder(mapping)
    parser = get_parser(args.parser)
    pages = [args.page] if args.page else list(range(1, len(mapping.pages) + 1))
    for page in pages:
        result = parser.parse(args.input, page)
        source = mapping.pages[page - 1] if page - 1 < len(mapping.pages) else None
        print(
            json.dumps(
                {
                    "page": page,
                    "source_page": source,
                    "tables": decoder.tables(result.tables),
                    "text": decoder.text(result.text),
                },
                ensure_ascii=False,
            )
        )
    return 0


def cmd_parse(args: argparse.Namespace, console: Console) -> int:
    from pagefleet.workers.wse.recover import run_direct, run_wse

    run = run_direct if args.direct else run_wse
    for page in _pages(args.pages, args.input):
        r = run(args.input, page, args.parser)
        print(
            json.dumps(
                {
                    "page": page,
                    "route": r.route,
                    "parser": r.parser,
                    "tables": r.tables,
                    "word_recovery": round(r.word_recovery, 4),
                    "seconds": round(r.seconds, 3),
                },
                ensure_ascii=False,
            )
        )
    return 0
