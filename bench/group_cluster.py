"""The cluster bench/groups.py measures: ``LocalCluster`` with 1 controller and 1 broker
(``__consumer_offsets`` RF=1) or 3 brokers (RF=3, min.insync.replicas=2), and the topic of
6 partitions its groups consume and commit."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from peers.base import until
from peers.kafka_stream import PROPERTIES
from pykraft.tools.admin_client import AdminClient, AdminError, admin_settings
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.topics_tool import create_topic

TOPIC = "bench-groups"
PARTITIONS = 6
#: The broker's default group.min.session.timeout.ms (Kafka's).
MIN_SESSION_TIMEOUT_MS = 6000


def cluster_properties(brokers: int, session_timeout_ms: int) -> dict[str, str]:
    """Kafka's group settings but the first join's delay, and the minimum session timeout
    lowered only when the members ask for less."""
    replicated = {"offsets.topic.replication.factor": "3", "min.insync.replicas": "2"}
    lowered = ({"group.min.session.timeout.ms": str(session_timeout_ms)}
               if session_timeout_ms < MIN_SESSION_TIMEOUT_MS else {})
    return {**PROPERTIES, "group.initial.rebalance.delay.ms": "0", **lowered,
            **(replicated if brokers == 3 else {"offsets.topic.replication.factor": "1"})}


async def create_bench_topic(bootstrap: str, brokers: int) -> None:
    """The 6-partition topic (retried until the brokers are unfenced), then every partition
    led with all its replicas in sync."""
    async with AdminClient(admin_settings(bootstrap)) as admin:
        async def created() -> bool | None:
            try:
                await create_topic(admin, TOPIC, partitions=PARTITIONS,
                                   replication_factor=brokers, if_not_exists=True)
            except AdminError:
                return None
            return True

        async def in_sync() -> bool | None:
            found = (await admin.metadata([TOPIC])).topics.get(TOPIC)
            ready = found is not None and len(found.partitions) == PARTITIONS and all(
                p.leader is not None and len(p.isr) == brokers for p in found.partitions)
            return True if ready else None

        await until(f"topic {TOPIC} created", created)
        await until(f"topic {TOPIC} led and in sync", in_sync)


@contextlib.contextmanager
def running_cluster(base: Path, properties: dict[str, str], brokers: int,
                    ) -> Iterator[LocalCluster]:
    """A new cluster under ``base`` (emptied first), stopped by PID when the block ends."""
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    cluster = LocalCluster.create(base, 1, properties, brokers=brokers)
    cluster.start_all()
    try:
        cluster.wait_listening(list(cluster.nodes))
        yield cluster
    finally:
        cluster.stop_all()
