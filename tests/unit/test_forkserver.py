"""The warm sandbox server: a fresh forked child per command, limits and timeouts still hold, and a
dead server is replaced on the next call."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pymupdf
import pytest

from pagefleet.workers.errors import SandboxError
from pagefleet.workers.pdf.forkserver import CLIENT
from pagefleet.workers.pdf.sandbox import run_child

LIMITS = {"timeout_s": 60.0, "memory_mb": 3072}


@pytest.fixture
def pdf(tmp_path: Path) -> str:
    path = tmp_path / "three.pdf"
    with pymupdf.open() as doc:
        for i in range(3):
            doc.new_page().insert_text((72, 72), f"page {i + 1} hello world")
        doc.save(path)
    return str(path)


def test_commands_share_one_warm_server(pdf: str) -> None:
    first = run_child("probe", pdf, {}, **LIMITS)
    server = CLIENT._proc.pid if CLIENT._proc else None
    pages = run_child("extract", pdf, {"first": 1, "last": 3}, **LIMITS)["pages"]
    assert first["page_count"] == 3 and [p["number"] for p in pages] == [1, 2, 3]
    assert "page 2 hello world" in pages[1]["text"]
    assert server is not None and CLIENT._proc is not None and CLIENT._proc.pid == server


def test_a_dead_server_is_replaced(pdf: str) -> None:
    run_child("probe", pdf, {}, **LIMITS)
    assert CLIENT._proc is not None
    CLIENT._proc.kill()
    CLIENT._proc.wait()
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3


def test_commands_reuse_two_scratch_files_and_a_failure_never_returns_the_last_result(
    pdf: str, tmp_path: Path
) -> None:
    """Creating a file costs ~0.5 ms of CPU on this disk: a server's commands write into the same
    two files, emptied before each, so a command that dies hands back no earlier command's result;
    a new server gets new names."""
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3
    files = CLIENT.scratch_files()
    assert run_child("extract", pdf, {"first": 1, "last": 1}, **LIMITS)["pages"][0]["number"] == 1
    assert CLIENT.scratch_files() == files and sorted(
        p.name for p in files[0].parent.iterdir()
    ) == sorted(p.name for p in files)
    render_over_memory(pdf, tmp_path)  # dies: its result file stays empty
    assert files[0].read_bytes() == b""
    CLIENT._proc.kill()
    CLIENT._proc.wait()
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3
    assert set(CLIENT.scratch_files()).isdisjoint(files)


def render_over_memory(pdf: str, tmp_path: Path) -> None:
    """A 33-megapixel render under a 16 MB limit: the child fails, a SandboxError says so."""
    params = {"page": 1, "dpi": 600, "png": str(tmp_path / "big.png")}
    with pytest.raises(SandboxError):
        run_child("render", pdf, params, timeout_s=60.0, memory_mb=16)


def many_pages(tmp_path: Path) -> Path:
    """400 Hebrew pages: ~0.05–0.06 s to extract, far past a 0.01 s limit."""
    path = tmp_path / "many.pdf"
    with pymupdf.open() as doc:
        for _ in range(400):
            doc.new_page().insert_text((72, 72), "שלום עולם " * 40)
        doc.save(path)
    return path


def extract_past_timeout(tmp_path: Path) -> None:
    """400 Hebrew pages to extract in 0.01 s: the server kills the child, a SandboxError says so."""
    path = many_pages(tmp_path)
    with pytest.raises(SandboxError, match="timed out"):
        run_child("extract", str(path), {"first": 1, "last": 400}, timeout_s=0.01, memory_mb=3072)


def test_a_child_over_its_memory_limit_is_a_sandbox_error(pdf: str, tmp_path: Path) -> None:
    render_over_memory(pdf, tmp_path)
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3  # the server itself lives on


def test_a_command_past_its_timeout_is_killed(tmp_path: Path) -> None:
    extract_past_timeout(tmp_path)


def test_unknown_command_fails_cleanly(pdf: str) -> None:
    with pytest.raises(SandboxError, match="unknown sandbox command"):
        run_child("nope", pdf, {}, **LIMITS)


# ---------------------------------------------------------------- a child reused for N commands


@pytest.fixture
def reuse(monkeypatch: pytest.MonkeyPatch):
    """`sandbox_reuse` (and `sandbox_reuse_document`, off unless asked) set for this test (read by
    every run_child), forgotten afterwards."""
    from pagefleet.workers.settings import get_settings

    def set_reuse(n: int, same_document: bool = False) -> None:
        monkeypatch.setenv("PAGEFLEET_ADVANCED__SANDBOX_REUSE", str(n))
        monkeypatch.setenv("PAGEFLEET_ADVANCED__SANDBOX_REUSE_DOCUMENT", str(same_document).lower())
        get_settings.cache_clear()

    yield set_reuse
    monkeypatch.delenv("PAGEFLEET_ADVANCED__SANDBOX_REUSE", raising=False)
    monkeypatch.delenv("PAGEFLEET_ADVANCED__SANDBOX_REUSE_DOCUMENT", raising=False)
    get_settings.cache_clear()


def _alive(proc) -> bool:
    import psutil

    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:  # reaped since it was listed
        return False


def server_children(settled: bool = False) -> list[int]:
    """The server's live children; `settled`: once a child it retires after replying is reaped."""
    import time

    import psutil

    assert CLIENT._proc is not None
    deadline = time.monotonic() + 5
    while True:
        pids = [c.pid for c in psutil.Process(CLIENT._proc.pid).children() if _alive(c)]
        if not settled or not pids or time.monotonic() > deadline:
            return pids
        time.sleep(0.01)


