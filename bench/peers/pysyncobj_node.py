"""One PySyncObj node with a replicated dict, serving writes over the append request frames.

PySyncObj is a library, not a server: this process embeds it and answers the same Kafka-framed
append request pykraft serves with :mod:`pykraft.testing.append` (so one client drives both).
A write is ``ReplDict.set(key, value)``, answered when PySyncObj calls back after the entry
committed (the callback form of ``sync=True``: the same wait, without a blocked thread per
request).
The response's ``leader_id`` is the node index of the leader this node knows (-1 if none).

    python pysyncobj_node.py INDEX RAFT_PORTS(comma) CLIENT_PORT DATA_DIR
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from pysyncobj import FAIL_REASON, SyncObj, SyncObjConf
from pysyncobj.batteries import ReplDict

from pykraft.errors import ProtocolError
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.streams import FrameStream
from pykraft.testing.append import AppendResult, decode_append_request, encode_append_response

HOST = "127.0.0.1"


class Node:
    def __init__(self, index: int, raft_ports: list[int], data_dir: Path) -> None:
        self.index = index
        self.addresses = [f"{HOST}:{port}" for port in raft_ports]
        conf = SyncObjConf(journalFile=str(data_dir / "journal"),
                           fullDumpFile=str(data_dir / "dump"))
        self.data = ReplDict()
        others = [a for i, a in enumerate(self.addresses) if i != index]
        self.sync = SyncObj(self.addresses[index], others, conf=conf, consumers=[self.data])

    def leader_index(self) -> int:
        leader = self.sync._getLeader()
        return -1 if leader is None else self.addresses.index(str(leader.address))

    async def set(self, key: str, value: bytes) -> int:
        """0 once committed, else a Kafka error code (NOT_LEADER_OR_FOLLOWER)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[int] = loop.create_future()

        def callback(_result: object, error: int) -> None:
            code = ErrorCode.NONE if error == FAIL_REASON.SUCCESS else (
                ErrorCode.NOT_LEADER_OR_FOLLOWER)
            loop.call_soon_threadsafe(_settle, done, int(code))

        self.data.set(key, value, callback=callback)
        return await done

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        stream = FrameStream(reader, writer)
        key = f"w{id(writer)}"
        try:
            while (frame := await stream.read_frame()) is not None:
                header, value = decode_append_request(frame)
                error = await self.set(key, value)
                result = AppendResult(error, self.leader_index(), -1)
                await stream.write_frame(encode_append_response(header.correlation_id, result))
        except (OSError, EOFError, ProtocolError):
            pass
        finally:
            stream.close()


def _settle(done: asyncio.Future[int], code: int) -> None:
    if not done.done():
        done.set_result(code)


async def main(argv: list[str]) -> None:
    index, raft_ports, client_port, data_dir = argv
    node = Node(int(index), [int(p) for p in raft_ports.split(",")], Path(data_dir))
    server = await asyncio.start_server(node.serve, HOST, int(client_port))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
