"""The docs site's generated references stay true: the CLI page is what the argument parser
defines, the configuration page what the settings model holds, and every setting says what it is
for. `make docs` (or `python scripts/gen_docs.py`) rewrites both pages."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _gen():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_settings_field_has_a_description() -> None:
    _, missing = _gen().config_tables()
    assert missing == [], f"settings fields without a description: {missing}"


def test_configuration_page_is_current() -> None:
    gen = _gen()
    assert gen.CONFIG_PAGE.read_text(encoding="utf-8") == gen.config_page(), "run `make docs`"


def test_cli_page_is_current() -> None:
    gen = _gen()
    assert gen.CLI_PAGE.read_text(encoding="utf-8") == gen.cli_page(), "run `make docs`"


def test_configuration_page_names_every_variable_of_the_tree() -> None:
    """Spot checks that the page's environment names are the ones the settings really read."""
    import os
    from unittest import mock

    from pagefleet.workers.settings import Settings

    page = _gen().config_page()
    cases = {
        "PAGEFLEET_GPU__VLM__BATCH_SIZE": ("16", lambda s: s.gpu.vlm.batch_size == 16),
        "PAGEFLEET_EVENTS__GATHER_S": ("0.25", lambda s: s.events.gather_s == 0.25),
        "PAGEFLEET_LIMITS__MAX_REDISPATCH": ("5", lambda s: s.limits.max_redispatch == 5),
        "SENTRY_DSN": (
            "https://k@x.invalid/1",
            lambda s: s.observability.sentry.dsn == "https://k@x.invalid/1",
        ),
        "PAGEFLEET_OCR__MODELS__FROM_URL": ("hf", lambda s: s.ocr.models.from_url == "hf"),
    }
    for name, (value, holds) in cases.items():
        assert f"`{name}`" in page
        with mock.patch.dict(os.environ, {name: value}):
            assert holds(Settings()), name


def test_exit_codes_page_is_current() -> None:
    gen = _gen()
    assert gen.EXIT_PAGE.read_text(encoding="utf-8") == gen.exit_codes_page(), "run `make docs`"
