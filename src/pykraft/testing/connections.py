"""Connection floods for tests and benchmarks of a listener's limits."""

from __future__ import annotations

import asyncio
import socket


async def flood(host: str, port: int, count: int, timeout_s: float) -> list[socket.socket]:
    """Open ``count`` connections at once; those that connected within ``timeout_s`` (the
    rest found the listener and its backlog full: nobody answered their SYN). Connected is
    the client's view: with SYN cookies (Linux's default) a connect can succeed for a
    connection the server's full accept queue never takes. The caller closes them."""
    loop = asyncio.get_running_loop()

    async def one() -> socket.socket | None:
        sock = socket.socket()
        sock.setblocking(False)
        try:
            async with asyncio.timeout(timeout_s):
                await loop.sock_connect(sock, (host, port))
        except (TimeoutError, OSError):
            sock.close()
            return None
        return sock
    return [s for s in await asyncio.gather(*(one() for _ in range(count))) if s]
