"""What a chaos history says about the cluster's guarantees, as figures.

The committed log of each partition (read through the cluster after the faults healed) is
the reference. Against it:

* lost: an acknowledged value that is not at its acknowledged offset (absent, or moved),
  or for an acknowledgement without an offset, absent from its partition;
* duplicated: a value present more than once within one producer session (an idempotent
  producer's retry written twice). Copies written by two epochs of one producer id are
  counted apart, as ``resent_after_epoch_bump``: librdkafka bumps an idempotent producer's
  epoch when messages time out and resends what it never heard back about, so those copies
  are the client's (librdkafka issue 4953), not a broker's failure to deduplicate;
* reordered: within one partition, a producer's values out of its send order;
* reads past the high watermark: a consumer read a value that the committed log does not
  hold at that offset (it saw data that was later truncated away);
* divergent replicas: a replica whose log differs from the committed log on their common
  offsets (a replica may lag, never disagree);
* phantom: a committed value no producer sent;
* false fences: a broker fenced on refused listeners (pykraft's fast failover) while its
  node ran, i.e. outside every kill or restart of it (with :data:`FENCE_SLACK_MS` after
  one); the fences that were right count apart, as ``fenced_on_refusal``;
* the consumer group's figures (missed, commits lost, reads uncommitted and the
  informative counts), see :mod:`.group_checks`.

Sends that failed or were never answered may or may not be in the log: Kafka promises
nothing for them, so they count nowhere but in ``failed``. The longest produce gaps (no write
acknowledged on any partition) are spelled out with what explains them (:class:`Gap`).
Pure: events in, figures out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from pykraft.chaos.group_checks import GroupFigures, check_group
from pykraft.chaos.history import (
    UNKNOWN_OFFSET,
    Ack,
    Committed,
    Event,
    FaultEvent,
    Observed,
    Read,
    RefusalFence,
    ReplicaLog,
    RunInfo,
    Send,
    value_at,
    value_places,
)
from pykraft.chaos.schedule import KILL, KILL_ACTIVE_CONTROLLER, RESTART
from pykraft.chaos.txn_checks import TxnFigures, check_copies, check_transactions

#: A FaultEvent's phase when its target could not be resolved (no leader known, ...).
SKIPPED = "skipped"
#: How many anomalies the report spells out; the counts cover every one.
EXAMPLES = 20
#: How many of the longest produce gaps the report explains.
GAPS = 3
#: A fence on refusal this long after its node's kill or stop ended still counts as one
#: of it: the node's door opened as a probe round was under way.
FENCE_SLACK_MS = 1000
#: The faults during which a node is down (its listeners refuse).
_DOWN_KINDS = frozenset({KILL, KILL_ACTIVE_CONTROLLER, RESTART})


@dataclass(frozen=True, slots=True)
class Gap:
    """A stretch from ``start`` to ``end`` (ms) with no write acknowledged on any partition,
    and what went on in it, so its cause can be read off the figures: each partition's own
    silence around it, the faults in force (begun before its end, healed after its start)
    and those skipped, the send errors, and from the cluster's sampled view the nodes down,
    each partition's leader and ISR and the active controller, as they changed.
    ``writable_ms``: per partition, how long the samples showed it able to commit acks=all
    writes: a live leader, every ISR member live and at least min.insync.replicas of them
    (empty when the history has no samples). A dead ISR member holds commits back until the
    ISR drops it, as in Kafka. A partition writable throughout but silent was slow; one that
    was not could not take acks=all writes, as Kafka could not either."""

    start: int
    end: int
    silent: dict[int, tuple[int, int]]
    faults: list[str]
    errors: dict[str, int]
    down: list[str]
    leaders: dict[int, list[str]]
    controllers: list[str]
    writable_ms: dict[int, int]

    def as_dict(self) -> dict[str, object]:
        return {"from_ms": self.start, "to_ms": self.end, "ms": self.end - self.start,
                "partitions_silent_ms": {str(p): list(span)
                                         for p, span in sorted(self.silent.items())},
                "faults": list(self.faults), "errors": dict(sorted(self.errors.items())),
                "nodes_down": list(self.down),
                "leader_isr": {str(p): list(v) for p, v in sorted(self.leaders.items())},
                "controller": list(self.controllers),
                "writable_ms": {str(p): ms for p, ms in sorted(self.writable_ms.items())}}


@dataclass(slots=True)
class Figures:
    acknowledged: int = 0
    failed: int = 0
    lost: int = 0
    duplicated: int = 0
    resent_after_epoch_bump: int = 0
    reordered: int = 0
    reads_past_hw: int = 0
    divergent_replicas: int = 0
    phantom: int = 0
    false_fences: int = 0
    fenced_on_refusal: int = 0
    reads: int = 0
    longest_produce_gap_ms: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    faults_skipped: int = 0
    examples: list[str] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    group: GroupFigures = field(default_factory=GroupFigures)
    txn: TxnFigures = field(default_factory=TxnFigures)

    @property
    def anomalies(self) -> int:
        return (self.lost + self.duplicated + self.reordered + self.reads_past_hw
                + self.divergent_replicas + self.phantom + self.false_fences
                + self.group.anomalies + self.txn.anomalies)

    def note(self, text: str) -> None:
        if len(self.examples) < EXAMPLES:
            self.examples.append(text)

    def as_dict(self) -> dict[str, object]:
        return {"acknowledged": self.acknowledged, "failed": self.failed, "lost": self.lost,
                "duplicated": self.duplicated,
                "resent_after_epoch_bump": self.resent_after_epoch_bump,
                "reordered": self.reordered,
                "reads_past_hw": self.reads_past_hw,
                "divergent_replicas": self.divergent_replicas, "phantom": self.phantom,
                "false_fences": self.false_fences,
                "fenced_on_refusal": self.fenced_on_refusal,
                "reads": self.reads, "longest_produce_gap_ms": self.longest_produce_gap_ms,
                "faults": dict(sorted(self.faults.items())),
                "faults_skipped": self.faults_skipped, "anomalies": self.anomalies,
                "group": self.group.as_dict(), "transactions": self.txn.as_dict(),
                "examples": list(self.examples),
                "longest_produce_gaps": [gap.as_dict() for gap in self.gaps]}


@dataclass(frozen=True, slots=True)
class _Origin:
    """Who sent a value, and its place in that producer's send order."""

    producer: str
    index: int


