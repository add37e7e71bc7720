"""Each engine declares what it reads and whether its text carries structure; the fleet asks it."""

from __future__ import annotations

from pagefleet.workers.engines import engine_modules, import_failures, load_builtin
from pagefleet.workers.engines.base import ALL_SCRIPTS, gives_structure, registered, scripts_read


def test_every_module_of_the_package_is_loaded_and_registers_its_engines() -> None:
    load_builtin()
    assert (
        "pagefleet.workers.engines.tesseract" in engine_modules()
        and "pagefleet.workers.engines.vlm" in engine_modules()
    )
    assert {"tesseract", "paddle", "lightonocr", "dots", "qwen", "http", "command", "null"} <= set(
        registered()
    )
    assert "pagefleet.workers.engines.tesseract" not in import_failures()


def test_every_engine_reads_only_routed_scripts() -> None:
    for name in registered():
        assert scripts_read(name) <= ALL_SCRIPTS, name
        assert "latin" in scripts_read(name), name


def test_plain_text_engines_and_markdown_engines() -> None:
    assert not gives_structure("tesseract:heb+eng") and not gives_structure("paddle:arabic")
    assert gives_structure("dots") and gives_structure("qwen:Qwen/Qwen2.5-VL-3B-Instruct")
    assert gives_structure("http:dots")
    assert not gives_structure("pymupdf") and not gives_structure("")  # not an engine: plain text


def test_tesseract_reads_the_scripts_of_its_language_packs() -> None:
    from pagefleet.workers.engines.tesseract import TesseractEngine

    assert TesseractEngine.languages("heb+eng") == {"heb", "eng"}
    assert TesseractEngine.reads("ara+eng") == {"latin", "ar"}
    assert TesseractEngine.reads(None) == ALL_SCRIPTS
