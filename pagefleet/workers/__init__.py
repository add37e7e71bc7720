"""The fleet: everything that does things (DESIGN.md "Layout", docs/architecture.md).

Importing `pagefleet.workers` is the fleet's start-up, before any module of the gate's compiled build
(`pagefleet.routing.compiled.MODULES`, some of them here) is imported: the build runs where it matches its
sources, unless `PAGEFLEET_COMPILED=0` (benchmarks, the parity test) asks for the sources.
"""

import os

from pagefleet.routing import compiled

if os.environ.get("PAGEFLEET_COMPILED", "1").strip().lower() not in ("0", "false", "no", "off"):
    compiled.enable()
