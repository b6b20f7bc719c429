"""The events of one chaos run, and their JSON-lines form.

A history is what the clients and the final inspection saw, in the order it was recorded:
each producer's sends and their acknowledgements (partition and offset, or an error), each
consumer's reads, the consumer group's reads, offset commits, rebalances and committed
offsets (sampled, and once more after the group drained), the faults as they began and
ended, the leaders, ISRs and active controller sampled as the run went, the controllers'
fences of brokers on refused listeners (from their logs), the transactional producers'
transactions as they ended and what ``read_committed`` consumers read of them, and at the
end the committed log of every partition (read through the cluster), every replica's log
(read from its disk) and the transactions' topic as a last ``read_committed`` read saw it.
Values are the producers' unique ids (``<producer>-<sequence>``), so the checker needs no
knowledge of the workload. Pure: :func:`encode` and :func:`decode` map events to lines and
back; the runner owns the file.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from pykraft.errors import PyKraftError


class HistoryError(PyKraftError):
    """A history line that is not JSON or not an event of a known type."""


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The first line: the seed and the schedule drawn from it, so a run can be replayed."""

    seed: int
    schedule: list[dict[str, Any]]
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Send:
    t: int
    producer: str
    value: str
    partition: int


#: An acknowledgement without an offset: librdkafka reports a batch delivered when a later
#: batch of the same idempotent producer is, though the batch's own answer was lost.
UNKNOWN_OFFSET = -1


@dataclass(frozen=True, slots=True)
class Ack:
    """The producer's delivery report: ``offset`` (or :data:`UNKNOWN_OFFSET`) when
    acknowledged, ``error`` otherwise."""

    t: int
    producer: str
    value: str
    partition: int
    offset: int = UNKNOWN_OFFSET
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Read:
    """A record a consumer read, with the high watermark its fetch reported (-1: unknown)."""

    t: int
    consumer: str
    partition: int
    offset: int
    value: str | None
    hw: int = -1


@dataclass(frozen=True, slots=True)
class FaultEvent:
    """A fault began (``phase`` "start") or was healed ("end"); ``target`` names the node(s)."""

    t: int
    kind: str
    target: str
    phase: str


@dataclass(frozen=True, slots=True)
class RefusalFence:
    """An active controller fenced broker ``broker`` (registration epoch ``epoch``) at ``t``
    because its listeners all refused connections (pykraft's fast failover, beyond Kafka),
    as the controller's log said."""

    t: int
    broker: int
    epoch: int


@dataclass(frozen=True, slots=True)
class Observed:
    """What the cluster said of itself at ``t`` (sampled about once a second), so a stall
    can be told apart from an outage: each partition's leader (-1: none) and ISR as a
    broker's Metadata gave them (both empty when no broker answered), the active
    controller (-1: no controller answered) and the nodes down: not accepting connections
    (killed, stopped, still starting) or paused."""

    t: int
    leaders: list[int]
    isr: list[list[int]]
    controller: int = -1
    down: list[int] = field(default_factory=list)  # nodes not listening, or paused


@dataclass(frozen=True, slots=True)
class Committed:
    """A partition's committed log as a final read through the cluster saw it: the value at
    each offset from ``start`` up to the high watermark."""

    partition: int
    start: int
    values: list[str | None]


@dataclass(frozen=True, slots=True)
class ReplicaLog:
    """One replica's log from its disk after the run, with its checkpointed high watermark
    and, per offset, the idempotent producer session (``<producer id>.<epoch>``, None for
    a gap or a record without producer id) that wrote it."""

    partition: int
    replica: int
    start: int
    values: list[str | None]
    hw: int = -1
    sessions: list[str | None] = field(default_factory=list)

    def session_at(self, offset: int) -> str | None:
        index = offset - self.start
        return self.sessions[index] if 0 <= index < len(self.sessions) else None


