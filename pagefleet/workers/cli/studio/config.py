"""The review studio's bind rule. Its settings are `Settings().studio` (`pagefleet.workers.settings.StudioSettings`,
env `PAGEFLEET_STUDIO__*`): host, port, token, max_upload_bytes, low_confidence, image_dpi,
options for uploaded PDFs. The broker, S3 endpoint and keys come from the rest of the tree.
"""

from __future__ import annotations

import ipaddress

from pagefleet.workers.errors import PagefleetError
from pagefleet.workers.settings import StudioSettings

__all__ = ["StudioConfigError", "StudioSettings", "check_bind", "is_loopback"]


class StudioConfigError(PagefleetError):
    """The studio is misconfigured (e.g. a public host without a token). A usage error: exit 64."""

    code = "invalid_config"


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and `localhost` are loopback; every other name or address is not."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Safe by default: a token is required for any host that is not loopback."""
    if not is_loopback(host) and not token:
        raise StudioConfigError(
            f"refusing to serve on {host} without a token: pass --token (or PAGEFLEET_STUDIO__TOKEN), "
            "or bind 127.0.0.1"
        )
