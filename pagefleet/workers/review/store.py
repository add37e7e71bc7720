"""review.json read and rewritten so that two reviewers writing at once never lose a decision.

`update(storage, prefix, change)` reads review.json, gives it to `change` (which returns the new one
or raises, e.g. `ReviewConflict` when the page was decided meanwhile) and writes the result only if
nobody wrote in between:

- a local folder: under an exclusive `flock` on `<document>/.review.json.lock` (processes and
  threads alike), the file itself replaced atomically (temporary file + rename);
- S3: a conditional PUT (`If-Match: <ETag read>`, or `If-None-Match: *` when there was no file);
  a 412 means someone wrote first: read again and let `change` decide again (a decision on another
  page goes through; one on the same page is refused by `change`).

How each store does that is `pagefleet.workers.store.objects.update`'s business.
"""

from __future__ import annotations

from collections.abc import Callable

from pagefleet.workers.review.decisions import REVIEW_FILE, ReviewConflict, ReviewFile, dump, parse
from pagefleet.workers.store import objects
from pagefleet.workers.store.storage import Storage

ATTEMPTS = 8
LOCK_NAME = ".review.json.lock"


def _key(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def load(storage: Storage, prefix: str) -> ReviewFile:
    try:
        return parse(storage.get_json(_key(prefix, REVIEW_FILE)))
    except KeyError:
        return ReviewFile()


def update(storage: Storage, prefix: str, change: Callable[[ReviewFile], ReviewFile]) -> ReviewFile:
    """review.json changed by `change`, written only over the version `change` saw."""
    try:
        return objects.update(
            storage,
            _key(prefix, REVIEW_FILE),
            lambda raw: change(parse(raw)),
            dump,
            lock_key=_key(prefix, LOCK_NAME),
            attempts=ATTEMPTS,
        )
    except objects.Contended as exc:
        raise ReviewConflict(
            "review.json kept changing under other reviewers' writes: try again"
        ) from exc
