"""`pagefleet wse encode / decode / parse` through the real CLI entry point."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pymupdf
import pytest

from pagefleet.routing.scripts import is_rtl_letter
from pagefleet.workers.cli.exitcodes import ExitCode
from pagefleet.workers.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def he_ruled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = importlib.util.spec_from_file_location(
        "make_wse_fixtures", ROOT / "fixtures" / "make_wse_fixtures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(
        *next(s for s in module.SPECS if s[0] == "wse_he_ruled"), tmp_path_factory.mktemp("wse")
    )


def _truth(pdf: Path) -> list[list[str]]:
    return json.loads(pdf.with_suffix(".truth.json").read_text(encoding="utf-8"))["pages"][0][
        "tables"
    ][0]


def test_encode_then_decode(he_ruled, tmp_path, capsys):
    out = tmp_path / "enc.pdf"
    assert main(["wse", "encode", str(he_ruled), "--out", str(out), "--pages", "1"]) == 0
    assert (tmp_path / "enc.wse.json").is_file()
    with pymupdf.open(out) as doc:
        assert not any(is_rtl_letter(ch) for ch in doc[0].get_text())
    capsys.readouterr()
    assert main(["wse", "decode", str(out), "--parser", "pymupdf"]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[0])
    assert record["page"] == 1 and record["source_page"] == 1
    assert record["tables"][0] == _truth(he_ruled)


def test_parse_direct_and_encoded(he_ruled, capsys):
    assert main(["wse", "parse", str(he_ruled), "--parser", "pymupdf"]) == 0
    record = json.loads(capsys.readouterr().out.strip())
    assert (
        record["route"] == "wse"
        and record["word_recovery"] >= 0.99
        and record["tables"][0] == _truth(he_ruled)
    )
    assert main(["wse", "parse", str(he_ruled), "--parser", "pymupdf", "--direct"]) == 0
    assert json.loads(capsys.readouterr().out.strip())["route"] == "direct"


def test_usage_errors_are_one_line(he_ruled, tmp_path, capsys):
    assert (
        main(["wse", "encode", str(he_ruled), "--out", str(tmp_path / "x.pdf"), "--pages", "2"])
        == ExitCode.INPUT_ERROR
    )
    assert "--pages" in capsys.readouterr().err
    assert main(["wse", "decode", str(he_ruled)]) == ExitCode.INPUT_ERROR
    assert "no mapping" in capsys.readouterr().err
    missing = tmp_path / "missing.pdf"
    assert (
        main(["wse", "encode", str(missing), "--out", str(tmp_path / "y.pdf")])
        == ExitCode.INPUT_ERROR
    )
    assert "Traceback" not in capsys.readouterr().err
