"""`make bench`'s checks (`bench.bench_fleet.verdicts`), read off a table of known rows: the two
closing ratios, the fleet's time per page and its spread, and the bare limit's own spread beside it."""

from __future__ import annotations

import pytest

from bench.bench_fleet import Row, verdicts


def _rows() -> list[Row]:
    rows = []
    for n, fleet_ms, limit_ms in ((100, 8.0, 5.0), (1000, 6.4, 4.0), (10000, 6.0, 3.2)):
        rows.append(Row(f"digital {n}", "fleet", n, n * fleet_ms / 1000))
        rows.append(Row(f"digital {n}", "limit: get_text ×2", n, n * limit_ms / 1000))
    rows.append(Row("digital 1000", "ceiling: rung 1 alone ×2", 1000, 5.0))
    rows += [
        Row("scanned 12", "fleet", 12, 12.0),
        Row("scanned 12", "limit: tesseract ×2", 12, 10.0),
        Row("scanned 12", "ocrmypdf --jobs 2", 12, 18.0),
    ]
    rows += [
        Row("500 one-page documents", "fleet", 500, 4.0),
        Row("one 500-page document", "fleet", 500, 2.5),
    ]
    rows += [
        Row("digital 1000, fonts copied per page", "fleet", 1000, 8.0),
        Row("digital 1000, fonts copied per page", "limit: get_text ×2", 1000, 6.0),
    ]
    return rows


def test_the_closing_ratios_and_the_lines_under_the_table() -> None:
    digital, scanned, lines = verdicts(_rows(), [10, 100, 1000, 10000], 500, 12)
    assert digital == pytest.approx(4.0 / 6.4) and scanned == pytest.approx(1.5)
    text = "\n".join(lines)
    assert "digital fleet/limit at 1000 pages: 0.62 (target ≥ 0.8)" in text
    assert (
        "digital rung 1 alone/limit at 1000 pages: 0.80" in text
        and "fleet/rung 1 alone: 0.78" in text
    )
    assert "scanned fleet/plain tesseract: 0.83 (target ≥ 0.9)" in text
    assert (
        "time per page 100: 8.0 ms, 1000: 6.4 ms, 10000: 6.0 ms; spread +33% (target within ±20 %)"
        in text
    )
    assert "limit's own time per page 5.0 ms, 4.0 ms, 3.2 ms; spread +56%" in text
    assert "500 one-page documents / one 500-page document: 0.62 (target ≥ 0.7)" in text
    assert "at 1000 pages, fonts copied per page (pages merged from separate files): 0.75" in text


def test_a_size_without_its_limit_row_leaves_the_limit_s_spread_out() -> None:
    rows = [r for r in _rows() if not (r.work == "digital 10000" and r.system.startswith("limit"))]
    _, _, lines = verdicts(rows, [10, 100, 1000, 10000], 500, 12)
    assert any(line.startswith("time per page") for line in lines)
    assert not any(line.startswith("limit's own") for line in lines)


def test_generated_documents_share_a_files_fonts_unless_told_to_copy_them(tmp_path) -> None:
    """bench_docs.digital_pdf: the pages taken from one corpus file use one set of its font objects
    (PyMuPDF's insert_pdf drops its map of copied objects after every call unless told not to)."""
    import pymupdf

    from bench import bench_docs
    from tests.conftest import CORPUS

    if not CORPUS.is_dir():
        pytest.skip("no corpus beside the checkout")
    cycle = len(bench_docs.text_pages(CORPUS))

    def fonts(fonts_per_page: bool) -> tuple[set[int], list[int], list[int]]:
        out = bench_docs.digital_pdf(
            CORPUS, 2 * cycle, tmp_path / f"d{fonts_per_page}.pdf", fonts_per_page
        )
        with pymupdf.open(out) as doc:
            every = {f[0] for page in doc for f in page.get_fonts()}
            first, again = (
                [f[0] for f in doc[i].get_fonts()] for i in (0, cycle)
            )  # the same corpus page twice
        return every, first, again

    shared, first, again = fonts(False)
    assert first and first == again
    copied, first, again = fonts(True)
    assert first and not set(first) & set(again) and len(copied) > len(shared)
