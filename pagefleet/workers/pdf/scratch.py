"""The sandbox's scratch folders: where a worker process's two scratch files (a command's JSON
result, its stderr; `forkserver.ForkServerClient.scratch_files`) live.

    scratch_base(setting, shm_free_mb)   the folder they go under: the setting, else /dev/shm
                                         where it is a roomy tmpfs, else the temp dir
    scratch_folder(base=None)            this process's own folder under it (those of processes
                                         that are gone removed first)

The result file is emptied before every command. On ext4, truncating a file that holds data starts
its writeback, and the command waited for it: ~0.2 ms of wall a command, ~0.3 ms of a one-page
document's parent CPU. A tmpfs has no such cost.
A command that finds the folder full (ENOSPC: a RAM /dev/shm other processes filled) is not the
file's fault: `sandbox.run_child` runs it again with the process's scratch moved to the temp dir
(`ForkServerClient.scratch_to_disk`), and where that is full too raises a retryable StorageError.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

_SCRATCH = "pagefleet-sbx-"
# free MB /dev/shm needs before the scratch files go there (the deploy manifests size it above this)
SCRATCH_SHM_MB = 256


def scratch_base(setting: str = "", *, shm_free_mb: int, shm: str = "/dev/shm") -> Path:
    """Where scratch folders go: `setting` (`sandbox_scratch_dir`) when given; else `shm` where it
    is a RAM file system (tmpfs) with at least `shm_free_mb` free — a container's default 64 MB
    /dev/shm is not, and a big range's result must never meet a full disk there — else the temp
    dir."""
    if setting:
        return Path(setting)
    try:
        found = os.statvfs(shm)
        tmpfs = _mount_type(shm) == "tmpfs"
    except OSError:
        return Path(tempfile.gettempdir())
    if (
        tmpfs
        and found.f_bavail * found.f_frsize >= shm_free_mb << 20
        and os.access(shm, os.W_OK | os.X_OK)
    ):
        return Path(shm)
    return Path(tempfile.gettempdir())


def _mount_type(path: str) -> str:
    """The file system type of the mount point `path` (/proc/mounts), "" when it is not one."""
    kind = ""
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:  # a later mount on the same point hides an earlier one
                fields = line.split()
                if len(fields) > 2 and fields[1] == path:
                    kind = fields[2]
    except OSError:
        return ""
    return kind


def scratch_folder(base: Path | None = None) -> Path:
    """A folder of this process's own for its scratch files, `pagefleet-sbx-<pid>-<random>`: they
    hold the last command's result (a page's text), so the folders of processes that are gone go
    first (a pool process is often killed, and never removes its own), and this one goes when the
    process exits normally. `base`: `scratch_base()` by the settings."""
    if base is None:
        from pagefleet.workers.settings import get_settings

        settings = get_settings()
        base = scratch_base(settings.advanced.sandbox_scratch_dir, shm_free_mb=SCRATCH_SHM_MB)
    for old in base.glob(f"{_SCRATCH}*-*"):
        pid = old.name[len(_SCRATCH) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{_SCRATCH}{os.getpid()}-", dir=base))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
