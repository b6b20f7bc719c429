"""Connection floods against one broker (1 controller + 1 broker, as ``cluster up`` makes
them): how many connections it holds, how many it refuses, and whether it survives.

* **limit**: the broker runs with ``max.connections=--max-connections``; ``--attempts``
  connections are opened at once (each given ``--connect-timeout`` seconds), then every held
  one sends ApiVersions and those answered within ``--answer-timeout`` are counted (the rest
  wait in the kernel's backlog, unserved). The broker must stay alive and, after the flood
  closes, answer a new client.
* **open-files**: the broker runs under ``RLIMIT_NOFILE=--open-files`` (soft and hard) and
  no connection limit; the same flood. Before issue 24 the broker's next metadata flush
  failed with EMFILE and it exited; now connections stop below the limit.

Each line of output is one figure. Run against another checkout's code with
``PYTHONPATH=<checkout>/src`` (the nodes inherit it).

    .venv/bin/python bench/connections.py [--mode limit|open-files] [--attempts 5000]
        [--max-connections 1000] [--open-files 1024] [--dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import encode_request, request_type
from pykraft.protocol.frame import encode_frame
from pykraft.protocol.header import RequestHeader
from pykraft.testing.connections import flood
from pykraft.tools.local_cluster import HOST, LocalCluster

PROPERTIES = {"pykraft.shutdown.timeout.ms": "3000"}
API_VERSIONS = encode_frame(encode_request(
    RequestHeader(ApiKey.API_VERSIONS, 3, 1, "bench"),
    request_type(ApiKey.API_VERSIONS, 3)(client_software_name="bench",
                                         client_software_version="1")))
#: ``python -m pykraft`` with RLIMIT_NOFILE set in the child (0: left as it is).
SERVER = ("import resource, runpy, sys; limit = int(sys.argv.pop(1)); "
          "limit and resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)); "
          "sys.argv[0] = 'pykraft'; runpy.run_module('pykraft', run_name='__main__')")
STARTUP_S = 60.0


@contextlib.contextmanager
def broker(base: Path, properties: dict[str, str], open_files: int
           ) -> Iterator[tuple[LocalCluster, subprocess.Popen[bytes]]]:
    """The cluster running, its broker under ``open_files``; both killed at the end."""
    cluster = LocalCluster.create(base, 1, {**PROPERTIES, **properties}, brokers=1)
    (controller,), (broker_id,) = cluster.controllers, cluster.brokers
    cluster.start(controller)
    node = cluster.nodes[broker_id]
    with node.log.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(open_files), "server", str(node.config)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP_S
        while not _answers(node.port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the broker did not start; see {node.log}")
            time.sleep(0.2)
        yield cluster, process
    finally:
        process.kill()
        process.wait(10)
        cluster.kill(controller)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=2.0) as sock:
            sock.sendall(API_VERSIONS)
            return bool(sock.recv(4))
    except OSError:
        return False


async def answered(socks: list[socket.socket], timeout_s: float) -> int:
    """How many of ``socks`` answer ApiVersions within ``timeout_s`` (all asked at once)."""
    loop = asyncio.get_running_loop()

    async def one(sock: socket.socket) -> bool:
        try:
            async with asyncio.timeout(timeout_s):
                await loop.sock_sendall(sock, API_VERSIONS)
                size = await loop.sock_recv(sock, 4)
                return len(size) == 4 and struct.unpack(">i", size)[0] > 0
        except (TimeoutError, OSError):
            return False
    return sum(await asyncio.gather(*(one(s) for s in socks)))


def run(args: argparse.Namespace, base: Path) -> None:
    limited = args.mode == "limit"
    properties = {"max.connections": str(args.max_connections)} if limited else {}
    with broker(base, properties, 0 if limited else args.open_files) as (cluster, process):
        port = cluster.nodes[cluster.brokers[0]].port
        started = time.monotonic()
        held = asyncio.run(flood(HOST, port, args.attempts, args.connect_timeout))
        print(f"attempted {args.attempts} connections: {len(held)} connected (TCP), "
              f"{args.attempts - len(held)} refused (no SYN-ACK within "
              f"{args.connect_timeout:g} s), in {time.monotonic() - started:.1f} s")
        served = asyncio.run(answered(held, args.answer_timeout))
        print(f"held connections answering ApiVersions within {args.answer_timeout:g} s: "
              f"{served}; waiting unserved in the backlog: {len(held) - served}")
        alive = process.poll() is None
        print(f"broker alive during the flood: {alive} (exit code {process.poll()})")
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 30
        while alive and not _answers(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        print(f"after the flood closed: broker alive {process.poll() is None}, a new client "
              f"answered {process.poll() is None and _answers(port)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("limit", "open-files"), default="limit")
    parser.add_argument("--attempts", type=int, default=5000)
    parser.add_argument("--max-connections", type=int, default=1000)
    parser.add_argument("--open-files", type=int, default=1024)
    parser.add_argument("--connect-timeout", type=float, default=5.0)
    parser.add_argument("--answer-timeout", type=float, default=5.0)
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    if args.dir is not None:
        run(args, args.dir)
        return
    with tempfile.TemporaryDirectory(prefix="bench-connections-") as directory:
        run(args, Path(directory) / "cluster")


if __name__ == "__main__":
    main()
