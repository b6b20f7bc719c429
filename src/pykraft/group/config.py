"""The group coordinator's settings, under Kafka's broker keys and with Kafka's defaults
(``GroupCoordinatorConfig``), so a ``server.properties`` written for Kafka means the same here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from pykraft.config.properties import int_property
from pykraft.errors import ConfigError

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""How long a member that joined during an initial rebalance may wait before its first
heartbeat is due (Kafka's fixed ``classicGroupNewMemberJoinTimeoutMs``), so a new member
that vanished does not hold the rebalance for its whole rebalance timeout."""

INT_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The classic coordinator's limits and timers, in milliseconds and bytes."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = INT_MAX
    offsets_retention_ms: int = 10080 * 60_000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    # KIP-848 consumer groups (group.consumer.*)
    consumer_session_timeout_ms: int = 45_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_max_size: int = INT_MAX

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> GroupConfig:
        """The settings named in ``properties`` (Kafka's keys), defaults for the rest; a value
        that is not an integer in range raises :class:`ConfigError` naming the key."""
        values: dict[str, int] = {}
        for attribute in fields(cls):
            key, scale, minimum = _KEYS[attribute.name]
            number = int_property(properties, key, minimum)
            if number is not None:
                values[attribute.name] = number * scale
        config = cls(**values)
        if config.min_session_timeout_ms > config.max_session_timeout_ms:
            raise ConfigError("group.min.session.timeout.ms must not exceed "
                              "group.max.session.timeout.ms")
        return config


_KEYS: dict[str, tuple[str, int, int]] = {
    # attribute: (Kafka's key, multiplier to this class's unit, smallest valid value)
    "min_session_timeout_ms": ("group.min.session.timeout.ms", 1, 0),
    "max_session_timeout_ms": ("group.max.session.timeout.ms", 1, 0),
    "initial_rebalance_delay_ms": ("group.initial.rebalance.delay.ms", 1, 0),
    "max_size": ("group.max.size", 1, 1),
    "offsets_retention_ms": ("offsets.retention.minutes", 60_000, 1),
    "offsets_retention_check_interval_ms": ("offsets.retention.check.interval.ms", 1, 1),
    "offset_metadata_max_bytes": ("offset.metadata.max.bytes", 1, 0),
    "consumer_session_timeout_ms": ("group.consumer.session.timeout.ms", 1, 1),
    "consumer_heartbeat_interval_ms": ("group.consumer.heartbeat.interval.ms", 1, 1),
    "consumer_max_size": ("group.consumer.max.size", 1, 1),
}

GROUP_CONFIG_KEYS: tuple[str, ...] = tuple(key for key, _, _ in _KEYS.values())
"""Kafka's names of the keys :meth:`GroupConfig.from_properties` reads."""
