"""`source.inspect_many`: several documents probed in one sandbox command (the real fork server and
MuPDF) give what `inspect` gives each alone — the same probe with the same first pages, or the same
typed error — in order, whether the error comes before MuPDF, from MuPDF's answer, from a document
MuPDF cannot open, or from the command itself dying."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from pagefleet.workers.errors import InputError, SandboxError
from pagefleet.workers.pdf import source
from pagefleet.workers.settings import Options, get_settings


def _pdf(path: Path, pages: int, words: str = "hello world", **save: object) -> Path:
    with pymupdf.open() as doc:
        for i in range(pages):
            doc.new_page().insert_text((72, 72), f"{words} {i + 1}")
        doc.save(path, **save)
    return path


@pytest.fixture
def mixed(tmp_path: Path) -> list[tuple[source.SourceFile, Options]]:
    """Good documents of 1, 3 and 30 pages (the last over `split_range_pages`: no pages read with the
    probe) among an empty file, a user-password one, one MuPDF cannot open, one over its page limit
    and one over its byte limit."""
    files = [
        _pdf(tmp_path / "one.pdf", 1, "first"),
        tmp_path / "empty.pdf",
        _pdf(tmp_path / "three.pdf", 3),
        _pdf(
            tmp_path / "locked.pdf",
            1,
            encryption=pymupdf.PDF_ENCRYPT_AES_256,
            user_pw="u",
            owner_pw="o",
        ),
        tmp_path / "broken.pdf",
        _pdf(tmp_path / "thirty.pdf", 30),
        _pdf(tmp_path / "four.pdf", 4),
        _pdf(tmp_path / "big.pdf", 1),
        _pdf(tmp_path / "last.pdf", 2, "last"),
    ]
    files[1].write_bytes(b"%PDF-1.7")
    files[4].write_bytes(b"%PDF-1.7 passes the header check, not MuPDF")
    sources = [source.local_source(str(f), Options(), hashed=False) for f in files]
    files[1].write_bytes(
        b""
    )  # emptied after it was looked at: the check before MuPDF reads it again
    options = [Options(structure=False)] * len(files)
    options[6] = Options(structure=False, max_pages=3)
    options[7] = Options(structure=True, max_bytes=100)
    return list(zip(sources, options))


def _outcome(found: dict | InputError) -> object:
    return (
        (type(found).__name__, found.code, found.message)
        if isinstance(found, InputError)
        else found
    )


def _alone(items: list[tuple[source.SourceFile, Options]]) -> list[object]:
    out: list[object] = []
    for src, options in items:
        try:
            out.append(source.inspect(src, options, get_settings()))
        except InputError as exc:
            out.append(exc)
    return [_outcome(f) for f in out]


def test_one_command_answers_as_each_alone(mixed, monkeypatch: pytest.MonkeyPatch) -> None:
    commands: list[tuple[str, int]] = []
    run_child = source.run_child

    def spy(command: str, pdf: str, params: dict, **limits):
        commands.append((command, len(params.get("docs", [pdf]))))
        return run_child(command, pdf, params, **limits)

    monkeypatch.setattr(source, "run_child", spy)
    found = [_outcome(f) for f in source.inspect_many(mixed, get_settings())]
    # empty and big fail before MuPDF; broken stops the command after three.pdf and locked.pdf: it
    # (probed, then opened bare) and the three after it go alone
    assert commands[0] == ("probe_many", 7)
    assert commands[1:] == [("probe", 1)] * 5
    commands.clear()
    assert found == _alone(mixed)
    codes = [f[1] if isinstance(f, tuple) else f["page_count"] for f in found]
    assert codes == [
        1,
        "empty_input",
        3,
        "encrypted_pdf",
        "invalid_pdf",
        30,
        "too_many_pages",
        "pdf_too_large",
        2,
    ]
    assert "first 1" in found[0]["pages"][0]["text"] and len(found[2]["pages"]) == 3
    assert "pages" not in found[5] and found[8]["pages"][1]["number"] == 2


def test_a_command_that_dies_leaves_every_document_to_a_command_of_its_own(
    mixed, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_child = source.run_child
    commands: list[str] = []

    def dying(command: str, pdf: str, params: dict, **limits):
        commands.append(command)
        if command == "probe_many":
            raise SandboxError("probe_many failed: killed by signal 9 (memory limit?)")
        return run_child(command, pdf, params, **limits)

    monkeypatch.setattr(source, "run_child", dying)
    found = [_outcome(f) for f in source.inspect_many(mixed, get_settings())]
    assert (
        commands.count("probe_many") == 1 and commands.count("probe") == 8
    )  # 7 alone, broken twice
    monkeypatch.setattr(source, "run_child", run_child)
    assert found == _alone(mixed)


def test_nothing_to_probe_together(tmp_path: Path) -> None:
    one = _pdf(tmp_path / "one.pdf", 1)
    options = Options(structure=False)
    assert source.inspect_many([], get_settings()) == []
    alone = source.inspect_many(
        [(source.local_source(str(one), options, hashed=False), options)], get_settings()
    )
    assert len(alone) == 1 and alone[0]["page_count"] == 1  # type: ignore[index]
