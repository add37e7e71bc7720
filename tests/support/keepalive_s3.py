"""moto's S3 application served by uvicorn's WSGI adapter on loopback: unlike `moto_server`
(Werkzeug's development server, which answers every request with `Connection: close`), it keeps
HTTP/1.1 connections alive, as MinIO and S3 do. For the tests of connection reuse.

    with KeepAliveS3() as endpoint:   # "127.0.0.1:PORT"
        ...
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request

from workers.cli.embedded import free_port

_SERVE = """
import os, sys
import uvicorn
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
os.environ["MOTO_PORT"] = sys.argv[1]
uvicorn.run(DomainDispatcherApplication(create_backend_app), host="127.0.0.1", port=int(sys.argv[1]),
            interface="wsgi", log_level="warning")
"""


class KeepAliveS3:
    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> str:
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVE, str(self.port)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=1)
                return f"127.0.0.1:{self.port}"
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.2)
        self.__exit__()
        raise RuntimeError("moto under uvicorn did not start")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
