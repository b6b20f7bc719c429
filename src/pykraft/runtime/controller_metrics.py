"""A controller's ``kafka.controller:type=KafkaController`` gauges (Kafka's
QuorumControllerMetrics and ControllerMetadataMetrics), computed from its committed image
when scraped (on the loop, :class:`~pykraft.runtime.metrics.LoopCollector`); names per
:mod:`pykraft.runtime.jmx_names`.

ActiveControllerCount is 1 on the active controller, 0 on the others; the image's counts
are every controller's, as Kafka's metadata metrics publisher runs on each: GlobalTopicCount,
GlobalPartitionCount, OfflinePartitionsCount (no leader), PreferredReplicaImbalanceCount
(leader other than the first replica, an offline one too, as Kafka's
``hasPreferredLeader``), ActiveBrokerCount and FencedBrokerCount (registered brokers by
fencing), ZkMigrationState (the migration state byte, KIP-866; -1 until a first batch
committed, as Kafka's is until its first image). One pass over the partitions a scrape: a
scrape every 15 s of 100,000 partitions is a few tens of ms of the loop.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily

from pykraft.image.image import MetadataImage
from pykraft.runtime.jmx_names import prometheus_name


def controller_families(image: MetadataImage, *, active: bool) -> Iterator[GaugeMetricFamily]:
    """The gauges of ``image``, on the active controller when ``active``."""
    partitions = offline = imbalanced = 0
    for topic in image.topics.by_name.values():
        for registration in topic.partitions.values():
            partitions += 1
            offline += registration.leader < 0
            replicas = registration.replicas
            imbalanced += not replicas or registration.leader != replicas[0]
    brokers = image.cluster.brokers.values()
    fenced = sum(broker.fenced for broker in brokers)
    gauges = {
        "ActiveControllerCount": (int(active), "1 on the active controller"),
        "GlobalTopicCount": (len(image.topics.by_name), "Topics in the cluster"),
        "GlobalPartitionCount": (partitions, "Partitions in the cluster"),
        "OfflinePartitionsCount": (offline, "Partitions without a leader"),
        "PreferredReplicaImbalanceCount": (imbalanced,
                                           "Partitions not led by their first replica"),
        "ActiveBrokerCount": (len(brokers) - fenced, "Registered brokers not fenced"),
        "FencedBrokerCount": (fenced, "Registered brokers fenced"),
        "ZkMigrationState": (
            -1 if image.provenance.last_offset < 0 else int(image.features.zk_migration_state),
            "The ZooKeeper migration state (0 NONE, 1 MIGRATION, 2 PRE_MIGRATION, "
            "3 POST_MIGRATION)"),
    }
    for name, (value, doc) in gauges.items():
        yield GaugeMetricFamily(prometheus_name("kafka.controller", "KafkaController", name),
                                doc, value=value)
