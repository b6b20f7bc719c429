"""Quorum timing and size settings, with Kafka's defaults and ``controller.quorum.*`` names.

The core never reads files or the environment: the runtime (or the simulator) builds one
:class:`QuorumConfig` and hands it in, so every timer the core uses is visible here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from pykraft.errors import ConfigError
from pykraft.records.control import VoterEndpoint

MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024
MAX_FETCH_SIZE_BYTES = 8 * 1024 * 1024
MAX_FETCH_WAIT_MS = 500
RETRY_BACKOFF_BASE_MS = 100
CHECK_QUORUM_TIMEOUT_FACTOR = 1.5
OBSERVER_SESSION_TIMEOUT_MS = 300_000
MAX_CAUGHT_UP_FETCH_AGE_MS = 3_600_000  # AddRaftVoter: the new voter fetched this recently
DEFAULT_LISTENER_NAME = "CONTROLLER"
SNAPSHOT_CLEAN_INTERVAL_MS = 60_000  # time-based snapshot retention is re-checked this often

# Kafka property name -> QuorumConfig field; the hard-coded Kafka constants have no key.
CONFIG_KEYS: Mapping[str, str] = {
    "controller.quorum.election.timeout.ms": "election_timeout_ms",
    "controller.quorum.fetch.timeout.ms": "fetch_timeout_ms",
    "controller.quorum.election.backoff.max.ms": "election_backoff_max_ms",
    "controller.quorum.append.linger.ms": "append_linger_ms",
    "controller.quorum.request.timeout.ms": "request_timeout_ms",
    "controller.quorum.retry.backoff.ms": "retry_backoff_ms",
    "metadata.max.retention.bytes": "snapshot_retention_bytes",
    "metadata.max.retention.ms": "snapshot_retention_ms",
}
_UNLIMITED_ALLOWED = ("snapshot_retention_bytes", "snapshot_retention_ms")


@dataclass(frozen=True, slots=True)
class QuorumConfig:
    """Every knob of the consensus core; defaults are Kafka's.

    ``voters`` is the static voter set (kraft.version 0), with ``voter_endpoints`` on the
    ``listener_name`` listener; it is empty for a dynamic quorum, whose voters come from the
    log and its snapshots. ``bootstrap_servers`` are opaque destinations (the driver maps
    them to addresses) an observer asks to find the leader, in place of the voters.
    ``local_listeners`` are this controller's own endpoints: a voter whose entry in the voter
    set differs sends UpdateRaftVoter with them, and an observer with ``auto_join`` (Kafka's
    ``controller.quorum.auto.join.enable``) asks the leader to add it as a voter.
    """

    voters: frozenset[int] = frozenset()
    voter_endpoints: tuple[tuple[int, str, int], ...] = ()
    listener_name: str = DEFAULT_LISTENER_NAME
    bootstrap_servers: tuple[int, ...] = ()
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    append_linger_ms: int = 25
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    fetch_max_wait_ms: int = MAX_FETCH_WAIT_MS
    max_batch_size_bytes: int = MAX_BATCH_SIZE_BYTES
    max_fetch_bytes: int = MAX_FETCH_SIZE_BYTES
    election_backoff_base_ms: int = RETRY_BACKOFF_BASE_MS
    snapshot_retention_bytes: int = -1
    snapshot_retention_ms: int = 604_800_000
    local_listeners: tuple[VoterEndpoint, ...] = ()
    auto_join: bool = False

    def __post_init__(self) -> None:
        if not self.voters and not self.bootstrap_servers:
            raise ConfigError("controller.quorum.voters: the static voter set is empty and "
                              "no bootstrap servers are given")
        if any(voter < 0 for voter in self.voters):
            raise ConfigError(f"controller.quorum.voters: negative voter id in {self.voters}")
        for item in fields(self):
            value = getattr(self, item.name)
            floor = -1 if item.name in _UNLIMITED_ALLOWED else 0
            if isinstance(value, int) and not isinstance(value, bool) and value < floor:
                raise ConfigError(f"{_key_of(item.name)} must not be negative, got {value}")
        for name in ("election_timeout_ms", "fetch_timeout_ms", "request_timeout_ms"):
            if getattr(self, name) == 0:
                raise ConfigError(f"{_key_of(name)} must be positive")

    @property
    def check_quorum_timeout_ms(self) -> int:
        """A leader that heard from no majority for this long resigns."""
        return int(self.fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)

    @property
    def update_voter_period_ms(self) -> int:
        """How often a follower retries UpdateRaftVoter (or auto-join): Kafka's 3 x fetch
        timeout."""
        return 3 * self.fetch_timeout_ms

    @property
    def begin_quorum_epoch_resend_ms(self) -> int:
        return self.fetch_timeout_ms // 2

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> QuorumConfig:
        """Read ``controller.quorum.voters`` (``id@host:port,...``) and the timing keys."""
        raw_voters = props.get("controller.quorum.voters", "")
        endpoints = parse_voters(raw_voters)
        voters = frozenset(voter for voter, _host, _port in endpoints)
        listener = props.get("controller.listener.names", DEFAULT_LISTENER_NAME).split(",")[0]
        values: dict[str, Any] = {}
        for key, name in CONFIG_KEYS.items():
            if key in props:
                try:
                    values[name] = int(props[key].strip())
                except ValueError:
                    raise ConfigError(f"{key}: expected an integer, got {props[key]!r}") from None
        auto_join = props.get("controller.quorum.auto.join.enable", "false").strip().lower()
        if auto_join not in ("true", "false"):
            raise ConfigError("controller.quorum.auto.join.enable: expected true or false, "
                              f"got {props['controller.quorum.auto.join.enable']!r}")
        return cls(voters=voters, voter_endpoints=tuple(endpoints),
                   listener_name=listener.strip() or DEFAULT_LISTENER_NAME,
                   auto_join=auto_join == "true", **values)


def parse_voters(text: str) -> list[tuple[int, str, int]]:
    """``id@host:port`` entries as (id, host, port); IPv6 hosts keep their brackets off."""
    voters: list[tuple[int, str, int]] = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        node, sep, endpoint = entry.partition("@")
        host, colon, port = endpoint.rpartition(":")
        if not sep or not node.strip().isdigit() or not colon or not port.isdigit():
            raise ConfigError(
                f"controller.quorum.voters: entry {entry!r} is not of the form id@host:port"
            )
        voters.append((int(node), host.strip("[]"), int(port)))
    ids = [voter for voter, _host, _port in voters]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"controller.quorum.voters: duplicate voter id in {text!r}")
    return voters


def _key_of(name: str) -> str:
    for key, field_name in CONFIG_KEYS.items():
        if field_name == name:
            return key
    return name