@dataclass(frozen=True, slots=True)
class GroupRead:
    """A record a member of the consumer group read (``member``: its name and generation)."""

    t: int
    member: str
    partition: int
    offset: int
    value: str | None


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """The outcome of a member's offset commit for one partition: ``offset`` (the next to
    read) acknowledged when ``error`` is None. ``t`` is when the answer (or the error)
    came, so a fetch begun after it must see the offset or a later one."""

    t: int
    member: str
    partition: int
    offset: int
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Rebalance:
    """A member's partitions assigned, revoked or lost (``kind``), as its client said."""

    t: int
    member: str
    kind: str
    partitions: list[int]


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    """The group's committed offsets as an OffsetFetch begun at ``t`` answered (-1: none
    for that partition); ``final`` for the one taken after the group drained."""

    t: int
    offsets: list[int]
    final: bool = False


@dataclass(frozen=True, slots=True)
class TxnEnd:
    """A transactional producer's transaction as it ended (``transaction``: its unique
    name, ``<producer>.<generation>-<number>``): ``outcome`` ``commit`` or ``abort`` when
    the client said so, ``unknown`` when its end failed without a verdict (the producer was
    lost, or fenced, mid-commit); ``values`` are its records as ``[partition, value]``
    pairs."""

    t: int
    transaction: str
    outcome: str
    values: list[list[Any]]


@dataclass(frozen=True, slots=True)
class TxnRead:
    """A record a ``read_committed`` consumer of the transactions' topic read."""

    t: int
    consumer: str
    partition: int
    offset: int
    value: str | None


@dataclass(frozen=True, slots=True)
class TxnLog:
    """A partition of the transactions' topic as a final ``read_committed`` read saw it,
    once every transaction had ended: its values in offset order."""

    partition: int
    values: list[str | None]


@dataclass(frozen=True, slots=True)
class CtpResult:
    """The consume-transform-produce worker's end: the group's committed offsets of the
    run's topic (fetched stable; -1: none), the output topic per partition as a
    ``read_committed`` read saw it, and how many client generations the worker used (and
    left behind hung in a client call)."""

    t: int
    offsets: list[int]
    output: list[list[str | None]]
    generations: int = 1
    hung: int = 0  # generations left behind in a client call past its timeout


def value_at(log: Committed | ReplicaLog | None, offset: int) -> str | None:
    """The value ``log`` holds at ``offset`` (None: a gap, or outside the log)."""
    if log is None or not log.start <= offset < log.start + len(log.values):
        return None
    return log.values[offset - log.start]


def value_places(committed: dict[int, Committed]) -> dict[tuple[int, str | None], list[int]]:
    """(partition, value) -> the offsets where the committed log holds it."""
    places: dict[tuple[int, str | None], list[int]] = {}
    for partition, log in committed.items():
        for index, value in enumerate(log.values):
            places.setdefault((partition, value), []).append(log.start + index)
    return places


Event = (RunInfo | Send | Ack | Read | FaultEvent | RefusalFence | Observed | Committed
         | ReplicaLog | GroupRead | OffsetCommit | Rebalance | GroupOffsets | TxnEnd
         | TxnRead | TxnLog | CtpResult)

_TYPES: dict[str, type[Any]] = {
    "run": RunInfo, "send": Send, "ack": Ack, "read": Read, "fault": FaultEvent,
    "refusal-fence": RefusalFence,
    "observed": Observed, "committed": Committed, "replica": ReplicaLog,
    "group-read": GroupRead, "offset-commit": OffsetCommit, "rebalance": Rebalance,
    "group-offsets": GroupOffsets, "txn-end": TxnEnd, "txn-read": TxnRead, "txn-log": TxnLog,
    "ctp": CtpResult,
}
_NAMES = {cls: name for name, cls in _TYPES.items()}


def encode(event: Event) -> str:
    """One JSON line (no newline) with the event's type first."""
    return json.dumps({"type": _NAMES[type(event)], **asdict(event)}, separators=(",", ":"))


def decode(line: str) -> Event:
    try:
        row = json.loads(line)
        cls = _TYPES[row.pop("type")]
        event: Event = cls(**row)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HistoryError(f"not a history event: {line[:200]!r} ({exc})") from None
    return event


def decode_lines(lines: list[str]) -> list[Event]:
    """Every non-blank line's event; a torn last line (the run was killed mid-write) is
    dropped, damage anywhere else is a HistoryError."""
    rows = [line for line in lines if line.strip()]
    events = []
    for index, line in enumerate(rows):
        try:
            events.append(decode(line))
        except HistoryError:
            if index != len(rows) - 1:
                raise
    return events
