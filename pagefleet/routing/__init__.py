"""Pure decisions over plain data: no I/O, no Celery, no worker imports, nothing done on import.

The compiled build of the gate is an explicit step: `pagefleet.routing.compiled.enable()`.
"""
