"""pagefleet: a Celery + Redis worker fleet that turns PDFs (RTL first) into text you can trust.

The import package holds three parts (docs/architecture.md): `pagefleet.routing` (pure decisions
over plain data), `pagefleet.workers` (the fleet: everything that does things; importing it is the
fleet's start-up) and `pagefleet.tasks` (thin Celery tasks). Importing `pagefleet` itself imports
none of them.
"""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """`pagefleet.__version__`: the installed distribution's version, read on first use."""
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pagefleet")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"
