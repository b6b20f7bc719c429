"""A topic's effective log and produce settings, as a broker resolves them (sans-I/O).

Kafka's ``LogConfig``: a topic's own config (``ConfigRecord`` of the TOPIC) wins, then the
broker's ``log.*`` synonym (its dynamic configs, then its properties file), then Kafka's
default (:mod:`pykraft.config.topic_keys`). Interface::

    settings = topic_settings(image.configs.get((ConfigResourceType.TOPIC, name)), broker)
    settings.log     # LogConfig for storage.partition_log
    settings.append  # AppendConfig for log.validator
    settings.min_insync_replicas, settings.file_delete_delay_ms
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pykraft.config.topic_keys import INTERNAL_SEGMENT_BYTES, topic_value
from pykraft.errors import ConfigError
from pykraft.log.validator import AppendConfig
from pykraft.storage.log_config import LogConfig

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


def topic_settings(own: Mapping[str, str], broker: Mapping[str, str]) -> TopicSettings:
    """The settings of a topic with configs ``own`` on a broker whose properties, with the
    dynamic configs it applies laid over them, are ``broker``."""
    def text(key: str) -> str:
        return topic_value(key, own, broker)

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
    # Kafka's LogConfig.segmentSize(): the internal key, when set, wins
    segment_key = INTERNAL_SEGMENT_BYTES if INTERNAL_SEGMENT_BYTES in own else "segment.bytes"
    try:
        return TopicSettings(
            log=LogConfig(segment_bytes=number(segment_key),
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
