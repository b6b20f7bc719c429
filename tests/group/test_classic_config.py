"""GroupConfig from a broker's properties: Kafka's keys, defaults and refusals."""

from __future__ import annotations

import pytest

from pykraft.errors import ConfigError
from pykraft.group.config import GROUP_CONFIG_KEYS, GroupConfig


def test_defaults_are_kafkas() -> None:
    config = GroupConfig.from_properties({})
    assert config == GroupConfig()
    assert (config.min_session_timeout_ms, config.max_session_timeout_ms) == (6000, 1_800_000)
    assert config.initial_rebalance_delay_ms == 3000 and config.max_size == 2**31 - 1
    assert config.offsets_retention_ms == 7 * 24 * 3_600_000
    assert config.offsets_retention_check_interval_ms == 600_000
    assert config.offset_metadata_max_bytes == 4096


def test_keys_are_read_with_their_units() -> None:
    config = GroupConfig.from_properties({
        "group.min.session.timeout.ms": "100", "group.max.session.timeout.ms": "200",
        "group.initial.rebalance.delay.ms": "0", "group.max.size": "5",
        "offsets.retention.minutes": "2", "offsets.retention.check.interval.ms": "10",
        "offset.metadata.max.bytes": "7", "unrelated.key": "x"})
    assert config == GroupConfig(100, 200, 0, 5, 120_000, 10, 7)
    assert set(GROUP_CONFIG_KEYS) >= {
        "group.min.session.timeout.ms", "group.max.session.timeout.ms",
        "group.initial.rebalance.delay.ms", "group.max.size", "offsets.retention.minutes",
        "offsets.retention.check.interval.ms", "offset.metadata.max.bytes"}


@pytest.mark.parametrize(("key", "value", "message"), [
    ("group.max.size", "many", "invalid value 'many' for group.max.size: must be an integer"),
    ("group.max.size", "0", "invalid value 0 for group.max.size: must be >= 1"),
    ("offsets.retention.minutes", "0",
     "invalid value 0 for offsets.retention.minutes: must be >= 1"),
    ("group.min.session.timeout.ms", "2000000", "must not exceed"),
])
def test_bad_values_are_refused_naming_the_key(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        GroupConfig.from_properties({key: value})
