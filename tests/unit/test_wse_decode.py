"""Word Shape Encoding: decoding parser output, and the whole route on generated RTL tables."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from pagefleet.workers.wse.decode import Decoder, strip_tags, word_recovery, words_of
from pagefleet.workers.wse.mapping import Mapping
from pagefleet.workers.wse.table_scores import best_match, cell_accuracy
from pagefleet.workers.wse.recover import recover_tables_wse, run_direct, run_wse

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"


def _mapping() -> Mapping:
    return Mapping.from_json(
        {
            "tokens": {
                "treat": {"word": "הכל", "occurrences": []},
                "groff": {"word": "סך", "occurrences": []},
                "flagellar": {"word": "العاملون", "occurrences": []},
            },
            "passthrough": ["2014", "GDP", "tread"],
        }
    )


def test_exact_tokens_and_document_words():
    d = Decoder(_mapping())
    assert d.text("groff treat 2014 GDP") == "סך הכל 2014 GDP"
    assert d.altered == 0


def test_altered_tokens_recover_by_edit_distance_but_document_words_stay():
    d = Decoder(_mapping())
    assert d.piece("flagelar") == "العاملون"  # one letter lost
    assert d.piece("tread") == "tread"  # a Latin word of the document is never "corrected" to treat
    assert d.piece("zebra") == "zebra"  # nothing near: kept as the parser wrote it
    assert d.altered == 1


def test_glued_tokens_split_and_markup_is_dropped():
    d = Decoder(_mapping())
    assert d.piece("grofftreat") == "סך הכל"
    assert d.piece("**treat**") == "הכל"
    assert d.text("groff<br>treat") == "סך הכל"
    assert d.piece("treat(") == "הכל ("
    assert d.tables([[["groff treat", "2014"]]]) == [[["סך הכל", "2014"]]]


def test_words_and_recovery_ignore_spacing_around_punctuation():
    assert strip_tags("a<br/>b <u>c</u>") == "a b c"
    assert words_of("**סך** | (הכל)-2014") == ["סך", "הכל", "2014"]
    assert word_recovery(["סך", "הכל", "סך"], "סך הכל") == (2, 3)


def _build(name: str, out: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "make_wse_fixtures", ROOT / "fixtures" / "make_wse_fixtures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(*next(s for s in module.SPECS if s[0] == name), out)


@pytest.fixture(scope="module")
def he_ruled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build("wse_he_ruled", tmp_path_factory.mktemp("wse"))


@pytest.fixture(scope="module")
def ar_plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build("wse_ar_plain", tmp_path_factory.mktemp("wse"))


def _truth(pdf: Path) -> list[list[str]]:
    return json.loads(pdf.with_suffix(".truth.json").read_text(encoding="utf-8"))["pages"][0][
        "tables"
    ][0]


def test_ruled_hebrew_table_through_the_table_finder(he_ruled):
    run = run_wse(str(he_ruled), 1, "pymupdf")
    assert run.word_recovery >= 0.99
    index, teds = best_match(run.tables, _truth(he_ruled))
    assert teds == pytest.approx(1.0) and cell_accuracy(run.tables[index], _truth(he_ruled)) == 1.0
    assert (
        run.tables[index][0][0] == _truth(he_ruled)[0][0]
    )  # logical order: the rightmost cell first


def test_unruled_arabic_table_through_pymupdf4llm_beats_the_direct_route(ar_plain):
    truth = _truth(ar_plain)
    wse = run_wse(str(ar_plain), 1, "pymupdf4llm")
    direct = run_direct(str(ar_plain), 1, "pymupdf4llm")
    assert wse.word_recovery >= 0.99
    wse_cells = cell_accuracy(wse.tables[best_match(wse.tables, truth)[0]], truth)
    i = best_match(direct.tables, truth)[0]
    direct_cells = cell_accuracy(direct.tables[i], truth) if i >= 0 else 0.0
    assert wse_cells >= 0.95 and wse_cells > direct_cells


def test_recover_tables_wse_is_the_routes_tables(he_ruled):
    tables = recover_tables_wse(str(he_ruled), 1, "pymupdf")
    assert tables and best_match(tables, _truth(he_ruled))[1] == pytest.approx(1.0)


@pytest.mark.skipif(
    not (CORPUS / "he_macro_table_ghostscript.pdf").exists(), reason="corpus not present"
)
def test_corpus_hebrew_table_words_come_back():
    run = run_wse(str(CORPUS / "he_macro_table_ghostscript.pdf"), 1, "pymupdf")
    assert run.words_total > 400 and run.word_recovery >= 0.99