def test_a_child_runs_up_to_n_commands_then_leaves(pdf: str, reuse) -> None:
    reuse(3)
    CLIENT.close()  # a server with no child yet
    seen = []
    for i in range(3):
        assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3
        seen.append(server_children(settled=i == 2))
    assert len(seen[0]) == 1 and seen[1] == seen[0]  # the same child ran the second command
    assert seen[2] == []  # the third was its last: reaped before the next request
    reuse(1)
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3
    assert (
        server_children(settled=True) == []
    )  # the default: a fresh child per command, gone once it answered


def test_a_reused_child_that_fails_is_replaced(pdf: str, tmp_path: Path, reuse) -> None:
    reuse(5)
    run_child("probe", pdf, {}, **LIMITS)
    first = server_children()
    render_over_memory(pdf, tmp_path)  # its limits are per command
    assert server_children(settled=True) == []  # a failed command ends the child
    pages = run_child("extract", pdf, {"first": 1, "last": 3}, **LIMITS)["pages"]
    assert "page 3 hello world" in pages[2]["text"]
    assert server_children() not in ([], first)  # a fresh child, kept for the next command


def test_a_reused_child_past_its_timeout_is_killed(pdf: str, tmp_path: Path, reuse) -> None:
    reuse(5)
    run_child("probe", pdf, {}, **LIMITS)
    extract_past_timeout(tmp_path)
    assert server_children(settled=True) == []
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3


def test_a_reused_child_killed_between_commands_is_replaced(pdf: str, reuse) -> None:
    import os
    import signal

    reuse(5)
    run_child("probe", pdf, {}, **LIMITS)
    (kept,) = server_children()
    os.kill(kept, signal.SIGKILL)  # the OOM killer, an operator: not a command of ours
    assert (
        server_children(settled=True) == []
    )  # between commands: gone before the next one is written to it
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3
    assert server_children() not in ([], [kept])


def test_reused_children_read_every_document_alike(fixtures_dir: Path, reuse) -> None:
    """What one document leaves in a reused child (MuPDF's store, fonts, caches) changes nothing in
    the next one's text or evidence: every fixture probed and extracted both ways."""
    files = sorted(fixtures_dir.glob("*.pdf"))
    assert len(files) >= 10

    def read_all() -> list[dict]:
        return [
            run_child(
                "probe", str(f), {"extract_upto": 25, "max_pages": 100, "structure": True}, **LIMITS
            )
            for f in files
        ]

    reuse(1)
    fresh = read_all()
    reuse(len(files))
    assert read_all() == fresh


def test_a_documents_commands_share_one_child_and_another_file_gets_a_fresh_one(
    pdf: str, tmp_path: Path, reuse
) -> None:
    """`sandbox_reuse_document` (the default): one child runs every command on its first command's
    file (a big document's ranges), whatever `sandbox_reuse` says; a command for another file gets
    a fresh child, and a kept child leaves after `IDLE_S` without a command."""
    import time

    from pagefleet.workers.pdf.forkserver import IDLE_S

    other = tmp_path / "other.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "another document")
        doc.save(other)
    reuse(1, same_document=True)
    CLIENT.close()
    run_child("probe", pdf, {}, **LIMITS)
    (kept,) = server_children()
    for first in (1, 2, 3):
        page = run_child("extract", pdf, {"first": first, "last": first}, **LIMITS)["pages"][0]
        assert f"page {first} hello world" in page["text"]
        assert server_children() == [kept]
    assert (
        "another document"
        in run_child("extract", str(other), {"first": 1, "last": 1}, **LIMITS)["pages"][0]["text"]
    )
    (fresh,) = server_children()
    assert fresh != kept
    time.sleep(IDLE_S + 0.5)
    assert server_children(settled=True) == []
    reuse(1)
    run_child("probe", pdf, {}, **LIMITS)
    assert (
        server_children(settled=True) == []
    )  # off: a fresh child per command, gone once it answered


