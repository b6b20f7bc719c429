"""Replication throttles on a broker: the configs they follow (Kafka's BrokerConfigHandler
and TopicConfigHandler), the leader holding back an out-of-sync follower's throttled reads
(shouldLeaderThrottle), and a follower fetching a throttled partition at the bound
(shouldFollowerThrottle)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from replica_fixtures import (
    InProcessLeader,
    broker,
    client_batch,
    hosted,
    produce,
    replicas_of,
    until,
    with_records,
)

from pykraft.broker.fetch import FetchHandler
from pykraft.broker.replica_fetcher import FetcherConfig, FetcherKey, ReplicaFetcher
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.broker.replication_throttles import ReplicationThrottles
from pykraft.image.configs import ConfigResourceType
from pykraft.image.image import MetadataImage
from pykraft.log.log_manager import LogManager
from pykraft.messages.kafka.fetch_request import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ReplicaState,
)
from pykraft.messages.kafka.fetch_response import PartitionData
from pykraft.records.metadata import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionRecord,
    TopicRecord,
)
from pykraft.replica.replication_quota import ALL_REPLICAS, UNLIMITED, ReplicationQuota
from pykraft.storage.log_config import LogConfig

BROKER, TOPIC = ConfigResourceType.BROKER, ConfigResourceType.TOPIC
T1 = uuid.UUID(int=7)
ME, F2, F3 = 1, 2, 3


def config(resource_type: int, name: str, key: str, value: str | None) -> ConfigRecord:
    return ConfigRecord(resource_type=resource_type, resource_name=name, name=key, value=value)


def test_rates_come_from_this_brokers_dynamic_config_then_the_cluster_default() -> None:
    throttles = ReplicationThrottles(1, {"leader.replication.throttled.rate": "5"})
    image = with_records(MetadataImage(), config(TOPIC, "other", "retention.ms", "1"))
    throttles.apply_configs(image.configs)
    assert throttles.leader.bound == UNLIMITED  # the properties file is not read
    image = with_records(image, config(BROKER, "", "leader.replication.throttled.rate", "7"),
                         config(BROKER, "", "follower.replication.throttled.rate", "8"),
                         config(BROKER, "1", "follower.replication.throttled.rate", "9"),
                         config(BROKER, "2", "leader.replication.throttled.rate", "1"))
    throttles.apply_configs(image.configs)
    assert (throttles.leader.bound, throttles.follower.bound) == (7, 9)
    assert throttles.alter_log_dirs.bound == UNLIMITED
    rate = "replica.alter.log.dirs.io.max.bytes.per.second"
    image = with_records(image, config(BROKER, "", rate, "3"), config(BROKER, "1", rate, "4"))
    throttles.apply_configs(image.configs)
    assert throttles.alter_log_dirs.bound == 4


def test_throttled_replicas_follow_the_topic_configs() -> None:
    throttles = ReplicationThrottles(1, {})
    image = with_records(
        MetadataImage(),
        config(TOPIC, "a", "leader.replication.throttled.replicas", "0:1,1:2,2:1"),
        config(TOPIC, "a", "follower.replication.throttled.replicas", "1:1"),
        config(TOPIC, "b", "leader.replication.throttled.replicas", "*"))
    throttles.apply_configs(image.configs)
    assert [throttles.leader.is_throttled("a", p) for p in range(3)] == [True, False, True]
    assert throttles.follower.is_throttled("a", 1) and throttles.leader.is_throttled("b", 9)
    image = with_records(image,
                         config(TOPIC, "a", "leader.replication.throttled.replicas", None),
                         config(TOPIC, "b", "leader.replication.throttled.replicas", ""))
    throttles.apply_configs(image.configs)
    assert throttles.leader.throttled_topics() == frozenset()
    assert throttles.follower.is_throttled("a", 1)


def partition(replicas: tuple[int, ...], isr: tuple[int, ...]) -> list[object]:
    return [TopicRecord(name="t", topic_id=T1), PartitionRecord(
        partition_id=0, topic_id=T1, replicas=replicas, isr=isr, leader=replicas[0],
        leader_epoch=0, partition_epoch=0)]


class Clock:
    def __init__(self, step_ms: int = 0) -> None:
        self.now, self._step = 0, step_ms

    def __call__(self) -> int:
        self.now += self._step
        return self.now


@pytest.fixture
def throttled_leader(tmp_path: Path) -> Any:
    """t-0 led here with F3 out of the ISR, under a 100 bytes/s leader throttle."""
    logs = LogManager([tmp_path], LogConfig())
    logs.startup(0)
    clock = Clock()
    leader = ReplicaManager(ME, logs, {}, clock_ms=clock)
    leader.apply_image(with_records(
        MetadataImage(), *(broker(b, 9090 + b) for b in (ME, F2, F3)),
        *(BrokerRegistrationChangeRecord(broker_id=b, broker_epoch=10, fenced=-1)
          for b in (ME, F2, F3)),
        *partition((ME, F2, F3), (ME, F2)),
        config(BROKER, str(ME), "leader.replication.throttled.rate", "100"),
        config(TOPIC, "t", "leader.replication.throttled.replicas", "0:1,0:2,0:3")), 0)
    leader.append_records(leader.partition_for("t", 0), client_batch([b"v"] * 20), acks=1,
                          api_version=9, now_ms=0)
    yield leader, clock
    leader.shutdown()


def follower_fetch(leader: ReplicaManager, replica: int) -> PartitionData:
    """A follower's Fetch v15 of t-0 from offset 0."""
    request = FetchRequest(
        replica_id=-1, replica_state=ReplicaState(replica_id=replica, replica_epoch=10),
        max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
        topics=(FetchTopic(topic_id=T1, partitions=(FetchPartition(
            partition=0, current_leader_epoch=0, fetch_offset=0, log_start_offset=0,
            partition_max_bytes=1 << 20),)),))
    response = asyncio.run(FetchHandler(leader, "PLAINTEXT").fetch(request, 15))
    return response.responses[0].partitions[0]


