"""A replicated key-value store on pykraft's embeddable log (after etcd's raftexample).

Three nodes run in this one process, each a :class:`pykraft.ReplicatedLog` listening on a
free port of 127.0.0.1 with its data under ``--dir``. A write goes through the log (on the
leader); every node applies the committed entries to its own dict, and snapshots that dict
every few entries so the log behind it can go. The script writes, stops the leader, writes
through the new one, restarts the old leader from its directory (it loads its snapshot,
then catches up) and checks that the three dicts agree. Everything it starts, it stops.

    python examples/kv_store.py [--dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import tempfile
from pathlib import Path

from pykraft import ReplicatedLog, Snapshot

NODES = (1, 2, 3)
SNAPSHOT_EVERY = 4  # entries applied between two snapshots of a node's dict
DEADLINE_S = 30.0  # bound on any one wait of the demo


class KVStore:
    """A dict replicated by a log: writes are entries, reads are local."""

    def __init__(self, log: ReplicatedLog) -> None:
        self.log = log
        self.data: dict[str, str] = {}
        self.applied = -1  # offset of the last entry applied
        self.loaded_snapshot: int | None = None
        self._progress = asyncio.Event()
        self._applier = asyncio.create_task(self._apply_committed())

    async def put(self, key: str, value: str) -> int:
        """Write through the log (on the leader); the offset it committed at."""
        return await self.log.append(json.dumps([key, value]).encode())

    async def wait_applied(self, offset: int) -> None:
        async with asyncio.timeout(DEADLINE_S):
            while self.applied < offset:
                self._progress.clear()
                await self._progress.wait()

    async def close(self) -> None:
        await self.log.close()
        await self._applier  # ends with the log's iterator

    async def _apply_committed(self) -> None:
        since_snapshot = 0
        async for item in self.log:
            if isinstance(item, Snapshot):
                self.data = json.loads(item.data)
                self.loaded_snapshot = item.offset
                since_snapshot = 0
            else:
                key, value = json.loads(item.value)
                self.data[key] = value
                since_snapshot += 1
            self.applied = item.offset
            self._progress.set()
            if since_snapshot >= SNAPSHOT_EVERY and self.log.can_snapshot(item.offset):
                await self.log.snapshot(item.offset, json.dumps(self.data).encode())
                since_snapshot = 0


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


async def start_store(node_id: int, base: Path,
                      voters: dict[int, tuple[str, int]]) -> KVStore:
    return KVStore(await ReplicatedLog.start(node_id, base / f"node-{node_id}", voters))


async def leader_of(stores: dict[int, KVStore]) -> KVStore:
    """The store whose node leads, once the running nodes agree on one."""
    async with asyncio.timeout(DEADLINE_S):
        while True:
            leaders = {await store.log.wait_for_leader() for store in stores.values()}
            if len(leaders) == 1 and (leader := leaders.pop()) in stores:
                return stores[leader]
            await asyncio.sleep(0.05)  # a node still names the leader it lost


async def write(stores: dict[int, KVStore], items: dict[str, str]) -> None:
    leader = await leader_of(stores)
    print(f"leader: node {leader.log.node_id} (epoch {leader.log.epoch})")
    offset = -1
    for key, value in items.items():
        offset = await leader.put(key, value)
        print(f"put {key}={value} committed at offset {offset}")
    for node_id, store in sorted(stores.items()):
        await store.wait_applied(offset)
        print(f"node {node_id} reads {', '.join(f'{k}={store.data.get(k)}' for k in items)}")


async def demo(base: Path) -> None:
    voters = {node_id: ("127.0.0.1", port) for node_id, port in zip(NODES, free_ports(3),
                                                                      strict=True)}
    stores = {node_id: await start_store(node_id, base, voters) for node_id in NODES}
    try:
        await write(stores, {f"key{i}": f"v{i}" for i in range(6)})
        stopped = (await leader_of(stores)).log.node_id
        print(f"stopping the leader, node {stopped}")
        await stores.pop(stopped).close()
        await write(stores, {"after": "failover", "key0": "changed"})
        print(f"restarting node {stopped}")
        stores[stopped] = await start_store(stopped, base, voters)
        await write(stores, {"back": "again"})
        print(f"node {stopped} started from its snapshot at offset "
              f"{stores[stopped].loaded_snapshot}, then caught up")
        contents = {node_id: store.data for node_id, store in stores.items()}
        agree = all(data == contents[NODES[0]] for data in contents.values())
        print(f"all {len(stores)} nodes agree: {agree}, {len(contents[NODES[0]])} keys")
    finally:  # the leader first: it resigns to followers that still answer
        for store in sorted(stores.values(), key=lambda store: not store.log.is_leader):
            await store.close()
    print("stopped")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dir", type=Path, help="data directory (default: a temporary one)")
    args = parser.parse_args()
    if args.dir is not None:
        asyncio.run(demo(args.dir))
        return
    with tempfile.TemporaryDirectory(prefix="kv-store-") as base:
        asyncio.run(demo(Path(base)))


if __name__ == "__main__":
    main()