def test_a_batchs_documents_share_one_child_and_the_next_batch_gets_a_fresh_one(
    pdf: str, tmp_path: Path, reuse
) -> None:
    """`sandbox.shared_child` (one submission's small documents in one split task): every command
    within the block, on any file, runs in the child of its first one, whatever `sandbox_reuse`
    says; another batch, or a command outside any, gets a fresh child."""
    from pagefleet.workers.pdf.sandbox import shared_child

    other = tmp_path / "other.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "another document")
        doc.save(other)
    reuse(1)
    CLIENT.close()
    with shared_child("batch-1"):
        run_child("probe", pdf, {}, **LIMITS)
        (kept,) = server_children()
        for path in (str(other), pdf, str(other)):
            assert run_child("probe", path, {}, **LIMITS)["page_count"] in (1, 3)
            assert server_children() == [kept]
    with shared_child("batch-2"):
        text = run_child("extract", str(other), {"first": 1, "last": 1}, **LIMITS)["pages"][0][
            "text"
        ]
        assert "another document" in text
        assert (
            len([pid for pid in server_children() if pid != kept]) == 1
        )  # the last batch's may still be leaving
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3
    assert (
        server_children(settled=True) == []
    )  # outside a batch: a fresh child per command, gone once it answered


def test_a_shared_child_runs_at_most_SHARE_MAX_commands(pdf: str, reuse, monkeypatch) -> None:
    """The batches of one worker process share its child (`pagefleet.tasks.split.split_batch`'s token is the
    process's), but not for ever: past `SHARE_MAX` commands the next one gets a fresh child."""
    from pagefleet.workers.pdf import sandbox
    from pagefleet.workers.pdf.sandbox import shared_child

    reuse(1)
    monkeypatch.setattr(sandbox, "SHARE_MAX", 3)
    CLIENT.close()
    seen = []
    with shared_child("batches:1"):
        for _ in range(4):
            assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3
            seen.append(set(server_children()))
    assert seen[0] == seen[1] == seen[2] and len(seen[0]) == 1  # three commands in one child
    assert seen[3] - seen[0]  # the fourth: a fresh one


def test_threads_of_one_process_each_get_their_own_result(pdf: str, tmp_path: Path) -> None:
    """A split batch reads the next document's head in a thread while this one is decided: two
    threads sending commands at once each read their own command's result, never the other's (one
    pair of scratch files serves the process: a command and the reading of its result go together)."""
    from concurrent.futures import ThreadPoolExecutor

    one = tmp_path / "one.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "only page")
        doc.save(one)

    def probes(path: str) -> list[int]:
        return [
            run_child("probe", path, {"extract_upto": 8, "max_pages": 8}, **LIMITS)["page_count"]
            for _ in range(8)
        ]

    with ThreadPoolExecutor(2) as pool:
        three, single = pool.submit(probes, pdf), pool.submit(probes, str(one))
        assert three.result() == [3] * 8 and single.result() == [1] * 8


def test_scratch_folders_of_processes_that_are_gone_are_removed(tmp_path: Path) -> None:
    """A scratch folder holds the last command's result (a page's text): a new one sweeps those of
    processes that no longer run, and keeps a live process's."""
    from pagefleet.workers.pdf.scratch import scratch_folder

    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp_path / f"pagefleet-sbx-{gone.pid}-abc"
    live = tmp_path / f"pagefleet-sbx-{os.getppid()}-def"
    other = tmp_path / "pagefleet-sbx-notapid"  # not one of ours (a command's temporary folder)
    for folder in (dead, live, other):
        folder.mkdir()
        (folder / "result.json").write_text("page text")
    mine = scratch_folder(tmp_path)
    assert mine.name.startswith(f"pagefleet-sbx-{os.getpid()}-") and mine.is_dir()
    assert not dead.exists() and live.exists() and other.exists()


