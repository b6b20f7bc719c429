"""Hostile and malformed KRaft messages: boundary values in the integer fields.

A voter may be buggy or hostile: its messages may carry, in any integer field, the edges of
the field's wire type (0, -1, the minimum and maximum of int16, int32 or int64). Every
mutation here changes exactly one field of a well-formed message, so each refusal can be
traced to its field. The core's boundary tests send all of them and check that no node
stops. The simulator's ``hostile-voter`` fault sends only the malformed ones (negative
values, a type's maximum): a well-formed lie, such as a higher epoch naming a leader, is
Byzantine behaviour that no Raft replica can tell from the truth, so the simulator's safety
invariants could not hold under it.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

from pykraft.messages import schema_of
from pykraft.messages.wire import Primitive
from pykraft.raft import rpc
from pykraft.raft.core import RaftClient
from pykraft.raft.log import OffsetAndEpoch

M = TypeVar("M")
Path = tuple[str | int, ...]
_EDGES = (0, -1, -(2**15), 2**15 - 1, -(2**31), 2**31 - 1, -(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True)
class IntField:
    """One integer field of a message: where it is and what its wire type holds."""

    path: Path
    low: int
    high: int

    @property
    def label(self) -> str:
        return ".".join(str(step) for step in self.path)

    def values(self) -> tuple[int, ...]:
        """The boundary values the wire type can carry (its own minimum and maximum too)."""
        edges = {v for v in _EDGES if self.low <= v <= self.high} | {self.low, self.high}
        return tuple(sorted(edges))

    def malformed_values(self) -> tuple[int, ...]:
        """The values no honest replica sends here: -1 and the minimum (a signed type), and
        the maximum (an epoch no replica may reach), except in a leader id, where a large
        id is a claim about some replica rather than a malformation."""
        values = {v for v in (-1, self.low) if v >= self.low}
        if self.path[-1] != "leader_id":
            values.add(self.high)
        return tuple(sorted(values))


#: The integer wire types of the generated classes and what each holds.
_INT_TYPES = {"int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
              "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
              "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1)}


def _intervals(message: object) -> dict[str, tuple[int, int]]:
    """The integer fields of a generated message by name, with the bounds of their wire
    type (error codes left out: an error code names a case, it holds no quantity)."""
    return {f.attr: _INT_TYPES[f.type.name] for f in schema_of(type(message)).fields
            if isinstance(f.type, Primitive) and f.type.name in _INT_TYPES
            and f.attr != "error_code"}


def int_fields(message: object, prefix: Path = ()) -> list[IntField]:
    """Every integer field of a (nested) message, entries of arrays included."""
    found: list[IntField] = []
    intervals = _intervals(message)
    for field in dataclasses.fields(message):  # type: ignore[arg-type]
        value = getattr(message, field.name)
        interval = intervals.get(field.name)
        if interval is not None and value is not None:
            found.append(IntField((*prefix, field.name), *interval))
        elif dataclasses.is_dataclass(value):
            found += int_fields(value, (*prefix, field.name))
        elif isinstance(value, tuple):
            for index, item in enumerate(value):
                if dataclasses.is_dataclass(item):
                    found += int_fields(item, (*prefix, field.name, index))
    return found


def with_value(message: M, path: Path, value: int) -> M:
    """A copy of ``message`` with the field at ``path`` set to ``value``."""
    head, rest = path[0], path[1:]
    if isinstance(message, tuple):
        assert isinstance(head, int)
        items = list(message)
        items[head] = with_value(items[head], rest, value)
        return tuple(items)  # type: ignore[return-value]
    assert isinstance(head, str)
    inner = with_value(getattr(message, head), rest, value) if rest else value
    return dataclasses.replace(message, **{head: inner})  # type: ignore[type-var]


def mutations(message: M) -> Iterator[tuple[str, M]]:
    """(``field=value``, mutated message) for every integer field and boundary value."""
    for field in int_fields(message):
        for value in field.values():
            yield (f"{field.label}={value}",
                   with_value(message, field.path, value))


def random_malformation(message: M, rng: random.Random,
                        only: tuple[str, ...] | None = None) -> M:
    """One malformed value in one random integer field (among those whose last name is in
    ``only``, when given); the message unchanged if it has none."""
    fields = [f for f in int_fields(message) if only is None or f.path[-1] in only]
    if not fields:
        return message
    field = rng.choice(fields)
    return with_value(message, field.path, rng.choice(field.malformed_values()))


#: The fields of a response a hostile voter's answers may garble in the simulator: the
#: quorum view every response carries. Garbling its data (high watermark, records) with
#: well-formed values would be a lying leader, which no Raft replica can tell from an honest
#: one.
RESPONSE_HEADER_FIELDS = ("leader_id", "leader_epoch")


def request_templates(sender: int, target: RaftClient) -> list[rpc.RaftRequest]:
    """Well-formed requests from voter ``sender`` to ``target`` that change nothing as they
    are (a vote that is not up to date, the known leader, stale epochs, refused voter
    changes): any effect of a mutation is the mutated field's."""
    epoch, cluster_id = target.epoch, target.cluster_id
    stale = max(epoch - 1, 0)
    stranger = uuid.UUID(int=sender + 1)  # no replica's directory id
    listeners = [("CONTROLLER", f"node-{sender}", 9093)]
    templates: list[rpc.RaftRequest] = [
        rpc.vote_request(cluster_id, target.node_id, epoch=epoch, local_id=sender,
                         last=OffsetAndEpoch(0, 0), pre_vote=False),
        rpc.end_quorum_request(cluster_id, sender, stale, (target.local_key,)),
        rpc.fetch_request(cluster_id, sender, epoch=epoch, position=OffsetAndEpoch(0, 0),
                          high_watermark=None, max_wait_ms=0, max_bytes=1024),
        rpc.fetch_snapshot_request(cluster_id, sender, epoch=epoch,
                                   snapshot_id=OffsetAndEpoch(0, 0), position=0,
                                   max_bytes=1024),
        rpc.describe_quorum_request(),
        rpc.add_voter_request(cluster_id, sender, stranger, listeners, 1000),
        rpc.remove_voter_request(cluster_id, sender, stranger),
        rpc.update_voter_request(cluster_id, stale, sender, stranger, listeners, (0, 1)),
    ]
    leader = target.leader_and_epoch.leader_id
    if leader is not None:
        templates.append(rpc.begin_quorum_request(cluster_id, target.node_id, leader, epoch))
    return templates
