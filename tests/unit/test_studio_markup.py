"""Review studio rendering of untrusted text: everything escaped, Latin runs and numbers isolated on
RTL pages, blocks and RTL tables, edit maps as highlighted changes that replay to the text."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from pagefleet.routing.edits import Edit, apply_edits
from pagefleet.workers.cli.studio import markup

EVIL = '<script>alert(1)</script><img src=x onerror="alert(2)">'


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Tags()
    parser.feed(html)
    return parser.tags


def _text(html: str) -> str:
    return (
        re.sub(r"<[^>]+>", "", html)
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#34;", '"')
        .replace("&#39;", "'")
        .replace("&amp;", "&")
    )


def test_untrusted_text_is_escaped_everywhere() -> None:
    page = {
        "direction": "rtl",
        "text": f"שלום {EVIL}",
        "raw_text": EVIL,
        "blocks": [
            {"type": "heading", "level": 1, "text": EVIL, "direction": "rtl"},
            {"type": "list_item", "marker": EVIL, "text": EVIL},
            {"type": "table", "table": {"rows": [[EVIL, "x"]], "header_rows": 1}},
        ],
    }
    for html in (
        markup.page_body(page),
        markup.lines_html(page["text"], "rtl"),
        markup.edit_map(EVIL, [{"start": 0, "end": 8, "replacement": EVIL, "kind": EVIL}], "rtl"),
    ):
        assert {t for t, _ in _tags(str(html))} <= {
            "p",
            "bdi",
            "h3",
            "span",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
            "del",
            "ins",
        }
        assert "<script" not in str(html) and "onerror=" not in str(html).replace(
            "onerror=&#34;", ""
        )


def test_latin_runs_and_numbers_are_isolated_on_rtl_pages_only() -> None:
    text = "גדלו ב-12% ב-2024, כך אמרה Dana Levi ב‏Tel Aviv. ٢٠٢٤ ירד -4.5%"
    html = str(markup.isolated(text, rtl=True))
    assert re.findall(r"<bdi>(.*?)</bdi>", html) == [
        "12%",
        "2024",
        "Dana Levi",
        "Tel Aviv",
        "٢٠٢٤",
        "-4.5%",
    ]
    assert _text(html) == text
    assert "<bdi>" not in str(markup.isolated("Revenue grew 12% in 2024", rtl=False))


def test_blocks_render_in_reading_order_with_an_rtl_table() -> None:
    text = "כותרת\nפסקה ראשונה\nשם | גיל"
    page = {
        "direction": "rtl",
        "text": text,
        "blocks": [
            {"type": "heading", "level": 1, "start": 0, "end": 5, "direction": "rtl"},
            {"type": "paragraph", "start": 6, "end": 17, "direction": "rtl"},
            {
                "type": "table",
                "direction": "rtl",
                "start": 18,
                "end": 26,
                "table": {
                    "header_rows": 1,
                    "rows": [["שם", "גיל"], ["דנה", "42"]],
                    "markdown": "| שם | גיל |",
                },
            },
            {"type": "caption", "text": "Figure 1", "direction": "ltr"},
        ],
    }
    html = str(markup.page_body(page))
    tags = _tags(html)
    assert [t for t, _ in tags if t in ("h3", "p", "table")] == ["h3", "p", "table", "p"]
    table = next(a for t, a in tags if t == "table")
    assert table["dir"] == "rtl"
    assert (
        re.findall(r"<th>(.*?)</th>", html) == ["שם", "גיל"]
        and "<td>דנה</td><td><bdi>42</bdi></td>" in html
    )
    assert '<p class="blk-caption" dir="ltr">Figure 1</p>' in html
    assert "כותרת" in html and "פסקה ראשונה" in html


def test_pages_without_blocks_fall_back_to_text_lines() -> None:
    html = str(markup.page_body({"direction": "rtl", "text": "שורה אחת\n\nשורה 2"}))
    assert html == "<p>שורה אחת</p>\n<p>שורה <bdi>2</bdi></p>"


def test_edit_map_shows_each_change_and_replays_to_the_text() -> None:
    raw = "םולש :תרתוכ\nabc"
    edits = [
        {
            "start": 0,
            "end": 11,
            "replacement": "כותרת: שלום",
            "kind": "visual_order_reversal",
            "out_start": 0,
            "out_end": 11,
        }
    ]
    html = str(markup.edit_map(raw, edits, "rtl"))
    assert html.count('class="edit"') == 1 and 'data-kind="visual_order_reversal"' in html
    assert re.findall(r"<del>(.*?)</del>", html) == ["םולש :תרתוכ"]
    assert re.findall(r"<ins>(.*?)</ins>", html) == ["כותרת: שלום"]
    shown = re.sub(r"<del>.*?</del>", "", html)
    assert _text(shown) == apply_edits(raw, [Edit.from_dict(e) for e in edits])


def test_edit_map_that_does_not_fit_is_shown_as_raw_text() -> None:
    html = str(markup.edit_map("abc", [{"start": 2, "end": 9, "replacement": "x"}], "ltr"))
    assert "does not fit" in html and html.endswith("abc")


def test_list_items_keep_one_marker() -> None:
    written = markup.block_html(
        {"type": "list_item", "marker": "א.", "text": "א. ההכנסות גדלו"}, "", "rtl"
    )
    assert str(written).count("א.") == 1
    separate = markup.block_html({"type": "list_item", "marker": "•", "text": "הכנסות"}, "", "rtl")
    assert '<span class="marker">•</span> הכנסות' in str(separate)


def test_blocks_carry_their_bbox_for_the_source_overlay() -> None:
    block = {"type": "paragraph", "text": "x", "bbox": [101.72, 104.69, 534, 117.49]}
    assert ' data-bbox="101.7,104.7,534.0,117.5"' in str(markup.block_html(block, "", "ltr"))
    table = {"type": "table", "bbox": [1, 2, 3, 4], "table": {"rows": [["a"]], "header_rows": 0}}
    assert str(markup.block_html(table, "", "rtl")).startswith(
        '<table class="blk-table" dir="rtl" data-bbox="1.0,2.0,3.0,4.0">'
    )
    assert "data-bbox" not in str(
        markup.block_html({"type": "paragraph", "bbox": ["x", 1, 2, 3]}, "", "ltr")
    )
