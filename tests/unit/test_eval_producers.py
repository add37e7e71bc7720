"""`make eval-producers`: the tokenizer and WER on hand-written cases, the truth's lines, the
Markdown stripping, the closing line, and two real documents (fpdf2, Chromium) read by PyMuPDF."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from bench.eval_producers import (
    ALL,
    Doc,
    aggregate,
    fleet_pages,
    read_pymupdf,
    summary,
)
from fixtures.make_producer_docs import generate
from fixtures.producers_office import runs
from fixtures.producers_score import letters_digits, score, strip_markdown, tokenize
from fixtures.producers_texts import truth_lines


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("₪ 250,000.00", ["₪", "250,000.00"]),
        ("$1,250.40", ["$", "1,250.40"]),
        ("ב-12.5%", ["ב", "-", "12.5", "%"]),
        ("054-5715512 12:00", ["054-5715512", "12:00"]),
        ("12/03/2025.", ["12/03/2025", "."]),
        ("2025-01-15,", ["2025-01-15", ","]),
        ("-5", ["-", "5"]),
        ("https://www.example.com/docs/report.", ["https://www.example.com/docs/report", "."]),
        ("(www.example.org/a?b=1)", ["(", "www.example.org/a?b=1", ")"]),
        ("(support@example.co.il).", ["(", "support@example.co.il", ")", "."]),
        ('אמרה: "שלום".', ["אמרה", ":", '"', "שלום", '"', "."]),
        ('מע"מ,', ["מע", '"', "מ", ","]),
        ("«خروجی»", ["«", "خروجی", "»"]),
        ("report.docx", ["report", ".", "docx"]),
        ("DevOps2", ["DevOps", "2"]),
        ("• 1. item", ["•", "1", ".", "item"]),
        ("می\u200cشود", ["می\u200cشود"]),  # ZWNJ is part of the Persian word
        ("۱۰:۳۰ ۱۴۰۳", ["۱۰:۳۰", "۱۴۰۳"]),  # Persian digits are digits
        ("\u202bשלום\u202c \u200e12:00\u200f", ["שלום", "12:00"]),  # bidi controls dropped
        ("\ufefb １２", ["لا", "12"]),  # NFKC: lam-alef ligature, full-width digits
        ("a\n\tb   c\u00a0d", ["a", "b", "c", "d"]),
        ("", []),
    ],
)
def test_tokenize(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_letters_digits_drops_punctuation_tokens_only() -> None:
    tokens = tokenize('(₪ 1,200.00) "שלום" support@example.co.il • ...')
    assert letters_digits(tokens) == ["1,200.00", "שלום", "support@example.co.il"]


def test_wer_counts_token_edits_over_truth_tokens() -> None:
    full, ld = score("אחד שתיים שלוש.", "אחד שתיים שלוש.")
    assert (full.edits, full.truth, full.wer) == (0, 4, 0.0)
    full, ld = score("אחד שתיים שלוש", "שלוש שתיים אחד")  # reversed order is not forgiven
    assert full.edits == 2 and full.wer == pytest.approx(2 / 3)
    full, ld = score("אחד שתיים שלוש", "אחד שלוש")
    assert full.wer == pytest.approx(1 / 3)
    full, ld = score("אחד שתיים", "")
    assert full.wer == 1.0
    full, ld = score("סכום: ₪ 1,200.00", "סכום 1,200.00 ₪")  # punctuation moved and dropped
    assert full.edits == 2 and full.truth == 4 and ld.edits == 0 and ld.truth == 2
    full, ld = score("12/03/2025", "2025/03/12")  # a reversed date is a wrong token
    assert full.wer == 1.0 and ld.wer == 1.0
    full, ld = score("line one\nline two", "line one line   two")  # line breaks are whitespace
    assert full.edits == 0


def test_truth_lines_keep_markers_and_join_table_cells() -> None:
    blocks = [
        ("p", "פסקה"),
        ("ul", ["אחת", "שתיים"]),
        ("ol", ["א", "ב"]),
        ("table", [["שם", "סכום"], ["דנה כהן", "₪ 5"]]),
    ]
    assert truth_lines(blocks) == [
        "פסקה",
        "• אחת",
        "• שתיים",
        "1. א",
        "2. ב",
        "שם סכום",
        "דנה כהן ₪ 5",
    ]


def test_docx_runs_keep_latin_words_ltr() -> None:
    assert runs("כתבו אל support@example.co.il (היום)") == [
        ("כתבו אל ", True),
        ("support@example.co.il", False),
        (" (היום)", True),
    ]
    assert runs("Release 2.1 של") == [("Release", False), (" 2.1 של", True)]


def test_strip_markdown() -> None:
    md = (
        "## כותרת\n\n**מודגש** ו-_נטוי_ `code`\n\n- פריט\n1. ראשון\n\n"
        "|שם|סכום|\n|---|---:|\n|דנה<br>כהן|₪ 5|\n[קישור](https://x.org) a\\_b"
    )
    assert tokenize(strip_markdown(md)) == tokenize(
        "כותרת מודגש ו-נטוי code פריט 1. ראשון שם סכום דנה כהן ₪ 5 קישור a_b"
    )


def _doc(stem: str, producer: str, script: str, truth: str) -> Doc:
    return Doc(stem, Path(f"{stem}.pdf"), producer, script, [truth])


def test_summary_pools_accepted_pages_and_counts_refused() -> None:
    docs = [
        _doc("a", "fpdf2", "he", "אחד שתיים שלוש ארבע"),
        _doc("b", "fpdf2", "ar", "واحد اثنان"),
        _doc("c", "chromium", "he", "אחד שתיים"),
    ]
    readings = {
        "fleet": {("a", 0): "אחד שתיים שלוש ארבע", ("b", 0): None, ("c", 0): "אחד"},
        "pymupdf": {("a", 0): "ארבע שלוש שתיים אחד", ("b", 0): "واحد", ("c", 0): "אחד שתיים"},
        "arafix": {("b", 0): "واحد اثنان"},
    }
    table, records = aggregate(docs, readings)
    fleet = table[ALL]["fleet"]
    assert (fleet.pages, fleet.refused, fleet.full.edits, fleet.full.truth) == (3, 1, 1, 6)
    assert table[ALL]["arafix"].pages == 1 and table[("fpdf2", "ar")]["arafix"].full.wer == 0.0
    lines = summary(table, records, ["fleet", "pymupdf", "arafix"])
    assert lines[0] == "fleet's worst accepted page: c page 1, WER 0.500"
    assert lines[1] == "fleet's worst producer x script: chromium he, WER 0.500"
    # pymupdf: 4 edits on a (reversed), 1 on b, 0 on c over 8 truth tokens; arafix is not a full peer
    assert lines[-2] == "peers on the fleet's accepted pages only: pymupdf 0.667"
    assert lines[-1] == "producers_wer fleet=0.167 best_peer=0.625 refused=1/3"
    assert re.fullmatch(r"producers_wer fleet=\S+ best_peer=\S+ refused=\d+/\d+", lines[-1])


def test_fleet_pages_scores_accepted_text_and_refuses_the_rest(tmp_path: Path) -> None:
    pages = [
        {"route": "text_layer_repaired", "needs_review": False, "text": "אחד"},
        {"route": "review_required", "needs_review": True, "text": "", "review_preview": {}},
        {"route": "failed", "needs_review": True, "text": ""},
        {"route": "ocr", "needs_review": True, "text": "שתיים"},
    ]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "document.json").write_text(json.dumps({"pages": pages}), encoding="utf-8")
    docs = [
        Doc(
            "a", Path("a.pdf"), "fpdf2", "he", ["אחד", "x", "y", "z", "page the fleet never wrote"]
        ),
        Doc("b", Path("b.pdf"), "fpdf2", "ar", ["no document.json at all"]),
    ]
    reading = fleet_pages(docs, tmp_path)
    assert reading == {
        ("a", 0): "אחד",
        ("a", 1): None,
        ("a", 2): None,
        ("a", 3): None,
        ("a", 4): None,
        ("b", 0): None,
    }


@pytest.fixture(scope="module")
def two_documents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("producers")
    generate(out, producers=("fpdf2", "chromium"), scripts=("he",), fonts=("dejavu",))
    return out


def test_generated_documents_read_back_with_pymupdf(two_documents: Path) -> None:
    from bench.eval_producers import load_docs

    docs = load_docs(two_documents)
    assert [d.stem for d in docs] == ["chromium-he-dejavu", "fpdf2-he-dejavu"]
    for doc in docs:
        truth = json.loads(doc.pdf.with_suffix(".truth.json").read_text(encoding="utf-8"))
        assert truth["producer"] in doc.stem and truth["script"] == "he"
        assert "DejaVuSans" in "".join(truth["pdf_fonts"])
        text = read_pymupdf(doc)
        assert len(text) == 1
        # every letter and digit of the truth is on the page, whatever order PyMuPDF gives
        want = Counter(ch for ch in doc.pages[0] if ch.isalnum())
        got = Counter(ch for ch in text[0] if ch.isalnum())
        assert sum((want - got).values()) <= 0.02 * sum(want.values())
        full, ld = score(doc.pages[0], text[0])
        assert full.truth > 100 and 0.0 <= full.wer < 0.9 and ld.wer <= full.wer + 0.05
    table, records = aggregate(docs, {"pymupdf": {(d.stem, 0): read_pymupdf(d)[0] for d in docs}})
    assert table[ALL]["pymupdf"].pages == 2 and len(records) == 2
    assert summary(table, records, ["pymupdf"])[-1].startswith("producers_wer fleet=nan best_peer=")
