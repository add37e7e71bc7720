"""Review studio path safety: only listed documents are served, nothing outside the root is read
or written, whatever the id, key or symlink says."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from pagefleet.workers.cli.studio.config import StudioConfigError, check_bind, is_loopback
from pagefleet.workers.cli.studio.library import (
    ROOT_ID,
    Library,
    NotFound,
    safe_local_path,
    safe_relative,
)


def _doc_folder(root: Path, name: str, marker: str = "document.json") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / marker).write_text(json.dumps({"pages": []}), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    "key", ["../x", "a/../../x", "/etc/passwd", "a\\..\\b", "a/\x00", "", "./a", "a/./b"]
)
def test_unsafe_keys_are_not_found(key: str) -> None:
    with pytest.raises(NotFound):
        safe_relative(key)


def test_safe_keys_pass() -> None:
    assert safe_relative("artifacts/abc/document.json") == "artifacts/abc/document.json"
    assert safe_relative("שלום/report.json") == "שלום/report.json"


def test_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "out", tmp_path / "secret"
    root.mkdir()
    outside.mkdir()
    (outside / "document.json").write_text("{}", encoding="utf-8")
    os.symlink(outside / "document.json", root / "leak.json")
    with pytest.raises(NotFound):
        safe_local_path(root, "leak.json")


def test_listing_finds_documents_and_skips_hidden_and_symlinked_folders(tmp_path: Path) -> None:
    root = tmp_path / "out"
    _doc_folder(root, "a")
    _doc_folder(root, "nested/b", "error.json")
    _doc_folder(root, ".pagefleet/work/job")
    _doc_folder(tmp_path, "elsewhere")
    os.symlink(tmp_path / "elsewhere", root / "link")
    library = Library.open(str(root))
    assert [r.id for r in library.documents()] == ["a", "nested/b"]
    assert library.find("nested/b").key("report.json") == "nested/b/report.json"
    for bad in ("link", ".pagefleet/work/job", "../elsewhere", "a/..", "/etc", ROOT_ID):
        with pytest.raises(NotFound):
            library.find(bad)


def test_root_folder_itself_is_a_document(tmp_path: Path) -> None:
    _doc_folder(tmp_path, "single")
    library = Library.open(str(tmp_path / "single"))
    ref = library.find(ROOT_ID)
    assert ref.prefix == "" and library.read_json(ref, "document.json") == {"pages": []}


def test_reads_cannot_leave_the_document(tmp_path: Path) -> None:
    root = tmp_path / "out"
    _doc_folder(root, "a")
    (tmp_path / "passwd").write_text("secret", encoding="utf-8")
    library = Library.open(str(root))
    ref = library.find("a")
    assert library.read_bytes(ref, "missing.json") is None
    for name in ("../../passwd", "/etc/passwd", "..\\passwd"):
        with pytest.raises(NotFound):
            library.read_bytes(ref, name)


def test_only_review_files_are_writable(tmp_path: Path) -> None:
    root = tmp_path / "out"
    folder = _doc_folder(root, "a")
    before = (folder / "document.json").read_bytes()
    library = Library.open(str(root))
    ref = library.find("a")
    for name in ("document.json", "document.md", "../x.json"):
        with pytest.raises(NotFound):
            library.write(ref, name, b"{}", "application/json")
    library.write(ref, "review.json", b"{}", "application/json")
    assert (folder / "review.json").read_bytes() == b"{}" and (
        folder / "document.json"
    ).read_bytes() == before


def test_symlinked_review_file_cannot_write_outside(tmp_path: Path) -> None:
    root = tmp_path / "out"
    folder = _doc_folder(root, "a")
    target = tmp_path / "victim.txt"
    target.write_text("keep", encoding="utf-8")
    os.symlink(target, folder / "review.json")
    library = Library.open(str(root))
    with pytest.raises(NotFound):
        library.write(library.find("a"), "review.json", b"{}", "application/json")
    assert target.read_text(encoding="utf-8") == "keep"


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.8.0.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("192.168.1.5", False),
        ("::", False),
        ("example.org", False),
    ],
)
def test_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_public_host_needs_a_token() -> None:
    check_bind("127.0.0.1", None)
    check_bind("0.0.0.0", "t0ken")
    with pytest.raises(StudioConfigError, match="without a token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(StudioConfigError):
        check_bind("10.0.0.7", "")


def test_review_command_refuses_bad_setups_with_exit_64(tmp_path: Path) -> None:
    from rich.console import Console

    from pagefleet.workers.cli.main import parser
    from pagefleet.workers.cli.review import cmd_review

    console = Console(file=io.StringIO(), markup=False)
    missing = parser().parse_args(["review", str(tmp_path / "nope")])
    public = parser().parse_args(["review", str(tmp_path), "--host", "0.0.0.0"])
    bad_port = parser().parse_args(["review", str(tmp_path), "--port", "70000"])
    assert [cmd_review(a, console) for a in (missing, public, bad_port)] == [64, 64, 64]
