"""The benchmark's S3 server: moto's S3 application on loopback, served as S3 and MinIO serve
(HTTPS, HTTP/1.1 connections kept alive), optionally behind `tests/support/latency_proxy.py`.

`moto_server` itself runs Werkzeug's development server, which closes the connection after every
answer and speaks plain HTTP: a client that keeps its connections (`pagefleet.workers.store.s3_clients.s3_client`)
would look no better there than one that connects for every object, and no TLS handshake would
be paid at all. Here uvicorn serves the same WSGI application; with `tls` (the default) over a
self-signed RSA-2048 certificate made for 127.0.0.1. The clients trust it through `SSL_CERT_FILE`
(`env()`), a bundle of certifi's roots and that certificate: a worker that stores to AWS trusts
certifi's bundle, and reading it is part of what a new TLS connection costs.

    with MotoServer(tls=True, delay_ms=0) as server:   # or .start() / .stop()
        os.environ.update(server.env())

With `count`, the server counts what it serves (`server.counts()`: requests by S3 operation, body
bytes in and out), as a bucket's request metrics would (bench/capacity.py).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from pagefleet.workers.fleet.launcher import free_port

_SERVE = """
import os, sys
import uvicorn
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
port, cert, key, count = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "count"
os.environ["MOTO_PORT"] = str(port)
tls = {"ssl_certfile": cert, "ssl_keyfile": key} if cert else {}
app = DomainDispatcherApplication(create_backend_app)
if count:
    from tests.support.s3_server import counting
    app = counting(app)
uvicorn.run(app, host="127.0.0.1", port=port, interface="wsgi", log_level="warning", timeout_graceful_shutdown=1,
            **tls)
"""
COUNTS_PATH = "/_pagefleet/counts"


def operation(environ: dict) -> str:
    """The S3 operation a request is, by the names S3's request metrics use (path-style URLs)."""
    method, query = environ["REQUEST_METHOD"], environ.get("QUERY_STRING", "")
    in_bucket = "/" in environ.get("PATH_INFO", "/").strip("/")
    if method == "GET":
        if in_bucket:
            return "GetObject"
        return (
            "GetBucketLocation"
            if "location" in query
            else ("ListObjects" if environ["PATH_INFO"].strip("/") else "ListBuckets")
        )
    if method == "PUT":
        return (
            "UploadPart"
            if "partNumber" in query
            else ("PutObject" if in_bucket else "CreateBucket")
        )
    if method == "POST":
        return "DeleteObjects" if "delete" in query else "Multipart"
    return {"HEAD": "HeadObject" if in_bucket else "HeadBucket", "DELETE": "DeleteObject"}.get(
        method, method
    )


def counting(app):  # type: ignore[no-untyped-def]
    """A WSGI wrapper that counts every request by operation and the body bytes each way, and
    answers GET COUNTS_PATH with the counts so far as JSON."""
    import json
    import threading

    lock = threading.Lock()
    counts: dict = {"requests": {}, "bytes_in": 0, "bytes_out": 0}

    def wrapped(environ, start_response):  # type: ignore[no-untyped-def]
        if environ.get("PATH_INFO") == COUNTS_PATH:
            with lock:
                body = json.dumps(counts).encode()
            start_response(
                "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            )
            return [body]
        chunks = list(app(environ, start_response))
        with lock:
            op = operation(environ)
            counts["requests"][op] = counts["requests"].get(op, 0) + 1
            counts["bytes_in"] += int(environ.get("CONTENT_LENGTH") or 0)
            counts["bytes_out"] += sum(len(c) for c in chunks)
        return chunks

    return wrapped


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate and key for 127.0.0.1, valid for a day, and `trusted.pem` beside them:
    certifi's bundle with the certificate added."""
    import certifi
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "s3-cert.pem", folder / "s3-key.pem"
    pem = cert.public_bytes(serialization.Encoding.PEM)
    cert_path.write_bytes(pem)
    (folder / "trusted.pem").write_bytes(Path(certifi.where()).read_bytes() + pem)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class MotoServer:
    """moto's S3 on loopback (uvicorn, keep-alive; HTTPS with `tls`); with `delay_ms`, reached
    through `tests/support/latency_proxy.py` (every byte that much later each way: an object store across
    a network)."""

    def __init__(self, delay_ms: float = 0.0, tls: bool = True, count: bool = False) -> None:
        self.delay_ms, self.tls, self.count = delay_ms, tls, count
        self.port = self.endpoint = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="pagefleet-s3-"))
        self.cert: Path | None = None
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> "MotoServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> "MotoServer":
        cert, key = self_signed(self.folder) if self.tls else ("", "")
        self.cert = Path(cert) if cert else None
        self._spawn(
            [
                sys.executable,
                "-c",
                _SERVE,
                str(self.port),
                str(cert),
                str(key),
                "count" if self.count else "-",
            ]
        )
        if self.delay_ms > 0:
            self.endpoint = free_port()
            proxy = Path(__file__).with_name("latency_proxy.py")
            self._spawn(
                [
                    sys.executable,
                    str(proxy),
                    str(self.endpoint),
                    "127.0.0.1",
                    str(self.port),
                    str(self.delay_ms),
                ]
            )
        context = ssl.create_default_context(cafile=str(self.cert)) if self.cert else None
        scheme = "https" if self.cert else "http"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(
                    f"{scheme}://127.0.0.1:{self.endpoint}/", timeout=1, context=context
                )
                return self
            except OSError:
                if any(proc.poll() is not None for proc in self.procs):
                    break
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("moto S3 server did not start")

    def _spawn(self, argv: list[str]) -> None:
        root = str(Path(__file__).resolve().parents[2])  # `count` imports this module in the server
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
        }
        self.procs.append(
            subprocess.Popen(
                argv,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env=env,
            )
        )

    def counts(self) -> dict:
        """What the server has served so far (needs `count`): {requests: {operation: n}, bytes_in, bytes_out}."""
        import json

        context = ssl.create_default_context(cafile=str(self.cert)) if self.cert else None
        scheme = "https" if self.cert else "http"
        with urllib.request.urlopen(
            f"{scheme}://127.0.0.1:{self.port}{COUNTS_PATH}", timeout=10, context=context
        ) as answer:
            return json.loads(answer.read())

    def env(self) -> dict[str, str]:
        env = {
            "PAGEFLEET_STORAGE__S3_ENDPOINT": f"127.0.0.1:{self.endpoint}",
            "PAGEFLEET_STORAGE__S3_ACCESS_KEY": "testing",
            "PAGEFLEET_STORAGE__S3_SECRET_KEY": "testing",
            "PAGEFLEET_STORAGE__S3_REGION": "us-east-1",
            "PAGEFLEET_STORAGE__S3_SECURE": "true" if self.cert else "false",
        }
        if self.cert:
            env["SSL_CERT_FILE"] = str(self.cert.with_name("trusted.pem"))
        return env

    def stop(self) -> None:
        """Each process is asked to stop, then killed (a client's kept connection must not hold the
        server up)."""
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self.procs = []
        shutil.rmtree(self.folder, ignore_errors=True)  # the certificate, its key and the bundle