def check(events: Iterable[Event]) -> Figures:
    history = list(events)
    figures = Figures()
    origins = _origins(history)
    committed = {e.partition: e for e in history if isinstance(e, Committed)}
    acked = _acked(history)
    _check_acks(history, committed, acked, figures)
    replicas = [e for e in history if isinstance(e, ReplicaLog)]
    _check_log(committed, origins, replicas, figures)
    _check_reads(history, committed, figures)
    _check_replicas(history, committed, figures)
    figures.group = check_group(history, committed, acked, figures.note)
    figures.txn = check_transactions(history, figures.note)
    check_copies(history, committed, figures.txn, figures.note)
    _check_fences(history, figures)
    figures.faults = dict(Counter(e.kind for e in history
                                  if isinstance(e, FaultEvent) and e.phase == "start"))
    figures.faults_skipped = sum(1 for e in history
                                 if isinstance(e, FaultEvent) and e.phase == SKIPPED)
    times = sorted(e.t for e in history if isinstance(e, Ack) and e.error is None)
    figures.longest_produce_gap_ms = max((b - a for a, b in pairwise(times)), default=0)
    windows = sorted(pairwise(times), key=lambda w: w[0] - w[1])[:GAPS]
    figures.gaps = [_gap(history, start, end) for start, end in windows if end > start]
    return figures


def _origins(history: Sequence[Event]) -> dict[str, _Origin]:
    counts: Counter[str] = Counter()
    origins = {}
    for event in history:
        if isinstance(event, Send) and event.value not in origins:
            origins[event.value] = _Origin(event.producer, counts[event.producer])
            counts[event.producer] += 1
    return origins


def _acked(history: Sequence[Event]) -> dict[str, Ack]:
    """Each acknowledged value's first acknowledgement."""
    acked: dict[str, Ack] = {}
    for event in history:
        if isinstance(event, Ack) and event.error is None:
            acked.setdefault(event.value, event)
    return acked


