"""Dynamic broker configs take effect on a running broker: every key pykraft accepts from
IncrementalAlterConfigs (``APPLIED_DYNAMIC_CONFIGS``) changes the settings of the topics
that do not set it themselves, as soon as the ConfigRecord is in the broker's image; a
broker's own value wins over the cluster default, and a topic's own value over both.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from replica_fixtures import client_batch, topic, with_records

from pykraft.broker.replica_manager import ReplicaManager
from pykraft.broker.topic_settings import TopicSettings
from pykraft.config.broker_configs import APPLIED_DYNAMIC_CONFIGS, CONNECTION_LIMIT_KEYS
from pykraft.image.image import MetadataImage
from pykraft.log.cleaner_config import RECONFIGURABLE as CLEANER_KEYS
from pykraft.log.log_manager import LogManager
from pykraft.log.validator import ProduceValidationError
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ConfigRecord
from pykraft.storage.log_config import LogConfig

ME = 1
TOPIC, BROKER = 2, 4
Reader = Callable[[TopicSettings], object]

#: broker key -> (a value other than its default, where the topic's settings show it)
APPLIED: dict[str, tuple[str, Reader, object]] = {
    "compression.type": ("gzip", lambda s: s.append.compression_type, "gzip"),
    "log.cleaner.delete.retention.ms": ("7", lambda s: s.log.delete_retention_ms, 7),
    "log.cleaner.max.compaction.lag.ms": ("8", lambda s: s.log.max_compaction_lag_ms, 8),
    "log.cleaner.min.cleanable.ratio": ("0.25", lambda s: s.log.min_cleanable_dirty_ratio,
                                        0.25),
    "log.cleaner.min.compaction.lag.ms": ("9", lambda s: s.log.min_compaction_lag_ms, 9),
    "log.cleanup.policy": ("compact", lambda s: (s.log.delete, s.log.compact), (False, True)),
    "log.index.interval.bytes": ("10", lambda s: s.log.index_interval_bytes, 10),
    "log.index.size.max.bytes": ("4096", lambda s: s.log.segment_index_bytes, 4096),
    "log.message.timestamp.after.max.ms": ("11", lambda s: s.append.timestamp_after_max_ms, 11),
    "log.message.timestamp.before.max.ms": ("12",
                                            lambda s: s.append.timestamp_before_max_ms, 12),
    "log.message.timestamp.type": ("LogAppendTime", lambda s: s.append.timestamp_type,
                                   "LogAppendTime"),
    "log.retention.bytes": ("13", lambda s: s.log.retention_bytes, 13),
    "log.retention.ms": ("14", lambda s: s.log.retention_ms, 14),
    "log.roll.jitter.ms": ("15", lambda s: s.log.segment_jitter_ms, 15),
    "log.roll.ms": ("16", lambda s: s.log.segment_ms, 16),
    "log.segment.bytes": ("2000", lambda s: s.log.segment_bytes, 2000),
    "log.segment.delete.delay.ms": ("17", lambda s: s.file_delete_delay_ms, 17),
    "message.max.bytes": ("18", lambda s: s.append.max_message_bytes, 18),
    "min.insync.replicas": ("2", lambda s: s.min_insync_replicas, 2),
}


def manager_of(directory: Path, static: dict[str, str]) -> ReplicaManager:
    logs = LogManager([directory], LogConfig())
    logs.startup(1_000)
    manager = ReplicaManager(ME, logs, static)
    manager.apply_image(with_records(MetadataImage(), *topic("t", uuid.UUID(int=7), (ME,))),
                        1_000)
    return manager


def configure(manager: ReplicaManager, resource_type: int, name: str, key: str,
              value: str | None) -> TopicSettings:
    manager.apply_image(with_records(manager.image, ConfigRecord(
        resource_type=resource_type, resource_name=name, name=key, value=value)), 2_000)
    return manager.partition_for("t", 0).settings


def test_every_applied_key_is_checked_here() -> None:
    """The controller accepts exactly these keys (plus unclean.leader.election.enable, read
    by the controller at each election, the connection limits, applied by the broker's
    listeners: tests/integration/test_connection_limits.py, and the log cleaner's own:
    tests/broker/test_log_cleaner_settings.py): a new one needs its case here."""
    assert set(APPLIED) | {"unclean.leader.election.enable", *CONNECTION_LIMIT_KEYS,
                           *CLEANER_KEYS} == set(APPLIED_DYNAMIC_CONFIGS)


@pytest.mark.parametrize("key", sorted(APPLIED))
def test_a_dynamic_broker_config_changes_a_running_topic(tmp_path: Path, key: str) -> None:
    value, read, expected = APPLIED[key]
    manager = manager_of(tmp_path, {})
    before = read(manager.partition_for("t", 0).settings)
    assert before != expected
    assert read(configure(manager, BROKER, "", key, value)) == expected  # cluster default
    assert read(configure(manager, BROKER, "", key, None)) == before  # deleted: back


def test_this_broker_wins_over_the_cluster_default_and_the_topic_over_both(
        tmp_path: Path) -> None:
    manager = manager_of(tmp_path, {"message.max.bytes": "2000000"})
    assert configure(manager, BROKER, "", "message.max.bytes", "100").append.max_message_bytes \
        == 100
    assert configure(manager, BROKER, "2", "message.max.bytes", "300") \
        .append.max_message_bytes == 100  # another broker's value is not this one's
    assert configure(manager, BROKER, str(ME), "message.max.bytes", "5000") \
        .append.max_message_bytes == 5000
    assert configure(manager, TOPIC, "t", "max.message.bytes", "7000") \
        .append.max_message_bytes == 7000


def test_a_produce_over_a_lowered_message_max_bytes_is_refused(tmp_path: Path) -> None:
    manager = manager_of(tmp_path, {})
    configure(manager, BROKER, "", "message.max.bytes", "100")
    with pytest.raises(ProduceValidationError) as refused:
        manager.append_records(manager.partition_for("t", 0), client_batch([b"x" * 200]),
                               acks=1, api_version=12, now_ms=2_000)
    assert refused.value.error_code == ErrorCode.MESSAGE_TOO_LARGE


def test_the_properties_files_hours_give_way_to_a_dynamic_log_retention_ms(
        tmp_path: Path) -> None:
    """Kafka's synonym order: log.retention.ms, whatever layer sets it, before the hours."""
    manager = manager_of(tmp_path, {"log.retention.hours": "2"})
    assert manager.partition_for("t", 0).settings.log.retention_ms == 2 * 3_600_000
    assert configure(manager, BROKER, "", "log.retention.ms", "5000").log.retention_ms == 5000
