"""RaftNode.create_snapshot, what the embeddable log snapshots with: the core's refusal goes
to the caller and leaves the node running; an accepted snapshot is on disk at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pykraft.config.server import ServerConfig
from pykraft.errors import RaftError
from pykraft.raft.log import OffsetAndEpoch
from pykraft.runtime.node import RaftNode
from pykraft.runtime.settings import load_settings
from pykraft.tools.local_cluster import LocalCluster

DEADLINE_S = 20.0


def test_a_refused_snapshot_is_the_callers_error_and_the_node_goes_on(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = LocalCluster.create(tmp_path, 1)
        node = RaftNode(load_settings(ServerConfig.load(cluster.nodes[1].config)))
        node.start()
        try:
            async with asyncio.timeout(DEADLINE_S):
                offset = await node.append(b"entry")
                assert await node.machine.wait_committed(offset)
            with pytest.raises(RaftError, match="not committed and delivered yet"):
                node.create_snapshot(OffsetAndEpoch(offset + 100, node.core.epoch), [[b"x"]])
            assert (node.exit_code, node.stopped.is_set()) == (0, False)
            snapshot_id = OffsetAndEpoch(offset + 1, node.core.epoch)
            node.create_snapshot(snapshot_id, [[b"state"]])
            assert snapshot_id in [s.snapshot_id for s in node.disk_log.snapshots()]
            async with asyncio.timeout(DEADLINE_S):
                assert await node.machine.wait_committed(await node.append(b"after"))
        finally:
            await node.shutdown()

    asyncio.run(scenario())
