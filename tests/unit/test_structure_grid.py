"""The ruled-table finder (pagefleet.routing.structure.grid): synthetic paths with known cells, and PyMuPDF's
own `find_tables` as the reference on drawn PDF tables."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from pagefleet.routing.structure.grid import (
    MAX_CLUSTERED,
    edges_from_paths,
    path_clusters,
    ruled_grids,
)

CLIP = (0.0, 0.0, 600.0, 800.0)


def _lines(xs: list[float], ys: list[float]) -> list[dict]:
    """A full grid of stroked lines: one path per ruling."""
    paths = [{"items": [("l", (x, ys[0]), (x, ys[-1]))], "rect": (x, ys[0], x, ys[-1])} for x in xs]
    paths += [
        {"items": [("l", (xs[0], y), (xs[-1], y))], "rect": (xs[0], y, xs[-1], y)} for y in ys
    ]
    return paths


def _chars_in(
    boxes: list[tuple[float, float, float, float]],
) -> list[tuple[float, float, float, float]]:
    """One character box in the middle of each given box."""
    return [
        ((b[0] + b[2]) / 2 - 2, (b[1] + b[3]) / 2 - 3, (b[0] + b[2]) / 2 + 2, (b[1] + b[3]) / 2 + 3)
        for b in boxes
    ]


def test_a_full_grid_of_lines_gives_every_cell() -> None:
    xs, ys = [100.0, 200.0, 350.0], [50.0, 70.0, 90.0, 110.0]
    cells = [(xs[j], ys[i], xs[j + 1], ys[i + 1]) for i in range(3) for j in range(2)]
    [grid] = ruled_grids(_lines(xs, ys), CLIP, _chars_in(cells))
    assert grid.bbox == (100.0, 50.0, 350.0, 110.0)
    assert [row.cells for row in grid.rows] == [cells[0:2], cells[2:4], cells[4:6]]
    assert grid.rows[1].bbox == (100.0, 70.0, 350.0, 90.0)


def test_a_cell_spanning_two_columns_leaves_a_gap_in_its_row() -> None:
    xs, ys = [100.0, 200.0, 300.0], [50.0, 70.0, 90.0]
    paths = _lines([100.0, 300.0], ys)  # outer verticals over the full height
    paths.append(
        {"items": [("l", (200.0, 70.0), (200.0, 90.0))], "rect": (200.0, 70.0, 200.0, 90.0)}
    )  # inner: lower row only
    paths += [{"items": [("l", (100.0, y), (300.0, y))], "rect": (100.0, y, 300.0, y)} for y in ys]
    [grid] = ruled_grids(paths, CLIP, _chars_in([(100.0, 50.0, 300.0, 70.0)]))
    assert [row.cells for row in grid.rows] == [
        [(100.0, 50.0, 300.0, 70.0), None],
        [(100.0, 70.0, 200.0, 90.0), (200.0, 70.0, 300.0, 90.0)],
    ]
    assert xs[1] == 200.0


def test_thin_filled_rectangles_are_rulings_and_nearby_edges_snap() -> None:
    paths = []
    for x in (100.0, 200.0, 300.0):  # 1-pt wide bars; the middle one drawn 1.5 pt off
        x += 1.5 if x == 200.0 else 0.0
        paths.append(
            {
                "items": [("re", (x - 0.5, 50.0, x + 0.5, 90.0), -1)],
                "rect": (x - 0.5, 50.0, x + 0.5, 90.0),
            }
        )
    for y in (50.0, 70.0, 90.0):
        paths.append(
            {
                "items": [("re", (100.0, y - 0.5, 300.0, y + 0.5), -1)],
                "rect": (100.0, y - 0.5, 300.0, y + 0.5),
            }
        )
    h, v = edges_from_paths(paths, CLIP)
    assert sorted(e[0] for e in v) == [100.0, 201.5, 300.0] and sorted(e[0] for e in h) == [
        50.0,
        70.0,
        90.0,
    ]
    [grid] = ruled_grids(paths, CLIP, _chars_in([(100.0, 50.0, 300.0, 90.0)]))
    assert len(grid.rows) == 2 and [c[0] for c in grid.rows[0].cells] == [100.0, 201.5]


def test_no_table_without_text_or_with_one_column() -> None:
    xs, ys = [100.0, 200.0, 300.0], [50.0, 70.0, 90.0]
    assert ruled_grids(_lines(xs, ys), CLIP, []) == []
    one_column = _lines([100.0, 300.0], ys)
    assert ruled_grids(one_column, CLIP, _chars_in([(100.0, 50.0, 300.0, 90.0)])) == []


def test_lines_outside_the_clip_and_slanted_lines_are_not_edges() -> None:
    paths = [
        {"items": [("l", (10.0, 10.0), (50.0, 30.0))]},  # slanted
        {"items": [("l", (700.0, 10.0), (700.0, 90.0))]},  # right of the clip
        {"items": [("l", (100.0, 40.0), (160.0, 40.5))]},
    ]  # nearly flat: horizontal
    h, v = edges_from_paths(paths, CLIP)
    assert v == [] and h == [(40.25, 100.0, 160.0)]


def test_shaded_cells_without_lines_get_their_frame() -> None:
    """Touching fills make one cluster; its frame (the cluster holds text) closes the outer sides."""
    fills = [
        (100.0, 50.0, 200.0, 70.0),
        (200.0, 50.0, 300.0, 70.0),
        (100.0, 70.0, 200.0, 90.0),
        (200.0, 70.0, 300.0, 90.0),
    ]
    assert path_clusters(fills) == [(100.0, 50.0, 300.0, 90.0)]
    paths = [{"items": [("re", f, -1)], "rect": f} for f in fills]
    [grid] = ruled_grids(paths, CLIP, _chars_in(fills))
    assert [row.cells for row in grid.rows] == [fills[0:2], fills[2:4]]


def test_crossing_lines_are_not_neighbours() -> None:
    crossing = [(100.0, 50.0, 300.0, 50.0), (200.0, 0.0, 200.0, 100.0)]
    assert sorted(path_clusters(crossing)) == sorted(crossing)
    assert path_clusters([(100.0, 50.0, 300.0, 50.0), (300.0, 50.0, 300.0, 100.0)]) == [
        (100.0, 50.0, 300.0, 100.0)
    ]


def _drawn_table(path: Path, stroke: bool) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    xs, ys = [72.0, 180.0, 260.0, 400.0], [100.0, 122.0, 144.0, 166.0, 188.0]
    shape = page.new_shape()
    for x in xs:
        if stroke:
            shape.draw_line((x, ys[0]), (x, ys[-1]))
        else:
            shape.draw_rect(pymupdf.Rect(x - 0.4, ys[0], x + 0.4, ys[-1]))
    for y in ys:
        if stroke:
            shape.draw_line((xs[0], y), (xs[-1], y))
        else:
            shape.draw_rect(pymupdf.Rect(xs[0], y - 0.4, xs[-1], y + 0.4))
    shape.finish(color=(0, 0, 0) if stroke else None, fill=None if stroke else (0, 0, 0), width=0.8)
    shape.commit()
    for i in range(4):
        for j in range(3):
            page.insert_text((xs[j] + 4, ys[i] + 15), f"r{i}c{j}", fontsize=9)
    doc.save(path)


@pytest.mark.parametrize("stroke", [True, False])
def test_the_same_cells_as_pymupdfs_finder(tmp_path: Path, stroke: bool) -> None:
    _drawn_table(tmp_path / "t.pdf", stroke)
    page = pymupdf.open(tmp_path / "t.pdf")[0]
    chars = [
        tuple(c["bbox"])
        for b in page.get_text("rawdict")["blocks"]
        for line in b.get("lines", [])
        for s in line["spans"]
        for c in s["chars"]
        if not c["c"].isspace()
    ]
    reference = page.find_tables().tables
    ours = ruled_grids(page.get_cdrawings(), tuple(page.rect), chars)
    assert len(ours) == len(reference) == 1
    want = [
        [tuple(round(v, 1) for v in c) if c else None for c in row.cells]
        for row in reference[0].rows
    ]
    got = [
        [tuple(round(v, 1) for v in c) if c else None for c in row.cells] for row in ours[0].rows
    ]
    assert got == want and len(got) == 4 and len(got[0]) == 3


def test_a_page_of_thousands_of_separate_boxes_has_no_table() -> None:
    """Thousands of separate little boxes (a chart, a map): more paths than MAX_CLUSTERED are not
    joined into frames (that join is quadratic), and boxes that meet nothing make no cell."""
    boxes = [
        (5 + i * 8.2, 5 + j * 11, 9 + i * 8.2, 9 + j * 11) for i in range(70) for j in range(70)
    ]
    assert len(boxes) > MAX_CLUSTERED
    paths = [{"items": [("re", b, 1)], "rect": b} for b in boxes]
    assert ruled_grids(paths, CLIP, _chars_in(boxes[:5])) == []
