"""The topic and broker configuration keys the controller accepts, with their types,
ranges and defaults, so bad values are refused before a ConfigRecord is written.

Topics: a subset of Kafka's ``LogConfig``, the keys clients commonly set. Brokers: every
key Kafka updates dynamically (:data:`~pykraft.config.broker_configs.DYNAMIC_BROKER_CONFIGS`).
Anything else is an unknown key (INVALID_CONFIG), as Kafka answers for a typo.
"""

from __future__ import annotations

from collections.abc import Mapping

from pykraft.config.broker_configs import BROKER_CONFIG_DEFS, DYNAMIC_BROKER_CONFIGS
from pykraft.config.definitions import ConfigDef, ConfigSource, ConfigType
from pykraft.image.configs import ConfigResourceType

__all__ = ["BROKER_CONFIGS", "BROKER_CONFIG_DEFS", "TOPIC_CONFIGS", "ConfigDef", "ConfigSource",
           "ConfigType", "definitions"]

def _defs(*defs: ConfigDef) -> Mapping[str, ConfigDef]:
    return {d.name: d for d in defs}


_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_WEEK_MS = str(7 * 24 * 3600 * 1000)

TOPIC_CONFIGS = _defs(
    ConfigDef("cleanup.policy", ConfigType.LIST, "delete", choices=("delete", "compact")),
    ConfigDef("compression.type", ConfigType.STRING, "producer", choices=_COMPRESSION),
    ConfigDef("delete.retention.ms", ConfigType.LONG, "86400000", minimum=0),
    ConfigDef("file.delete.delay.ms", ConfigType.LONG, "60000", minimum=0),
    ConfigDef("flush.messages", ConfigType.LONG, str(2**63 - 1), minimum=1),
    ConfigDef("flush.ms", ConfigType.LONG, str(2**63 - 1), minimum=0),
    ConfigDef("index.interval.bytes", ConfigType.INT, "4096", minimum=0),
    ConfigDef("max.compaction.lag.ms", ConfigType.LONG, str(2**63 - 1), minimum=1),
    ConfigDef("max.message.bytes", ConfigType.INT, "1048588", minimum=0),
    ConfigDef("message.timestamp.type", ConfigType.STRING, "CreateTime",
              choices=("CreateTime", "LogAppendTime")),
    ConfigDef("min.cleanable.dirty.ratio", ConfigType.DOUBLE, "0.5", minimum=0, maximum=1),
    ConfigDef("min.compaction.lag.ms", ConfigType.LONG, "0", minimum=0),
    ConfigDef("min.insync.replicas", ConfigType.INT, "1", minimum=1),
    ConfigDef("preallocate", ConfigType.BOOLEAN, "false"),
    ConfigDef("retention.bytes", ConfigType.LONG, "-1"),
    ConfigDef("retention.ms", ConfigType.LONG, _WEEK_MS, minimum=-1),
    ConfigDef("segment.bytes", ConfigType.INT, "1073741824", minimum=14),
    ConfigDef("segment.index.bytes", ConfigType.INT, "10485760", minimum=4),
    ConfigDef("segment.jitter.ms", ConfigType.LONG, "0", minimum=0),
    ConfigDef("segment.ms", ConfigType.LONG, _WEEK_MS, minimum=1),
    ConfigDef("unclean.leader.election.enable", ConfigType.BOOLEAN, "false"),
    ConfigDef("leader.replication.throttled.replicas", ConfigType.LIST, ""),
    ConfigDef("follower.replication.throttled.replicas", ConfigType.LIST, ""),
)

BROKER_CONFIGS = DYNAMIC_BROKER_CONFIGS


def definitions(resource_type: int) -> Mapping[str, ConfigDef] | None:
    """The keys of a resource type, or None for a type the controller does not store."""
    if resource_type == ConfigResourceType.TOPIC:
        return TOPIC_CONFIGS
    if resource_type == ConfigResourceType.BROKER:
        return BROKER_CONFIGS
    return None