def _check_acks(history: Sequence[Event], committed: dict[int, Committed],
                acked: dict[str, Ack], figures: Figures) -> None:
    failed = {e.value for e in history if isinstance(e, Ack) and e.error is not None}
    figures.acknowledged = len(acked)
    figures.failed = len(failed - acked.keys())
    offsets = value_places(committed)
    for value, ack in acked.items():
        where = offsets.get((ack.partition, value), [])
        if ack.offset in where or (ack.offset == UNKNOWN_OFFSET and where):
            continue
        figures.lost += 1
        figures.note(f"lost: {value} acknowledged at {ack.partition}@{ack.offset}, "
                     + (f"committed at {ack.partition}@{where[0]}" if where
                        else "absent from the committed log"))


def _check_log(committed: dict[int, Committed], origins: dict[str, _Origin],
               replicas: list[ReplicaLog], figures: Figures) -> None:
    seen: dict[str, tuple[int, int]] = {}
    for partition, log in sorted(committed.items()):
        latest: dict[str, int] = {}
        for position, value in enumerate(log.values):
            if value is None:
                continue
            offset = log.start + position
            where = f"{partition}@{offset}"
            if value in seen:
                sessions = _sessions(replicas, seen[value], (partition, offset))
                first = f"{seen[value][0]}@{seen[value][1]}"
                if _epoch_bumped(sessions):
                    figures.resent_after_epoch_bump += 1
                else:
                    figures.duplicated += 1
                    figures.note(f"duplicated: {value} at {first} and {where} "
                                 f"(producer sessions {' and '.join(map(str, sessions))})")
                continue
            seen[value] = (partition, offset)
            origin = origins.get(value)
            if origin is None:
                figures.phantom += 1
                figures.note(f"phantom: {value!r} at {where} was never sent")
                continue
            before = latest.get(origin.producer, -1)
            if origin.index < before:
                figures.reordered += 1
                figures.note(f"reordered: {value} at {where} after a later send of "
                             f"{origin.producer}")
            latest[origin.producer] = max(before, origin.index)


def _sessions(replicas: list[ReplicaLog], *places: tuple[int, int]) -> list[str | None]:
    """The producer session that wrote each (partition, offset), as any replica knows it."""
    return [next((session for r in replicas if r.partition == partition
                  and (session := r.session_at(offset)) is not None), None)
            for partition, offset in places]


def _epoch_bumped(sessions: list[str | None]) -> bool:
    """Two known sessions of one producer id with different epochs."""
    first, second = sessions
    if first is None or second is None:
        return False
    (pid, epoch), (pid2, epoch2) = first.split("."), second.split(".")
    return pid == pid2 and epoch != epoch2


def _check_reads(history: Sequence[Event], committed: dict[int, Committed],
                 figures: Figures) -> None:
    flagged: set[tuple[int, int, str | None]] = set()
    for event in history:
        if not isinstance(event, Read):
            continue
        figures.reads += 1
        key = (event.partition, event.offset, event.value)
        if (value_at(committed.get(event.partition), event.offset) == event.value
                or key in flagged):
            continue
        flagged.add(key)
        figures.reads_past_hw += 1
        figures.note(f"read past the high watermark: {event.consumer} read {event.value} at "
                     f"{event.partition}@{event.offset} (hw {event.hw}), not in the "
                     "committed log there")


def _check_replicas(history: Sequence[Event], committed: dict[int, Committed],
                    figures: Figures) -> None:
    for event in history:
        if not isinstance(event, ReplicaLog):
            continue
        log = committed.get(event.partition)
        if log is None:
            continue
        first = max(event.start, log.start)
        last = min(event.start + len(event.values), log.start + len(log.values))
        differs = next((o for o in range(first, last)
                        if value_at(event, o) != value_at(log, o)), None)
        if differs is not None:
            figures.divergent_replicas += 1
            figures.note(f"divergent replica: broker {event.replica} holds "
                         f"{value_at(event, differs)} at {event.partition}@{differs}, the "
                         f"committed log {value_at(log, differs)}")


def _check_fences(history: Sequence[Event], figures: Figures) -> None:
    down: dict[int, list[tuple[int, float]]] = {}
    for start, end in _windows(history, _DOWN_KINDS):
        down.setdefault(_node(start.target), []).append((start.t, end))
    for fence in (e for e in history if isinstance(e, RefusalFence)):
        if any(begin <= fence.t <= end + FENCE_SLACK_MS
               for begin, end in down.get(fence.broker, [])):
            figures.fenced_on_refusal += 1
        else:
            figures.false_fences += 1
            figures.note(f"broker {fence.broker} (epoch {fence.epoch}) fenced on refused "
                         f"listeners at {fence.t / 1000:.1f} s while its node ran")


