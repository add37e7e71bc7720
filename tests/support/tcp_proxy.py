"""A TCP proxy on loopback that a test can cut and restore: the S3 server "goes away" for real.

    proxy = TcpProxy("127.0.0.1", upstream_port).start()
    ... clients use proxy.endpoint ...
    proxy.cut()       # live connections reset, new ones refused (nothing listens on the port)
    proxy.restore()   # the same port listens again
    proxy.stall()     # nothing answers: what is sent on a live or new connection is swallowed
    proxy.restore()   # new connections work again; a stalled one stays silent (a lost peer)

Threads only (one acceptor, two pumps per connection): small, and independent of any event loop
the code under test runs.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    def __init__(self, upstream_host: str, upstream_port: int, port: int = 0) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = port
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._stalled: set[socket.socket] = set()  # their bytes go nowhere
        self._stalling = False
        self._lock = threading.Lock()
        self.connections = 0  # accepted so far (a test can see traffic went through)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "TcpProxy":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def cut(self) -> None:
        """Stop listening and reset every live connection."""
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, set()
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for conn in conns:
            _reset(conn)

    def stall(self) -> None:
        """The server stops answering without closing anything (a partition, a hung peer): a
        request on a live connection or a new one is read and never forwarded."""
        with self._lock:
            self._stalling = True
            self._stalled |= self._conns

    def restore(self) -> None:
        self._stalling = False
        if self._listener is None:
            self.start()

    close = cut

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _reset(client)
                continue
            with self._lock:
                if self._listener is not listener:
                    _reset(client)
                    _reset(upstream)
                    return
                self._conns.update((client, upstream))
                if self._stalling:
                    self._stalled.update((client, upstream))
                self.connections += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                if src not in self._stalled:
                    dst.sendall(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
            with self._lock:
                self._conns.discard(src)
                self._stalled.discard(src)
            with contextlib.suppress(OSError):
                src.close()


def _reset(sock: socket.socket) -> None:
    """Close with RST (SO_LINGER 0), as a vanished peer looks to the client. The shutdown wakes a
    pump blocked reading it: closing alone would leave the socket alive under that read, and a
    client that waits for an answer would wait for ever instead of being reset."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RD)
    with contextlib.suppress(OSError):
        sock.close()
