"""What a chaos history says about the consumer group: at-least-once, and no commit lost.

Against the committed log of each partition and the group's final committed offsets (the
fetch taken after the group drained, else the last sample):

* missed: an acknowledged value in the committed log below the group's final committed
  offset of its partition that no member read there (the group moved past it unread);
* commits lost: a commit of offset O acknowledged, then a committed offset below O fetched
  later (a fetch begun after the acknowledgement) that no commit of that lower offset made
  after it explains. Such a commit is counted apart, as ``commits_regressed``: a member
  committing an older position (at-least-once allows it: the group reads again);
* reads uncommitted: a member read a value the committed log does not hold at that offset.

Duplicates (a record the group read more than once), rebalances, commits acknowledged and
failed, and the lag left after the drain are reported, not flagged. Pure: events in,
figures out.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pykraft.chaos.history import (
    Ack,
    Committed,
    Event,
    GroupOffsets,
    GroupRead,
    OffsetCommit,
    Rebalance,
    value_at,
    value_places,
)

#: A Rebalance's kind when partitions were handed to a member.
ASSIGNED = "assigned"


@dataclass(slots=True)
class GroupFigures:
    reads: int = 0
    consumed: int = 0  # acknowledged values the group read
    duplicates: int = 0
    missed: int = 0
    commits_lost: int = 0
    reads_uncommitted: int = 0
    commits_acked: int = 0
    commits_failed: int = 0
    commits_regressed: int = 0
    rebalances: int = 0
    lag: int = 0
    final_offsets: list[int] | None = None

    @property
    def anomalies(self) -> int:
        return self.missed + self.commits_lost + self.reads_uncommitted

    def as_dict(self) -> dict[str, object]:
        return {"reads": self.reads, "consumed": self.consumed, "duplicates": self.duplicates,
                "missed": self.missed, "commits_lost": self.commits_lost,
                "reads_uncommitted": self.reads_uncommitted,
                "commits_acked": self.commits_acked, "commits_failed": self.commits_failed,
                "commits_regressed": self.commits_regressed, "rebalances": self.rebalances,
                "lag": self.lag, "final_offsets": self.final_offsets}


def check_group(history: Sequence[Event], committed: dict[int, Committed],
                acked: dict[str, Ack], note: Callable[[str], None]) -> GroupFigures:
    """The group's figures; ``acked``: each acknowledged value's acknowledgement."""
    figures = GroupFigures()
    reads = [e for e in history if isinstance(e, GroupRead)]
    figures.reads = len(reads)
    read = Counter((e.partition, e.offset, e.value) for e in reads)
    figures.duplicates = sum(read.values()) - len(read)
    figures.rebalances = sum(1 for e in history
                             if isinstance(e, Rebalance) and e.kind == ASSIGNED and e.partitions)
    places = value_places(committed)
    figures.consumed = sum(1 for value, ack in acked.items()
                           if any((ack.partition, o, value) in read
                                  for o in places.get((ack.partition, value), [])))
    for (partition, offset, value) in read:
        if value_at(committed.get(partition), offset) != value:
            figures.reads_uncommitted += 1
            note(f"group read uncommitted: {value} at {partition}@{offset}, not in the "
                 "committed log there")
    _check_commits(history, figures, note)
    samples = [e for e in history if isinstance(e, GroupOffsets)]
    final = next((e for e in samples if e.final), samples[-1] if samples else None)
    if final is None:
        return figures
    figures.final_offsets = list(final.offsets)
    for value, ack in acked.items():
        below = [o for o in places.get((ack.partition, value), [])
                 if o < _offset(final, ack.partition)]
        if below and not any((ack.partition, o, value) in read for o in below):
            figures.missed += 1
            note(f"missed by the group: {value} at {ack.partition}@{below[0]}, below its "
                 f"final committed offset {_offset(final, ack.partition)}")
    figures.lag = sum(max(0, log.start + len(log.values) - max(_offset(final, p), log.start))
                      for p, log in committed.items())
    return figures


def _check_commits(history: Sequence[Event], figures: GroupFigures,
                   note: Callable[[str], None]) -> None:
    """Each fetched offset against the highest commit acknowledged before the fetch began
    (a fetch's line is written when it ends, after acknowledgements that came meanwhile)."""
    times: dict[int, list[int]] = {}  # per partition, each acknowledgement's t, in order
    highest: dict[int, list[OffsetCommit]] = {}  # and the highest acknowledged up to it
    flagged: set[tuple[int, int]] = set()
    commits = [e for e in history if isinstance(e, OffsetCommit)]
    for event in history:
        if isinstance(event, OffsetCommit):
            if event.error is not None:
                figures.commits_failed += 1
                continue
            figures.commits_acked += 1
            best = highest.setdefault(event.partition, [])
            best.append(event if not best or event.offset > best[-1].offset else best[-1])
            at = times.setdefault(event.partition, [])
            at.append(max(event.t, at[-1]) if at else event.t)  # threads race to the file
        elif isinstance(event, GroupOffsets):
            for partition, best in highest.items():
                before = bisect_left(times[partition], event.t)
                if not before:
                    continue
                ack = best[before - 1]
                fetched = _offset(event, partition)
                if fetched >= ack.offset or (partition, ack.offset) in flagged:
                    continue
                flagged.add((partition, ack.offset))
                if any(c.partition == partition and c.offset == fetched and c.t > ack.t
                       for c in commits):
                    figures.commits_regressed += 1
                    continue
                figures.commits_lost += 1
                note(f"commit lost: {ack.member} committed {partition}@{ack.offset} "
                     f"(acknowledged at {ack.t} ms), the group's offset at {event.t} ms "
                     f"was {fetched}")


def _offset(sample: GroupOffsets, partition: int) -> int:
    return sample.offsets[partition] if partition < len(sample.offsets) else -1
