"""A listener whose process has almost no file descriptors left and no connection cap, so
that accept itself fails with EMFILE (run by test_starved_listener.py).

    python starved_listener.py <open files> <uvloop|asyncio>

Prints the port, serves ApiVersions, and exits once stdin closes.
"""

from __future__ import annotations

import asyncio
import resource
import sys
from typing import cast

from sasl_fixtures import Versions

from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.event_loop import run
from pykraft.runtime.listener_server import ListenerServer
from pykraft.runtime.logfmt import configure_logging


async def serve() -> None:
    server = ListenerServer(cast(Dispatcher, Versions()), "127.0.0.1", 0, 1 << 20)
    await server.start()
    print(server.port, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await server.close()


if __name__ == "__main__":
    open_files = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
    configure_logging(0)
    run(serve(), sys.argv[2])
