"""Helpers for tests against real ``pykraft server`` processes: polling with deadlines,
quorum descriptions, appended writes and reading a stopped node's log from disk."""

from __future__ import annotations

import asyncio
import select
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import IO, TypeVar

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pykraft.errors import PyKraftError
from pykraft.records.batch import iter_batches
from pykraft.storage.metadata_log import MetadataLog
from pykraft.testing.append import APPEND_PROPERTIES, AppendClient
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import QuorumInfo, describe_quorum, parse_host_port

T = TypeVar("T")

#: Election timeouts stay Kafka's; only the shutdown bound is shorter to keep tests quick. The
#: nodes run the Raft core alone and serve the append request (:mod:`pykraft.testing.append`).
TEST_PROPERTIES = {**APPEND_PROPERTIES, "pykraft.shutdown.timeout.ms": "3000"}
STARTUP_S = 30.0


def readable(stream: IO[str], timeout_s: float) -> bool:
    """Whether ``stream`` (a child's pipe) has something to read within ``timeout_s``:
    poll(2), which takes any descriptor, where select(2) refuses those from 1024 up
    (FD_SETSIZE) and a long test worker can hold that many."""
    poller = select.poll()
    poller.register(stream, select.POLLIN)
    return bool(poller.poll(timeout_s * 1000))


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = STARTUP_S) -> T:
    """Poll ``probe`` until it returns a value; fail with ``what`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.1)


def describe(cluster: LocalCluster, node_id: int | None = None) -> QuorumInfo | None:
    """The quorum as seen through ``node_id`` (any running node by default), or None."""
    candidates = [node_id] if node_id is not None else [
        n for n in cluster.nodes if cluster.is_running(n)]
    for candidate in candidates:
        address = parse_host_port(cluster.nodes[candidate].address)
        try:
            return asyncio.run(describe_quorum(address, timeout_s=1.0))
        except PyKraftError:
            continue
    return None


def leader_info(cluster: LocalCluster, *, min_epoch: int = 0, exclude: int | None = None) -> (
    QuorumInfo
):
    """Wait for a leader whose first record of its epoch committed (HWM known)."""
    def probe() -> QuorumInfo | None:
        info = describe(cluster)
        if info is None or info.leader_epoch < min_epoch or info.leader_id == exclude:
            return None
        return info if info.high_watermark > 0 else None
    return wait_for(f"a leader of epoch >= {min_epoch}", probe)


def write_values(cluster: LocalCluster, leader_id: int, values: list[bytes]) -> list[bytes]:
    """Append ``values`` on the leader; returns those acknowledged as committed."""
    async def run() -> list[bytes]:
        host, port = parse_host_port(cluster.nodes[leader_id].address)
        client = await AppendClient.connect(host, port)
        acked = []
        try:
            for value in values:
                if (await client.append(value)).error_code == 0:
                    acked.append(value)
        finally:
            client.close()
        return acked
    return asyncio.run(run())


def values_on_disk(cluster: LocalCluster, node_id: int) -> list[bytes]:
    """Data record values in a stopped node's metadata log, in offset order."""
    directory = cluster.nodes[node_id].data / "__cluster_metadata-0"
    with MetadataLog.open(directory) as log:
        data = log.read(0, 1 << 30)
    return [record.value or b"" for batch in iter_batches(data) if not batch.is_control
            for record in batch.records()]


#: A /metrics page: each sample by name and sorted labels.
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples | None:
    """Every sample of the node's /metrics page (None while it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
            text = page.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return None
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}
