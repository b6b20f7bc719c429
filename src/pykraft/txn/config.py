"""The transaction coordinator's settings, under Kafka's broker keys and with Kafka's
defaults (``TransactionStateManagerConfig`` and ``TransactionLogConfig``), so a
``server.properties`` written for Kafka means the same here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from pykraft.config.properties import int_property


@dataclass(frozen=True, slots=True)
class TxnConfig:
    """Timeouts and intervals in milliseconds; the log's settings for ``__transaction_state``."""

    max_timeout_ms: int = 900_000
    id_expiration_ms: int = 604_800_000
    abort_timed_out_interval_ms: int = 10_000
    remove_expired_interval_ms: int = 3_600_000
    log_partitions: int = 50
    log_replication_factor: int = 3
    log_segment_bytes: int = 104_857_600
    log_min_isr: int = 2
    log_load_buffer_bytes: int = 5_242_880

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> TxnConfig:
        """The settings named in ``properties``, defaults for the rest; a value that is not
        an integer in range raises :class:`~pykraft.errors.ConfigError` naming the key."""
        values: dict[str, int] = {}
        for attribute in fields(cls):
            key, minimum = _KEYS[attribute.name]
            number = int_property(properties, key, minimum)
            if number is not None:
                values[attribute.name] = number
        return cls(**values)


_KEYS: dict[str, tuple[str, int]] = {
    # attribute: (Kafka's key, smallest valid value)
    "max_timeout_ms": ("transaction.max.timeout.ms", 1),
    "id_expiration_ms": ("transactional.id.expiration.ms", 1),
    "abort_timed_out_interval_ms": (
        "transaction.abort.timed.out.transaction.cleanup.interval.ms", 1),
    "remove_expired_interval_ms": (
        "transaction.remove.expired.transaction.cleanup.interval.ms", 1),
    "log_partitions": ("transaction.state.log.num.partitions", 1),
    "log_replication_factor": ("transaction.state.log.replication.factor", 1),
    "log_segment_bytes": ("transaction.state.log.segment.bytes", 1),
    "log_min_isr": ("transaction.state.log.min.isr", 1),
    "log_load_buffer_bytes": ("transaction.state.log.load.buffer.size", 1),
}

TXN_CONFIG_KEYS: tuple[str, ...] = tuple(key for key, _ in _KEYS.values())
"""Kafka's names of the keys :meth:`TxnConfig.from_properties` reads."""
