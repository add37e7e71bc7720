"""A TCP proxy that delays every byte by a fixed one-way latency in each direction (a round trip
costs twice it), for benchmarking against an object store that is not on this machine's loopback.

    python tests/support/latency_proxy.py LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_MS

Each chunk leaves DELAY_MS after it arrived, whatever came before it on the connection (a delay
line, not a queue of sleeps), so a PUT's body in several chunks costs the latency once, as a wire
would. Bandwidth is not limited.
"""

from __future__ import annotations

import asyncio
import sys


async def _line(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay_s: float) -> None:
    loop = asyncio.get_running_loop()
    due: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            at, data = await due.get()
            if not data:
                break
            if (wait := at - loop.time()) > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    sender = asyncio.create_task(send())
    try:
        while data := await reader.read(1 << 16):
            due.put_nowait((loop.time() + delay_s, data))
    except ConnectionError:
        pass
    due.put_nowait((0.0, b""))
    try:
        await sender
    except ConnectionError:
        pass


async def _serve(listen: int, host: str, port: int, delay_s: float) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(host, port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(_line(client_r, server_w, delay_s), _line(server_r, client_w, delay_s))
        for w in (client_w, server_w):
            w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


def main(argv: list[str]) -> int:
    listen, host, port, delay_ms = int(argv[0]), argv[1], int(argv[2]), float(argv[3])
    asyncio.run(_serve(listen, host, port, delay_ms / 1000))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
