"""Local storage writes every object whole (a temporary file renamed) and makes its folder only where
it is missing: a document's artifacts share one, and a folder removed between two writes (a job's
work state, `delete_prefix`) is made again."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from pagefleet.workers.store.storage import LocalStorage


def test_objects_land_whole_in_folders_made_where_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = LocalStorage(tmp_path)
    made: list[Path] = []
    makedirs = os.makedirs
    monkeypatch.setattr(
        os, "makedirs", lambda path, *a, **k: (made.append(Path(path)), makedirs(path, *a, **k))[1]
    )
    storage.put_bytes("doc/report.json", b"{}")
    assert made == [tmp_path / "doc"]
    made.clear()
    storage.put_stream("doc/text.txt", io.BytesIO("שלום\f".encode()))
    assert made == []  # the document's folder is there: no mkdir
    storage.put_json("doc/deep/er/state.json", {"a": 1})
    assert made[0] == tmp_path / "doc/deep/er"
    assert storage.get_bytes("doc/text.txt") == "שלום\f".encode()
    assert storage.get_json("doc/deep/er/state.json") == {"a": 1}
    assert not [p for p in tmp_path.rglob("*.tmp")]  # no temporary file is left
    storage.delete_prefix("doc/deep")
    storage.put_bytes("doc/deep/er/state.json", b"again")
    assert storage.get_bytes("doc/deep/er/state.json") == b"again"
    assert sorted(storage.list_keys("doc")) == [
        "doc/deep/er/state.json",
        "doc/report.json",
        "doc/text.txt",
    ]


def test_a_write_replaces_an_object_at_once(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    storage.put_bytes("a/b.json", b"old")
    before = os.stat(tmp_path / "a/b.json").st_ino
    storage.put_bytes("a/b.json", b"new")
    assert storage.get_bytes("a/b.json") == b"new"
    assert os.stat(tmp_path / "a/b.json").st_ino != before  # a rename onto it, not a write into it


def test_compact_work_state_reads_back_as_json_dumps_wrote_it(tmp_path: Path) -> None:
    """Compact JSON (range objects) is written by pydantic-core's encoder: what `json.dumps` wrote
    reads back the same, non-finite floats included (a NaN metric stays NaN, not null)."""
    import json
    import math

    from pagefleet.workers.store.storage import LocalStorage

    store = LocalStorage(str(tmp_path))
    state = {
        "outcome": {"first": 1, "last": 2},
        "records": [
            {
                "text": "שלום عربي ﻻ \u200f\n",
                "metrics": {
                    "a": 0.1,
                    "b": 1e-05,
                    "big": 1e300,
                    "nan": float("nan"),
                    "inf": float("inf"),
                },
                "edits": [],
                "n": None,
                "ok": True,
            }
        ],
    }
    store.put_json("work/r.json", state, compact=True)
    back = store.get_json("work/r.json")
    reference = json.loads(json.dumps(state, ensure_ascii=False))
    metrics = back["records"][0].pop("metrics")
    expected = reference["records"][0].pop("metrics")
    assert back == reference
    assert math.isnan(metrics.pop("nan")) and math.isnan(expected.pop("nan"))
    assert metrics == expected and metrics["inf"] == math.inf
    assert b"\n" not in store.get_bytes("work/r.json")  # compact: one line


def test_a_local_store_is_opened_once_per_root(tmp_path) -> None:
    """`open_storage` of one file URL (or plain path) gives the same store each time; another
    root, another store."""
    from pagefleet.workers.store.storage import open_storage

    first = open_storage((tmp_path / "a").as_uri())
    assert (
        open_storage((tmp_path / "a").as_uri()) is first
        and first.root == (tmp_path / "a").resolve()
    )
    assert open_storage(str(tmp_path / "a")) is open_storage(str(tmp_path / "a"))
    other = open_storage((tmp_path / "b").as_uri())
    assert other is not first and other.root == (tmp_path / "b").resolve()
    other.put_text("k/x.txt", "x")
    assert (tmp_path / "b" / "k" / "x.txt").read_text() == "x"
