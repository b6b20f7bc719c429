"""A topic's effective log and produce settings, as a broker resolves them (sans-I/O).

Kafka's ``LogConfig``: a topic's own config (``ConfigRecord`` of the TOPIC) wins, then the
broker's ``log.*`` synonym from its properties file, then Kafka's default. Interface::

    settings = topic_settings(image.configs.get((ConfigResourceType.TOPIC, name)), static)
    settings.log     # LogConfig for storage.partition_log
    settings.append  # AppendConfig for partition.validator
    settings.min_insync_replicas, settings.file_delete_delay_ms
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pykraft.controller.config_defs import TOPIC_CONFIGS
from pykraft.errors import ConfigError
from pykraft.partition.validator import AppendConfig
from pykraft.storage.log_config import LogConfig

#: Topic key -> the broker keys that give its default, highest precedence first (Kafka's
#: ``ServerTopicConfigSynonyms``); ``log.roll.hours`` and ``log.retention.hours`` are
#: converted to milliseconds.
_BROKER_SYNONYMS: Mapping[str, tuple[str, ...]] = {
    "segment.bytes": ("log.segment.bytes",),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "segment.index.bytes": ("log.index.size.max.bytes",),
    "index.interval.bytes": ("log.index.interval.bytes",),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "retention.bytes": ("log.retention.bytes",),
    "cleanup.policy": ("log.cleanup.policy",),
    "max.message.bytes": ("message.max.bytes",),
    "message.timestamp.type": ("log.message.timestamp.type",),
    "compression.type": ("compression.type",),
    "min.insync.replicas": ("min.insync.replicas",),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms",),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms",),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio",),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms",),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms",),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms",),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms",),
}
_TO_MS = {"log.roll.hours": 3_600_000, "log.roll.jitter.hours": 3_600_000,
          "log.retention.hours": 3_600_000,
          "log.retention.minutes": 60_000}
_DEFAULTS = {"message.timestamp.before.max.ms": str((1 << 63) - 1),
             "message.timestamp.after.max.ms": "3600000"}

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TopicSettings:
    log: LogConfig
    append: AppendConfig
    min_insync_replicas: int

    @property
    def file_delete_delay_ms(self) -> int:
        """How long a deleted partition's directory waits (its log's setting)."""
        return self.log.file_delete_delay_ms


def _value(key: str, own: Mapping[str, str], static: Mapping[str, str]) -> str:
    if key in own:
        return own[key]
    for synonym in _BROKER_SYNONYMS.get(key, ()):
        if synonym in static:
            text = static[synonym]
            factor = _TO_MS.get(synonym)
            return text if factor is None else str(int(text) * factor)
    definition = TOPIC_CONFIGS.get(key)
    default = _DEFAULTS.get(key) if definition is None else definition.default
    assert default is not None, key
    return default


def topic_settings(own: Mapping[str, str], static: Mapping[str, str]) -> TopicSettings:
    """The settings of a topic with configs ``own`` on a broker started with ``static``."""
    def text(key: str) -> str:
        return _value(key, own, static)

    def parsed(key: str, kind: Callable[[str], T]) -> T:
        try:
            return kind(text(key))
        except ValueError:
            raise ConfigError(f"Invalid value {text(key)} for configuration {key}") from None

    def number(key: str) -> int:
        return parsed(key, int)

    def ratio(key: str) -> float:
        return parsed(key, float)

    policy = {part.strip() for part in text("cleanup.policy").split(",")}
    try:
        return TopicSettings(
            log=LogConfig(segment_bytes=number("segment.bytes"),
                          segment_ms=number("segment.ms"),
                          segment_jitter_ms=number("segment.jitter.ms"),
                          index_interval_bytes=number("index.interval.bytes"),
                          segment_index_bytes=number("segment.index.bytes"),
                          retention_ms=number("retention.ms"),
                          retention_bytes=number("retention.bytes"),
                          delete="delete" in policy,
                          compact="compact" in policy,
                          delete_retention_ms=number("delete.retention.ms"),
                          min_cleanable_dirty_ratio=ratio("min.cleanable.dirty.ratio"),
                          min_compaction_lag_ms=number("min.compaction.lag.ms"),
                          max_compaction_lag_ms=number("max.compaction.lag.ms"),
                          file_delete_delay_ms=number("file.delete.delay.ms")),
            append=AppendConfig(
                max_message_bytes=number("max.message.bytes"),
                timestamp_type=text("message.timestamp.type"),
                timestamp_before_max_ms=number("message.timestamp.before.max.ms"),
                timestamp_after_max_ms=number("message.timestamp.after.max.ms"),
                compression_type=text("compression.type"),
                compacted="compact" in policy),
            min_insync_replicas=number("min.insync.replicas"))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
