"""The `command:NAME` engine (seed 001's --ocr-command contract) with small script engines, and
the engine error boundary: whatever an engine's third-party code raises becomes an EngineError."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from pagefleet.routing.quality import GateInput, assess
from pagefleet.workers.engines import base
from pagefleet.workers.engines.base import Engine, EngineHealth, PageImage, create
from pagefleet.workers.errors import EngineCrashed, EngineTimeout, EngineUnavailable

SCRIPT = """#!{python}
import json, os, sys
pdf, page = sys.argv[-2], sys.argv[-1]
mode = {mode!r}
if mode == "sleep":
    import time; time.sleep(30)
if mode == "fail":
    print("cloud OCR said no", file=sys.stderr); sys.exit(3)
if mode == "spy":
    print(json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}))
    sys.exit(0)
if mode == "garbage":
    sys.stdout.buffer.write(b"\\xd7\\xa9\\xd7 \\xff\\xfe broken \\xd7")
    sys.exit(0)
print("# עמוד " + page)
print()
print("שלום עולם, זהו מסמך בדיקה בעברית עם כמה משפטים ארוכים כדי שהשער יקבל אותו בלי היסוס.")
"""


def script(tmp_path: Path, mode: str) -> str:
    path = tmp_path / f"ocr-{mode}"
    path.write_text(SCRIPT.format(python=sys.executable, mode=mode), encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def page(tmp_path: Path, number: int = 2) -> PageImage:
    pdf = tmp_path / "doc.pdf"
    pdf.write_bytes(b"%PDF-1.4\n")
    return PageImage(path=str(tmp_path / "page.png"), page=number, pdf=str(pdf))


def engine(tmp_path: Path, mode: str, **spec: object) -> Engine:
    return create(f"command:{mode}", spec={"argv": [script(tmp_path, mode)], **spec})


def test_the_program_gets_the_absolute_pdf_and_a_one_based_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAGEFLEET_STORAGE__S3_SECRET_KEY", "do-not-leak")
    monkeypatch.setenv("CLOUD_OCR_KEY", "k-123")
    monkeypatch.chdir(tmp_path)
    eng = engine(tmp_path, "spy", pass_env=["CLOUD_OCR_KEY"], env={"REGION": "eu"})
    relative = PageImage(path="page.png", page=3, pdf="doc.pdf")
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4\n")
    [out] = eng.read([relative], script="he")
    seen = json.loads(out.text)
    assert seen["argv"] == [str(tmp_path / "doc.pdf"), "3"]
    assert seen["env"]["CLOUD_OCR_KEY"] == "k-123" and seen["env"]["REGION"] == "eu"
    assert (
        seen["env"]["PAGEFLEET_SCRIPT"] == "he"
        and seen["env"]["PAGEFLEET_PAGE_IMAGE"] == "page.png"
    )
    assert not any(
        k.startswith("PAGEFLEET_S3") or k == "PAGEFLEET_BROKER__URL" for k in seen["env"]
    ), "no secrets"
    assert seen["cwd"] != str(tmp_path) and not os.path.exists(seen["cwd"]), (
        "a scratch directory, removed after"
    )


def test_markdown_output_passes_the_same_gate(tmp_path: Path) -> None:
    [out] = engine(tmp_path, "hebrew").read([page(tmp_path)], script="he")
    assert out.text.startswith("# עמוד 2") and out.engine == "command:hebrew"
    assert assess(GateInput(text=out.text, origin="ocr", expected_script="he")).ok
    [bad] = engine(tmp_path, "garbage").read([page(tmp_path)], script="he")
    verdict = assess(GateInput(text=bad.text, origin="ocr", expected_script="he"))
    assert not verdict.ok, "undecodable output is refused, not trusted because a command printed it"


def test_timeout_and_failure_are_typed(tmp_path: Path) -> None:
    with pytest.raises(EngineTimeout, match="within 1s"):
        engine(tmp_path, "sleep", timeout_s=1).read([page(tmp_path)], script="he")
    with pytest.raises(EngineCrashed, match="cloud OCR said no"):
        engine(tmp_path, "fail").read([page(tmp_path)], script="he")


@pytest.fixture
def fresh_settings(monkeypatch: pytest.MonkeyPatch):
    """Settings read from this test's environment, forgotten afterwards."""
    from pagefleet.workers.settings import get_settings

    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def test_configured_per_name_through_settings(
    tmp_path: Path, fresh_settings: pytest.MonkeyPatch
) -> None:
    fresh_settings.setenv(
        "PAGEFLEET_OCR__COMMANDS", json.dumps({"mine": {"argv": [script(tmp_path, "hebrew")]}})
    )
    eng = create("command:mine")
    assert eng.health().available and eng.label == "command:mine"
    assert "שלום" in eng.read([page(tmp_path)], script="he")[0].text
    with pytest.raises(EngineUnavailable, match="configured: mine"):
        create("command:other")
    missing = create("command:gone", spec={"argv": [str(tmp_path / "no-such-program")]})
    assert not missing.health().available
    with pytest.raises(EngineUnavailable, match="not an executable"):
        missing.read([page(tmp_path)], script="he")


class _BrokenImport(Engine):
    name = "broken-import"

    def health(self) -> EngineHealth:
        import paddle_is_not_installed_here  # noqa: F401

        return EngineHealth(self.label, True)

    def read(self, images: list[PageImage], *, script: str) -> list:
        import paddle_is_not_installed_here  # noqa: F401

        return []


class _Buggy(Engine):
    name = "buggy"

    def health(self) -> EngineHealth:
        return EngineHealth(self.label, True)

    def read(self, images: list[PageImage], *, script: str) -> list:
        return [images[5]]  # IndexError inside third-party-ish code


def test_engine_errors_are_translated_where_they_enter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = _BrokenImport()
    health = broken.health()
    assert not health.available and "ModuleNotFoundError" in health.detail
    with pytest.raises(EngineUnavailable, match="cannot import"):
        broken.read([page(tmp_path)], script="he")
    with pytest.raises(EngineCrashed, match="IndexError"):
        _Buggy().read([page(tmp_path)], script="he")

    def factory(**_: object) -> Engine:
        raise ImportError("libGL.so.1: cannot open shared object file")

    monkeypatch.setitem(base._REGISTRY, "needs-libgl", factory)
    with pytest.raises(EngineUnavailable, match="libGL"):
        create("needs-libgl")
