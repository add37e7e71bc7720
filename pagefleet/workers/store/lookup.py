"""What a producer asks of a source object before it hands it to the fleet: a HEAD.

head(bucket, key, version_id)   (size, ETag), or None when the object (that version, its
                                bucket) does not exist; `StorageError` when the store cannot say
sizes(uris)                     many objects' sizes at once, on a thread pool, each request
                                with `s3_lookup_timeout_s` and one retry: while S3 is away a
                                submission of many sources waits one short timeout, not a
                                full retry schedule per object; None where the store cannot say
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

from pagefleet.workers.errors import StorageError
from pagefleet.workers.settings import Settings, get_settings
from pagefleet.workers.store.s3_clients import new_s3_client
from pagefleet.workers.store.storage import S3Storage
from pagefleet.workers.store.uri import split_s3_uri

LOOKUP_THREADS = 16


def head(
    bucket: str,
    key: str,
    version_id: str | None = None,
    *,
    settings: Settings | None = None,
    client: Any = None,
) -> tuple[int, str | None] | None:
    try:
        return S3Storage(bucket, "", settings, client=client).stat(key, version_id=version_id)
    except KeyError:
        return None


def lookup_client(settings: Settings) -> Any:
    """A client whose requests give up after `s3_lookup_timeout_s`, retried once without backoff."""
    import urllib3

    return new_s3_client(
        settings,
        timeout_s=settings.storage.s3_lookup_timeout_s,
        retries=urllib3.Retry(total=1, backoff_factor=0, status_forcelist=[500, 502, 503, 504]),
    )


def sizes(uris: list[str], settings: Settings | None = None) -> list[int | None]:
    """Each `s3://bucket/key`'s size, looked up together; None where it is missing or the store
    cannot answer within the lookup timeout."""
    if not uris:
        return []
    settings = settings or get_settings()
    client = lookup_client(settings)

    def size(uri: str) -> int | None:
        try:
            found = head(*split_s3_uri(uri), settings=settings, client=client)
        except StorageError:
            return None
        return found[0] if found is not None else None

    with concurrent.futures.ThreadPoolExecutor(
        min(LOOKUP_THREADS, len(uris)), "pagefleet-lookup"
    ) as pool:
        return list(pool.map(size, uris))