def _windows(history: Sequence[Event],
             kinds: frozenset[str]) -> list[tuple[FaultEvent, float]]:
    """Each fault of ``kinds`` that began, with when it was healed (infinity: never)."""
    faults = [e for e in history if isinstance(e, FaultEvent) and e.kind in kinds]
    return [(event, next((e.t for e in faults[index + 1:] if e.phase == "end"
                          and e.target == event.target), float("inf")))
            for index, event in enumerate(faults) if event.phase == "start"]


def _node(target: str) -> int:
    """The node a one-node fault's target names: ``node:1001`` or ``leader:0=node:1001``."""
    return int(target.rpartition("=")[2].removeprefix("node:"))


def _gap(history: Sequence[Event], start: int, end: int) -> Gap:
    acks = [e for e in history if isinstance(e, Ack)]
    silent = {}
    for partition in sorted({a.partition for a in acks}):
        times = [a.t for a in acks if a.partition == partition and a.error is None]
        silent[partition] = (max((t for t in times if t <= start), default=0),
                             min((t for t in times if t >= end), default=end))
    errors = Counter(a.error for a in acks if a.error is not None and start <= a.t <= end)
    samples = [e for e in history if isinstance(e, Observed)]
    in_force = [e for e in samples if e.t <= start][-1:] + [
        e for e in samples if start < e.t <= end]
    leaders = {p: _changes([(e.t, f"leader {e.leaders[p]} isr {e.isr[p]}")
                            for e in in_force if len(e.leaders) > p])
               for p in silent}
    controllers = _changes([(e.t, f"controller {e.controller}") for e in in_force])
    down = _changes([(e.t, f"down {e.down}") for e in in_force])
    return Gap(start, end, silent, _faults_in(history, start, end), dict(errors), down,
               leaders, controllers, _writable(in_force, _min_insync(history), start, end))


def _faults_in(history: Sequence[Event], start: int, end: int) -> list[str]:
    """The faults begun before ``end`` and healed after ``start`` (or never), and the ones
    skipped in between, in the order they began."""
    faults = [e for e in history if isinstance(e, FaultEvent)]
    found = []
    for index, event in enumerate(faults):
        if event.t > end:
            break
        if event.phase == SKIPPED and event.t >= start:
            found.append(f"{event.t / 1000:.1f} s {event.kind} {event.target} skipped")
        elif event.phase == "start":
            healed = next((e.t for e in faults[index + 1:] if e.phase == "end"
                           and (e.kind, e.target) == (event.kind, event.target)), None)
            if healed is None or healed >= start:
                until = "" if healed is None else f"-{healed / 1000:.1f}"
                found.append(f"{event.t / 1000:.1f}{until} s {event.kind} {event.target}")
    return found


def _changes(states: list[tuple[int, str]]) -> list[str]:
    """``<seconds> s: <state>`` for the first state and each that differs from the last."""
    shown = []
    for index, (t, state) in enumerate(states):
        if index == 0 or state != states[index - 1][1]:
            shown.append(f"{t / 1000:.1f} s: {state}")
    return shown


def _min_insync(history: Sequence[Event]) -> int:
    info = next((e for e in history if isinstance(e, RunInfo)), None)
    return int(info.settings.get("min_insync_replicas", 1)) if info else 1


def _writable(samples: list[Observed], min_insync: int, start: int, end: int) -> dict[int, int]:
    """Per partition, the ms of [start, end] whose latest sample showed a live leader and a
    live ISR of at least ``min_insync``."""
    writable: Counter[int] = Counter()
    for index, sample in enumerate(samples):
        since = max(start, sample.t)
        until = samples[index + 1].t if index + 1 < len(samples) else end
        for partition, leader in enumerate(sample.leaders):
            writable[partition] += 0
            isr = sample.isr[partition]
            if (leader in isr and not set(isr) & set(sample.down)
                    and len(isr) >= min_insync):
                writable[partition] += max(0, min(until, end) - since)
    return dict(writable)