def test_scratch_files_go_to_a_roomy_ram_file_system_or_the_temp_dir(
    tmp_path: Path, monkeypatch
) -> None:
    """The result file is emptied before every command: on ext4 that waits for its writeback
    (~0.2 ms a command); /dev/shm is chosen where it is a tmpfs with `scratch.SCRATCH_SHM_MB` free
    (not a container's default 64 MB), the setting wins over both, and anything else is the temp dir."""
    import tempfile

    from pagefleet.workers.pdf import scratch
    from pagefleet.workers.settings import get_settings

    temp = Path(tempfile.gettempdir())
    assert scratch.scratch_base(str(tmp_path), shm_free_mb=0) == tmp_path  # sandbox_scratch_dir
    assert scratch.scratch_base(shm=str(tmp_path / "missing"), shm_free_mb=0) == temp
    assert (
        scratch._mount_type(str(tmp_path)) == ""
        and scratch.scratch_base(shm=str(tmp_path), shm_free_mb=0) == temp
    )
    assert scratch._mount_type("/proc") == "proc"
    if scratch._mount_type("/dev/shm") == "tmpfs":  # this machine's: as a worker would find it
        assert scratch.scratch_base(shm_free_mb=0) == Path("/dev/shm")
        assert scratch.scratch_base(shm_free_mb=1 << 40) == temp  # a tmpfs without that much room
    monkeypatch.setenv("PAGEFLEET_ADVANCED__SANDBOX_SCRATCH_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        assert scratch.scratch_folder().parent == tmp_path
    finally:
        monkeypatch.delenv("PAGEFLEET_ADVANCED__SANDBOX_SCRATCH_DIR")
        get_settings.cache_clear()


def test_a_full_scratch_folder_moves_to_the_disk_and_is_never_a_bad_file(
    pdf: str, tmp_path: Path, monkeypatch
) -> None:
    """A RAM /dev/shm that other processes filled: the child cannot write its result (ENOSPC, here
    /dev/full). That is not the file's fault: the command runs again with this process's scratch in
    the temp dir; where that is full too, a retryable StorageError — never the SandboxError a page or
    a document would be failed for."""
    import tempfile

    from pagefleet.workers.errors import StorageError

    ram = tmp_path / "ram"
    ram.mkdir()
    monkeypatch.setattr(CLIENT, "_base", ram)
    monkeypatch.setattr(CLIENT, "_folder", None)
    monkeypatch.setattr(CLIENT, "_files", None)
    real, full = CLIENT.scratch_files, [1]

    def scratch_files() -> tuple[Path, Path]:
        out, err = real()
        if full[0]:
            full[0] -= 1
            return Path("/dev/full"), err
        return out, err

    monkeypatch.setattr(CLIENT, "scratch_files", scratch_files)
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3  # once more, on the disk
    assert CLIENT._folder is not None and CLIENT._folder[1].parent == Path(tempfile.gettempdir())
    assert not any(ram.iterdir())  # the full folder went
    full[0] = 1  # the disk full as well
    with pytest.raises(StorageError, match="no space left"):
        run_child("probe", pdf, {}, **LIMITS)
    assert run_child("probe", pdf, {}, **LIMITS)["page_count"] == 3  # space again: as ever


def test_a_range_crosses_the_sandbox_unchanged(fixtures_dir: Path) -> None:
    """The child writes its result with pydantic-core's encoder and the worker reads it with
    json.loads: every page of Hebrew, Arabic and English fixtures comes back equal to the pages
    read in this process."""
    from pagefleet.workers.pdf import mupdf

    root = fixtures_dir
    names = (
        "born_digital_hebrew.pdf",
        "born_digital_arabic_presentation_forms.pdf",
        "born_digital_english.pdf",
        "arabic_numbers_brackets_drawn_left_to_right.pdf",
        "mixed_multipage_document.pdf",
    )
    for name in names:
        path = str(root / name)
        here = mupdf.extract_range(path, 1, 50)
        mupdf.forget()
        assert run_child("extract", path, {"first": 1, "last": 50}, **LIMITS) == here, name


def test_the_warm_up_builds_the_character_tables_children_use() -> None:
    """The server's warm-up makes the tables a child's first page would otherwise build (~7 ms
    for the class table's array alone): in a fresh interpreter, after `warm_up` the class table,
    the glyph-kind and run-unit tables have their arrays and the feature bits their table."""
    import sys

    probe = (
        "from pagefleet.workers.pdf import fastwalk, mupdf, runs, warmup\n"
        "from pagefleet.routing import charclass\n"
        "assert charclass.CLASS_TABLE._array is None and not charclass._FEATURES\n"
        "warmup.warm_up(mupdf)\n"
        "tables = (charclass.CLASS_TABLE, fastwalk.GLYPH_KINDS, runs._KINDS)\n"
        "print(all(t._array is not None for t in tables), bool(charclass._FEATURES))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "True"]
