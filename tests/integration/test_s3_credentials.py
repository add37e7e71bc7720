"""S3 credentials through the minio client's provider chain, against the S3 server on loopback:
static keys from the settings when set, otherwise the AWS (or MinIO) environment variables."""

from __future__ import annotations

import uuid

import pytest

from pagefleet.workers.settings import Settings
from pagefleet.workers.store.s3_clients import s3_client
from pagefleet.workers.store.storage import S3Storage

pytestmark = pytest.mark.integration


def test_environment_credentials_when_no_static_keys(
    service_env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "from-env")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    keyless = Settings(storage={"s3_access_key": "", "s3_secret_key": ""})
    client = s3_client(keyless)
    assert client._provider.retrieve().access_key == "from-env"
    bucket = f"t-{uuid.uuid4().hex[:12]}"
    client.make_bucket(
        bucket
    )  # moto accepts any signature: the request was signed with the env keys
    store = S3Storage(bucket, "p", keyless)
    store.put_text("a.txt", "שלום")
    assert store.get_bytes("a.txt").decode() == "שלום"
    static = s3_client(
        Settings(storage={"s3_access_key": "static-key", "s3_secret_key": "static-secret"})
    )
    assert static._provider.retrieve().access_key == "static-key", (
        "configured keys win over the environment"
    )
