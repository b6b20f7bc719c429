"""Voter sets (KIP-853) and their history: every majority question is answered here.

A voter is a :class:`ReplicaKey` (replica id plus the directory id of its metadata log, so
a replica that lost its disk comes back as a different key) with the endpoints other
replicas reach it on and the kraft.version range it supports. kraft.version 0 quorums have
static voters with unknown directory ids.

The voter set in force is the latest one in the log, committed or not; a history keyed by
offset lets truncation revert uncommitted sets and snapshots compact old ones. Each change
may add or remove at most one voter, which is what keeps every majority of the old set
overlapping every majority of the new one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from pykraft.errors import FatalRaftError
from pykraft.features import KRAFT_VERSION_FEATURE, SUPPORTED_FEATURES
from pykraft.ids import ZERO_UUID
from pykraft.records.control import KRaftVersionFeature, Voter, VoterEndpoint, VotersRecord

T = TypeVar("T")

KRAFT_VERSION_0_ONLY = KRaftVersionFeature(0, 0)
SUPPORTED_KRAFT_VERSIONS = KRaftVersionFeature(*SUPPORTED_FEATURES[KRAFT_VERSION_FEATURE])


@dataclass(frozen=True, slots=True, order=True)
class ReplicaKey:
    """A replica: its id and (when known) its metadata directory id."""

    id: int
    directory_id: uuid.UUID | None = None

    @classmethod
    def of(cls, replica_id: int, directory_id: uuid.UUID | None) -> ReplicaKey:
        """A key from the wire, where the zero UUID means "no directory id"."""
        return cls(replica_id, None if directory_id == ZERO_UUID else directory_id)

    def __str__(self) -> str:
        return f"{self.id}" if self.directory_id is None else f"{self.id}/{self.directory_id}"


@dataclass(frozen=True, slots=True)
class VoterNode:
    key: ReplicaKey
    endpoints: tuple[VoterEndpoint, ...] = ()
    supported: KRaftVersionFeature = KRAFT_VERSION_0_ONLY

    def endpoint(self, listener: str) -> VoterEndpoint | None:
        return next((e for e in self.endpoints if e.name == listener), None)

    def same_as(self, other: VoterNode) -> bool:
        """Same replica, endpoints (in any order) and kraft.version range."""
        return (self.key == other.key and set(self.endpoints) == set(other.endpoints)
                and self.supported == other.supported)

    def supports(self, kraft_version: int) -> bool:
        return (self.supported.min_supported_version <= kraft_version
                <= self.supported.max_supported_version)


class VoterSet:
    """An immutable set of voters with distinct replica ids, iterated in id order."""

    __slots__ = ("_by_id", "ids")

    def __init__(self, nodes: Iterable[VoterNode] = ()) -> None:
        by_id: dict[int, VoterNode] = {}
        for node in sorted(nodes, key=lambda n: n.key.id):
            if node.key.id in by_id:
                raise FatalRaftError(f"voter set names replica id {node.key.id} twice")
            by_id[node.key.id] = node
        self._by_id = by_id
        self.ids = frozenset(by_id)

    @classmethod
    def static(cls, ids: Iterable[int],
               endpoints: Mapping[int, tuple[VoterEndpoint, ...]] | None = None) -> VoterSet:
        """kraft.version 0: ``controller.quorum.voters`` ids, without directory ids."""
        known = endpoints or {}
        return cls(VoterNode(ReplicaKey(i), known.get(i, ())) for i in ids)

    @classmethod
    def from_record(cls, record: VotersRecord) -> VoterSet:
        return cls(
            VoterNode(ReplicaKey.of(v.voter_id, v.voter_directory_id), v.endpoints,
                      v.kraft_version_feature)
            for v in record.voters
        )

    def to_record(self) -> VotersRecord:
        return VotersRecord(0, tuple(
            Voter(n.key.id, n.key.directory_id or ZERO_UUID, n.endpoints, n.supported)
            for n in self.nodes
        ))

    @property
    def nodes(self) -> tuple[VoterNode, ...]:
        return tuple(self._by_id.values())

    @property
    def keys(self) -> frozenset[ReplicaKey]:
        return frozenset(n.key for n in self._by_id.values())

    def node(self, node_id: int) -> VoterNode | None:
        return self._by_id.get(node_id)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._by_id

    def __iter__(self) -> Iterator[int]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VoterSet) and self._by_id == other._by_id

    def __hash__(self) -> int:
        return hash(tuple(self._by_id.values()))

    def __repr__(self) -> str:
        return f"VoterSet({', '.join(str(n.key) for n in self._by_id.values())})"

    def is_voter(self, key: ReplicaKey) -> bool:
        """``key`` is a voter: same id, and the same directory id when the set knows it."""
        node = self._by_id.get(key.id)
        if node is None:
            return False
        return node.key.directory_id is None or node.key.directory_id == key.directory_id

    @property
    def majority(self) -> int:
        return len(self._by_id) // 2 + 1

    def is_majority(self, members: Iterable[int]) -> bool:
        return bool(self._by_id) and len(self.ids.intersection(members)) >= self.majority

    def others(self, node_id: int) -> list[int]:
        return [voter for voter in self._by_id if voter != node_id]

    def is_only_voter(self, node_id: int) -> bool:
        return self.ids == {node_id}

    # -- single changes -------------------------------------------------------------------

    def with_added(self, node: VoterNode) -> VoterSet | None:
        """None when a voter with that id already exists."""
        if node.key.id in self._by_id:
            return None
        return VoterSet([*self._by_id.values(), node])

    def with_removed(self, key: ReplicaKey) -> VoterSet | None:
        """None when ``key`` is not a voter (same id and directory id)."""
        node = self._by_id.get(key.id)
        if node is None or node.key != key:
            return None
        return VoterSet(n for n in self._by_id.values() if n.key.id != key.id)

    def with_updated(self, node: VoterNode) -> VoterSet | None:
        """Replace endpoints and supported range of an existing voter; None if absent."""
        current = self._by_id.get(node.key.id)
        if current is None or current.key != node.key:
            return None
        return VoterSet(node if n.key.id == node.key.id else n for n in self._by_id.values())

    def has_overlapping_majority(self, other: VoterSet) -> bool:
        """At most one voter added or removed, so any two majorities share a voter."""
        mine, theirs = self.keys, other.keys
        return len(mine ^ theirs) <= 1


@dataclass(frozen=True, slots=True)
class _Entry(Generic[T]):
    offset: int
    value: T


class OffsetHistory(Generic[T]):
    """Values keyed by the offset of the record that set them (-1: before the log).

    Kafka's ``LogHistory``: entries are added in offset order, the newest ones are dropped
    on truncation and the oldest compacted when the log start moves past them.
    """

    def __init__(self) -> None:
        self._entries: list[_Entry[T]] = []

    def add_at(self, offset: int, value: T) -> None:
        last = self.last_entry()
        if last is not None and offset <= last[0]:
            raise FatalRaftError(f"history entry at offset {offset} after one at {last[0]}")
        self._entries.append(_Entry(offset, value))

    def last_entry(self) -> tuple[int, T] | None:
        return (self._entries[-1].offset, self._entries[-1].value) if self._entries else None

    def value_at_or_before(self, offset: int) -> T | None:
        for entry in reversed(self._entries):
            if entry.offset <= offset:
                return entry.value
        return None

    def entries_after(self, offset: int) -> list[tuple[int, T]]:
        return [(e.offset, e.value) for e in self._entries if e.offset > offset]

    def truncate_new_entries(self, end_offset: int) -> None:
        """Forget entries at or after ``end_offset`` (the log was truncated there)."""
        while self._entries and self._entries[-1].offset >= end_offset:
            self._entries.pop()

    def truncate_old_entries(self, start_offset: int) -> None:
        """Keep only the latest entry below ``start_offset`` and those after it."""
        below = [i for i, e in enumerate(self._entries) if e.offset < start_offset]
        if len(below) > 1:
            del self._entries[: below[-1]]

    def clear(self) -> None:
        self._entries.clear()


class VoterSetHistory(OffsetHistory[VoterSet]):
    """The voter-set history; refuses a change that is more than one voter at a time."""

    def add_at(self, offset: int, value: VoterSet) -> None:
        last = self.last_entry()
        if last is not None and not last[1].has_overlapping_majority(value):
            raise FatalRaftError(
                f"voter set {value!r} at offset {offset} changes more than one voter of "
                f"{last[1]!r} (offset {last[0]})"
            )
        super().add_at(offset, value)