def test_the_leader_holds_back_an_out_of_sync_follower_over_the_quota(
        throttled_leader: tuple[ReplicaManager, Clock]) -> None:
    leader, clock = throttled_leader
    first = follower_fetch(leader, F3)
    assert first.records  # within the quota: the whole read
    held = follower_fetch(leader, F3)
    assert not held.records and held.error_code == 0
    assert held.high_watermark == first.high_watermark
    assert follower_fetch(leader, F2).records  # an ISR member is never held back
    clock.now = 60_000  # the measured window has emptied
    assert follower_fetch(leader, F3).records


def test_a_follower_fetches_a_throttled_partition_at_the_bound(tmp_path: Path) -> None:
    """A follower out of the ISR copying 30 batches of about 1 KB under a 4000 bytes/s
    follower throttle takes the time the bound allows on its clock (which moves 5 ms at
    every look). (In the ISR the leader's high watermark waits for it: never lagging, it
    would never be held back.)"""
    image = with_records(MetadataImage(), *partition((1, 2), (1,)))
    leader, follower = replicas_of(tmp_path, 1, image), replicas_of(tmp_path, 2, image)
    for number in range(30):
        produce(leader, [b"%04d" % number * 250])
    total = hosted(leader).log.size
    quota = ReplicationQuota(samples=11, window_ms=1000)
    quota.bound = 4000
    quota.mark_throttled("t", ALL_REPLICAS)
    clock = Clock(step_ms=5)

    async def run() -> None:
        connection = InProcessLeader(leader, 17)

        async def opener(_address: tuple[str, int], _client: str, _timeout: float) -> Any:
            return connection

        fetcher = ReplicaFetcher(2, FetcherKey(1, ("127.0.0.1", 9), 0),
                                 FetcherConfig(wait_max_ms=0, backoff_ms=1, max_bytes=1200),
                                 clock, lambda: 10, opener, quota=quota)
        fetcher.add(hosted(follower))
        fetcher.start()
        try:
            await until(lambda: hosted(follower).log_end_offset == 30, "caught up",
                        deadline_s=60)
        finally:
            await fetcher.stop()

    asyncio.run(run())
    rate = total / (clock.now / 1000)
    assert 0.8 * quota.bound <= rate <= 1.2 * quota.bound
