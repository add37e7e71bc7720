"""Storage URIs: the one place outside the backends that knows a URI's scheme.

    s3://bucket[/prefix-or-key]   an object, or a prefix, in S3 (endpoint and keys from settings)
    file:///abs/dir               a local directory
    anything else                 a local path

Keys are taken verbatim (no URL-decoding): they may hold `%`, `+`, spaces, `?` and `#`.
"""

from __future__ import annotations

from pathlib import Path

from pagefleet.workers.errors import StorageError

S3 = "s3://"
FILE = "file://"


def is_s3(uri: str) -> bool:
    return uri.startswith(S3)


def is_file_url(uri: str) -> bool:
    return uri.startswith(FILE)


def is_storage_url(uri: str) -> bool:
    """`s3://…` or `file://…`: a URL that names a storage (not a bare path)."""
    return is_s3(uri) or is_file_url(uri)


def s3_uri(bucket: str, key: str) -> str:
    return f"{S3}{bucket}/{key}"


def s3_prefix(uri: str) -> tuple[str, str]:
    """`s3://bucket/some/prefix` → ("bucket", "some/prefix"); the prefix may be empty."""
    bucket, _, prefix = uri[len(S3) :].partition("/")
    return bucket, prefix


def split_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/some/key.pdf` → ("bucket", "some/key.pdf"). The key is taken verbatim (no
    URL-decoding): keys may hold `%`, `+`, spaces, `?` and `#`."""
    if not is_s3(uri):
        raise StorageError(f"not an s3://bucket/key URI: {uri!r}")
    bucket, key = s3_prefix(uri)
    if not bucket or not key:
        raise StorageError(f"not an s3://bucket/key URI: {uri!r}")
    return bucket, key


def file_path(url: str) -> Path:
    """`file:///abs/dir` → Path("/abs/dir")."""
    return Path(url[len(FILE) :])
