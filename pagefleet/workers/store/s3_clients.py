"""The minio clients of the S3 backend (`pagefleet.workers.store.storage.S3Storage`): the credentials chain,
one pooled client per process and settings, and the timeouts and retries every client gets.
"""

from __future__ import annotations

import os
from typing import Any

import urllib3

from pagefleet.workers.settings import Settings


def s3_credentials(settings: Settings) -> Any:
    """The minio client's provider chain, first match wins: static keys from the settings (when both
    are set: PAGEFLEET_STORAGE__S3_ACCESS_KEY/SECRET_KEY), then AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (+
    AWS_SESSION_TOKEN), MINIO_ACCESS_KEY/MINIO_SECRET_KEY, then IAM: a web identity token
    (AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN: EKS IRSA, pod identity), the ECS task role or the
    EC2 instance profile. Temporary credentials are refreshed before they expire."""
    from minio.credentials import (
        ChainedProvider,
        EnvAWSProvider,
        EnvMinioProvider,
        IamAwsProvider,
        StaticProvider,
    )

    providers: list[Any] = []
    s3 = settings.storage
    if s3.s3_access_key and s3.s3_secret_key:
        providers.append(StaticProvider(s3.s3_access_key, s3.s3_secret_key))
    providers += [EnvAWSProvider(), EnvMinioProvider(), IamAwsProvider(region=s3.s3_region)]
    return ChainedProvider(providers)


# what a client is made from besides the settings: the provider chain's and the TLS trust's variables
_CLIENT_ENVIRONMENT = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "MINIO_ACCESS_KEY",
    "MINIO_SECRET_KEY",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "SSL_CERT_FILE",
)
_clients: dict[tuple[Any, ...], Any] = {}


def s3_client(settings: Settings) -> Any:
    """This process's minio client for these settings, made once (`new_s3_client`): its urllib3
    pool keeps connections alive from one storage call to the next (a client made for every call
    paid a TCP connect, and over HTTPS a TLS handshake, for every document). Keyed by the process
    (a forked child makes its own: pooled sockets are not shared across a fork), every setting and
    environment variable the client is made from; minio's client is safe to share between threads."""
    s3 = settings.storage
    key = (
        os.getpid(),
        s3.s3_endpoint,
        s3.s3_secure,
        s3.s3_region,
        s3.s3_timeout_s,
        s3.s3_access_key,
        s3.s3_secret_key,
        *(os.environ.get(name) for name in _CLIENT_ENVIRONMENT),
    )
    client = _clients.get(key)
    if client is None:  # two threads racing here make two clients; the second is dropped unused
        if len(_clients) >= 64:  # settings made per test or per call: keep the cache bounded
            _clients.clear()
        client = _clients.setdefault(key, new_s3_client(settings))
    return client


def new_s3_client(
    settings: Settings, *, timeout_s: float | None = None, retries: Any = None
) -> Any:
    """A minio client whose requests give up on a stalled connection after `s3_timeout_s` (minio's
    own waits 5 minutes, past any task's time limit): a refused or reset connection is retried up
    to 5 times with backoff, a read that times out once, a 5xx answer up to 5 times (minio's policy).
    Its connections share one TLS context, whose trusted certificates (`SSL_CERT_FILE`, else
    certifi's bundle) are read once: urllib3 given only a file reads it again for every new
    connection (~18 ms of CPU for certifi's bundle). `timeout_s`, `retries` (a urllib3 `Retry`):
    a lookup's own, shorter ones (`pagefleet.workers.store.lookup`)."""
    import certifi
    from minio import Minio
    from urllib3.util.ssl_ import create_urllib3_context

    timeout = timeout_s or settings.storage.s3_timeout_s
    tls = None
    if settings.storage.s3_secure:
        tls = (
            create_urllib3_context()
        )  # what urllib3 makes per connection: TLS 1.2 or later, certificates required
        tls.load_verify_locations(cafile=os.environ.get("SSL_CERT_FILE") or certifi.where())
    http = urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=timeout, read=timeout),
        maxsize=10,
        cert_reqs="CERT_REQUIRED",
        ssl_context=tls,
        retries=retries
        or urllib3.Retry(
            total=5, read=1, backoff_factor=0.2, status_forcelist=[500, 502, 503, 504]
        ),
    )
    endpoint = settings.storage.s3_endpoint.removeprefix("http://").removeprefix("https://")
    return Minio(
        endpoint,
        credentials=s3_credentials(settings),
        secure=settings.storage.s3_secure,
        region=settings.storage.s3_region,
        http_client=http,
    )
