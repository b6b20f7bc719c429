"""A broker's group coordinator, transaction coordinator and client quota metrics under
Kafka 4.4's names (issue 31, item 10): the quota sensors' byte-rate and throttle-time per
(user, client-id) once a quota of their kind is set, the group coordinator's families from
its counters and census."""

from __future__ import annotations

import asyncio
import math
from collections import Counter

from prometheus_client.core import Metric

from pykraft.broker.client_quotas import BrokerQuotas
from pykraft.broker.coordinator_metrics import group_families, quota_families
from pykraft.config.server import ServerConfig
from pykraft.group.metrics import GroupCensus, GroupCounters
from pykraft.image import MetadataDelta, MetadataImage, Provenance
from pykraft.records.metadata import ClientQuotaRecord, EntityData
from pykraft.runtime.metrics import WindowedStat
from pykraft.security.session import anonymous

Samples = dict[tuple[str, tuple[str, ...]], float]


def _samples(families: list[Metric]) -> Samples:
    return {(s.name, tuple(s.labels.values())): s.value for f in families for s in f.samples}


def _with_quota(client_id: str, rate: float) -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    delta.replay(ClientQuotaRecord(entity=(EntityData(entity_type="client-id",
                                                      entity_name=client_id),),
                                   key="producer_byte_rate", value=rate))
    return delta.apply(Provenance(10, 1, 0))


def test_quota_sensors_show_byte_rate_and_throttle_time_per_client() -> None:
    now = [0]
    image = MetadataImage()
    quotas = BrokerQuotas(ServerConfig({}), lambda: now[0], lambda: image)
    session = anonymous("127.0.0.1:5000")
    assert _samples(list(quota_families(quotas))) == {}  # no quota: nothing recorded
    image = _with_quota("slow", 1000.0)

    async def produce(client_id: str, size: int) -> int:
        return quotas.throttle_produce(session, client_id, size)  # mutes on the loop

    assert asyncio.run(produce("slow", 500)) == 0
    now[0] = 1_000
    throttled = asyncio.run(produce("slow", 20_000))
    assert throttled > 0
    found = _samples(list(quota_families(quotas)))
    key = ("Produce", "", "slow")  # a client-id quota: its tags have no user
    # Kafka's Rate: 20,500 bytes over at least 10 of the 11 one-second windows
    assert found[("kafka_server_quota_byte_rate", key)] == 20_500 / 10
    assert found[("kafka_server_quota_throttle_time", key)] == throttled
    assert asyncio.run(produce("fast", 10)) == 0  # recorded, never throttled
    found = _samples(list(quota_families(quotas)))
    assert math.isnan(found[("kafka_server_quota_throttle_time", ("Produce", "", "fast"))])


class _Groups:
    """What :func:`group_families` reads of a group coordinator service."""

    def __init__(self) -> None:
        self.counters = GroupCounters(offset_commits=7, completed_rebalances=2,
                                      consumer_rebalances=3)
        self.load_times_ms = WindowedStat()
        self.load_times_ms.record(12.0)
        self.load_times_ms.record(4.0)

    def census(self) -> GroupCensus:
        return GroupCensus(Counter({("classic", "Stable"): 2, ("classic", "Empty"): 1,
                                    ("consumer", "Reconciling"): 1}), 9)


def test_group_families_carry_kafkas_names() -> None:
    found = _samples(list(group_families(_Groups())))  # type: ignore[arg-type]
    gcm = "kafka_server_group_coordinator_metrics_"
    gmm = "kafka_coordinator_group_groupmetadatamanager_"
    assert found[(gcm + "offset_count", ())] == 9
    assert found[(gcm + "group_count", ("classic",))] == 3
    assert found[(gcm + "group_count", ("consumer",))] == 1
    assert found[(gcm + "classic_group_count", ("Stable",))] == 2
    assert found[(gcm + "classic_group_count", ("PreparingRebalance",))] == 0
    assert found[(gcm + "consumer_group_count", ("Reconciling",))] == 1
    assert found[(gcm + "offset_commit_count", ())] == 7
    assert found[(gcm + "group_completed_rebalance_count", ())] == 2
    assert found[(gcm + "consumer_group_rebalance_count", ())] == 3
    assert found[(gcm + "offset_expiration_count", ())] == 0
    assert found[(gcm + "partition_load_time_max", ())] == 12.0
    assert found[(gcm + "partition_load_time_avg", ())] == 8.0
    assert (found[(gmm + "numgroups", ())], found[(gmm + "numoffsets", ())]) == (3, 9)
    assert found[(gmm + "numgroupsstable", ())] == 2
    assert found[(gmm + "numgroupsempty", ())] == 1
