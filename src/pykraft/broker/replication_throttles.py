"""The broker's replication throttles (Kafka's ``QuotaManagers.leader``, ``.follower`` and
``.alterLogDirs``), kept in step with the dynamic configs of the metadata image.

Interface::

    throttles = ReplicationThrottles(broker_id, static_properties)
    throttles.apply_configs(image.configs)         # on each config change
    throttles.leader / throttles.follower          # ReplicationQuota
    throttles.alter_log_dirs                       # ... of copies between log dirs
    throttles.leader_holds_back(topic, index, in_sync=..., now_ms=...)

The bounds come from ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` of BROKER ``"<this broker>"``, else of the cluster
default BROKER ``""``, else unlimited: Kafka's ``BrokerConfigHandler`` reads only those two
dynamic layers, never the properties file. The throttled partitions come from each topic's
``leader.replication.throttled.replicas`` / ``follower.replication.throttled.replicas``
entries naming this broker (``TopicConfigHandler``). The windows are the static
``replication.quota.window.num`` and ``replication.quota.window.size.seconds``.
AlterReplicaLogDirs copies (every partition's) are bound the same way by
``replica.alter.log.dirs.io.max.bytes.per.second``, over the windows of
``alter.log.dirs.replication.quota.window.num`` / ``.size.seconds``.
"""

from __future__ import annotations

from collections.abc import Mapping

from pykraft.config.broker_configs import (
    FOLLOWER_REPLICATION_THROTTLED_RATE,
    LEADER_REPLICATION_THROTTLED_RATE,
    REPLICA_ALTER_LOG_DIRS_RATE,
)
from pykraft.image.configs import ConfigResourceType, ConfigurationsImage
from pykraft.replica.replication_quota import UNLIMITED, ReplicationQuota, throttled_partitions

LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
WINDOW_NUM = "replication.quota.window.num"
WINDOW_SIZE_SECONDS = "replication.quota.window.size.seconds"
ALTER_LOG_DIRS_WINDOW_NUM = "alter.log.dirs.replication.quota.window.num"
ALTER_LOG_DIRS_WINDOW_SIZE_SECONDS = "alter.log.dirs.replication.quota.window.size.seconds"


class ReplicationThrottles:
    """This broker's leader and follower replication quotas."""

    def __init__(self, broker_id: int, static: Mapping[str, str]) -> None:
        self._broker_id = broker_id
        samples = int(static.get(WINDOW_NUM, "11"))
        window_ms = int(static.get(WINDOW_SIZE_SECONDS, "1")) * 1000
        self.leader = ReplicationQuota(samples=samples, window_ms=window_ms)
        self.follower = ReplicationQuota(samples=samples, window_ms=window_ms)
        self.alter_log_dirs = ReplicationQuota(
            samples=int(static.get(ALTER_LOG_DIRS_WINDOW_NUM, "11")),
            window_ms=int(static.get(ALTER_LOG_DIRS_WINDOW_SIZE_SECONDS, "1")) * 1000)

    def apply_configs(self, configs: ConfigurationsImage) -> None:
        """Bounds and throttled partitions as ``configs`` now say."""
        own, default = configs.broker(str(self._broker_id)), configs.broker("")
        self.alter_log_dirs.bound = _rate(own.get(REPLICA_ALTER_LOG_DIRS_RATE,
                                                  default.get(REPLICA_ALTER_LOG_DIRS_RATE)))
        for quota, rate_key, replicas_key in (
                (self.leader, LEADER_REPLICATION_THROTTLED_RATE, LEADER_THROTTLED_REPLICAS),
                (self.follower, FOLLOWER_REPLICATION_THROTTLED_RATE,
                 FOLLOWER_THROTTLED_REPLICAS)):
            quota.bound = _rate(own.get(rate_key, default.get(rate_key)))
            listed = {}
            for (resource_type, topic), topic_configs in configs.resources.items():
                if resource_type == ConfigResourceType.TOPIC and replicas_key in topic_configs:
                    partitions = throttled_partitions(topic_configs[replicas_key],
                                                      self._broker_id)
                    if partitions is not None:
                        listed[topic] = partitions
            for topic in quota.throttled_topics() - listed.keys():
                quota.remove_throttle(topic)
            for topic, partitions in listed.items():
                quota.mark_throttled(topic, partitions)

    def leader_holds_back(self, topic: str, index: int, *, in_sync: bool, now_ms: int) -> bool:
        """Kafka's ``shouldLeaderThrottle``: the leader sends a follower no records of a
        throttled partition while its quota is exceeded, unless the follower is in the
        ISR (throttling it would thrash the ISR)."""
        return (not in_sync and self.leader.is_throttled(topic, index)
                and self.leader.is_exceeded(now_ms))


def _rate(value: str | None) -> int:
    """A configured rate; one the controller let through but that is no number is
    taken as unset (the controller validates LONG >= 0)."""
    try:
        return UNLIMITED if value is None else int(value)
    except ValueError:
        return UNLIMITED
