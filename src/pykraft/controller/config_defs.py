"""The topic and broker configuration keys the controller accepts, with their types,
ranges and defaults, so bad values are refused before a ConfigRecord is written.

A subset of Kafka's ``LogConfig`` and dynamic broker configs: the keys clients commonly
set. Anything else is an unknown key (INVALID_CONFIG), as Kafka answers for a typo.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from pykraft.image.configs import ConfigResourceType

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class ConfigType(IntEnum):
    """DescribeConfigs ``ConfigType`` wire values."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    doc: str = ""

    def problem(self, value: str) -> str | None:
        """Why ``value`` is invalid for this key, or None when it is valid."""
        if self.type is ConfigType.BOOLEAN:
            if value.strip().lower() not in ("true", "false"):
                return f"Invalid value {value} for configuration {self.name}: expected a boolean"
            return None
        if self.type is ConfigType.LIST:
            items = [item.strip() for item in value.split(",") if item.strip()]
            bad = [item for item in items if self.choices and item not in self.choices]
            if bad:
                return (f"Invalid value {value} for configuration {self.name}: "
                        f"{bad[0]!r} is not one of {', '.join(self.choices or ())}")
            return None
        if self.type in (ConfigType.STRING, ConfigType.CLASS, ConfigType.PASSWORD):
            if self.choices and value.strip() not in self.choices:
                return (f"Invalid value {value} for configuration {self.name}: "
                        f"String must be one of: {', '.join(self.choices)}")
            return None
        return self._number_problem(value)

    def _number_problem(self, value: str) -> str | None:
        number: float
        try:
            number = float(value) if self.type is ConfigType.DOUBLE else int(value.strip())
        except ValueError:
            return (f"Invalid value {value} for configuration {self.name}: "
                    f"not a number of type {self.type.name}")
        bounds = _INT64 if self.type is ConfigType.LONG else _INT32
        low: float = bounds[0]
        high: float = bounds[1]
        if self.type is ConfigType.DOUBLE:
            low, high = -math.inf, math.inf
            if not math.isfinite(number):
                return f"Invalid value {value} for configuration {self.name}: not finite"
        if self.minimum is not None:
            low = max(low, self.minimum)
        if self.maximum is not None:
            high = min(high, self.maximum)
        if not low <= number <= high:
            bound = f"at least {low}" if number < low else f"at most {high}"
            return f"Invalid value {value} for configuration {self.name}: Value must be {bound}"
        return None


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

BROKER_CONFIGS = _defs(
    ConfigDef("background.threads", ConfigType.INT, "10", minimum=1),
    ConfigDef("compression.type", ConfigType.STRING, "producer", choices=_COMPRESSION),
    ConfigDef("log.cleaner.threads", ConfigType.INT, "1", minimum=0),
    ConfigDef("log.retention.bytes", ConfigType.LONG, "-1"),
    ConfigDef("log.retention.ms", ConfigType.LONG, _WEEK_MS, minimum=-1),
    ConfigDef("log.segment.bytes", ConfigType.INT, "1073741824", minimum=14),
    ConfigDef("max.connections", ConfigType.INT, str(2**31 - 1), minimum=0),
    ConfigDef("message.max.bytes", ConfigType.INT, "1048588", minimum=0),
    ConfigDef("min.insync.replicas", ConfigType.INT, "1", minimum=1),
    ConfigDef("num.io.threads", ConfigType.INT, "8", minimum=1),
    ConfigDef("num.network.threads", ConfigType.INT, "3", minimum=1),
    ConfigDef("num.replica.fetchers", ConfigType.INT, "1", minimum=1),
    ConfigDef("unclean.leader.election.enable", ConfigType.BOOLEAN, "false"),
)


def definitions(resource_type: int) -> Mapping[str, ConfigDef] | None:
    """The keys of a resource type, or None for a type the controller does not store."""
    if resource_type == ConfigResourceType.TOPIC:
        return TOPIC_CONFIGS
    if resource_type == ConfigResourceType.BROKER:
        return BROKER_CONFIGS
    return None
