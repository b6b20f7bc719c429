"""The checker's consumer-group figures: synthetic histories, each with one kind of group
anomaly, yield exactly that figure; a clean one yields zeros; what at-least-once allows
(duplicates, a member committing an older offset) is counted, never flagged."""

from __future__ import annotations

from pykraft.chaos.checker import Figures, check
from pykraft.chaos.history import (
    Ack,
    Committed,
    Event,
    GroupOffsets,
    GroupRead,
    OffsetCommit,
    Rebalance,
    Send,
)

GROUP_ANOMALIES = ("missed", "commits_lost", "reads_uncommitted")
#: Two partitions of four acknowledged values each.
LOGS = {0: [f"p0-{i}" for i in range(0, 8, 2)], 1: [f"p0-{i}" for i in range(1, 8, 2)]}


def clean() -> list[Event]:
    """Every value sent, acknowledged, read by one of two members, committed at the end."""
    events: list[Event] = []
    for partition, log in LOGS.items():
        for offset, value in enumerate(log):
            events += [Send(offset, "p0", value, partition),
                       Ack(10 + offset, "p0", value, partition, offset)]
    events += [Rebalance(20, "g0.0", "assigned", [0]), Rebalance(20, "g1.0", "assigned", [1]),
               Rebalance(21, "g2.0", "assigned", [])]
    for partition, log in LOGS.items():
        member = f"g{partition}.0"
        events += [GroupRead(30 + o, member, partition, o, v) for o, v in enumerate(log)]
        events += [OffsetCommit(40, member, partition, 2),
                   OffsetCommit(50, member, partition, 4)]
    events += [GroupOffsets(45, [2, 2]), GroupOffsets(60, [4, 4])]
    events += [Committed(p, 0, list(log)) for p, log in LOGS.items()]
    return [*events, GroupOffsets(70, [4, 4], final=True)]


def only(figures: Figures, name: str | None) -> None:
    found = {a: getattr(figures.group, a) for a in GROUP_ANOMALIES}
    assert found == {a: 1 if a == name else 0 for a in GROUP_ANOMALIES}, figures.examples
    assert figures.anomalies == (0 if name is None else 1)


def test_a_clean_group_has_no_anomaly_and_its_counts() -> None:
    figures = check(clean())
    only(figures, None)
    group = figures.group
    assert (group.reads, group.consumed, group.duplicates) == (8, 8, 0)
    assert (group.commits_acked, group.commits_failed, group.commits_regressed) == (4, 0, 0)
    assert (group.rebalances, group.lag, group.final_offsets) == (2, 0, [4, 4])


def test_a_history_without_a_group_has_no_group_figures() -> None:
    figures = check([e for e in clean() if not isinstance(
        e, GroupRead | OffsetCommit | Rebalance | GroupOffsets)])
    only(figures, None)
    assert figures.group.final_offsets is None and figures.group.reads == 0


def test_a_value_below_the_final_offset_that_no_member_read_is_missed() -> None:
    events = [e for e in clean() if not (isinstance(e, GroupRead) and e.value == "p0-3")]
    figures = check(events)
    only(figures, "missed")
    assert figures.examples == ["missed by the group: p0-3 at 1@1, below its final committed "
                                "offset 4"]
    assert figures.group.consumed == 7


def test_an_unread_value_at_or_above_the_final_offset_is_lag_not_missed() -> None:
    """Partition 1 read and committed up to offset 1 only: its drain fell short."""
    events = [GroupOffsets(e.t, [4, 1], final=e.final) if isinstance(e, GroupOffsets) else e
              for e in clean()
              if not (isinstance(e, GroupRead | OffsetCommit) and e.partition == 1
                      and e.offset >= 1)]
    figures = check([*events, OffsetCommit(40, "g1.0", 1, 1)])
    only(figures, None)
    assert figures.group.lag == 3


def test_a_fetched_offset_below_an_acknowledged_commit_is_a_lost_commit() -> None:
    events = clean()
    events.insert(-1, GroupOffsets(65, [4, 2]))
    figures = check(events)
    only(figures, "commits_lost")
    assert figures.examples == ["commit lost: g1.0 committed 1@4 (acknowledged at 50 ms), the "
                                "group's offset at 65 ms was 2"]


def test_a_fetch_answered_after_a_higher_commit_is_held_to_the_one_before_it() -> None:
    """The fetch began at 76 ms, after 0@5 was acknowledged; 0@6 came while it ran."""
    events = clean()
    events[-1:-1] = [OffsetCommit(75, "g0.0", 0, 5), OffsetCommit(78, "g0.0", 0, 6),
                     GroupOffsets(76, [3, 4])]
    figures = check(events)
    only(figures, "commits_lost")
    assert "committed 0@5 (acknowledged at 75 ms)" in figures.examples[0]


def test_the_final_offset_below_an_acknowledged_commit_is_a_lost_commit() -> None:
    events = [GroupOffsets(e.t, [4, -1], final=True) if isinstance(e, GroupOffsets) and e.final
              else e for e in clean()]
    only(check(events), "commits_lost")


def test_a_fetch_begun_before_the_acknowledgement_may_miss_it() -> None:
    events = clean()
    events.insert(-1, GroupOffsets(50, [4, 2]))
    only(check(events), None)


def test_a_failed_commit_promises_nothing() -> None:
    events = [*clean()[:-1], OffsetCommit(75, "g1.0", 1, 9, "REQUEST_TIMED_OUT"),
              GroupOffsets(80, [4, 4], final=True)]
    figures = check(events)
    only(figures, None)
    assert (figures.group.commits_acked, figures.group.commits_failed) == (4, 1)


def test_a_member_committing_an_older_offset_is_counted_not_flagged() -> None:
    events = [*clean()[:-1], OffsetCommit(75, "g3.0", 1, 2),
              GroupOffsets(80, [4, 2], final=True)]
    figures = check(events)
    only(figures, None)
    assert figures.group.commits_regressed == 1


def test_a_record_read_twice_is_a_duplicate_not_an_anomaly() -> None:
    events = clean()
    events.insert(-1, GroupRead(66, "g2.0", 0, 1, "p0-2"))
    figures = check(events)
    only(figures, None)
    assert (figures.group.duplicates, figures.group.reads) == (1, 9)


def test_a_group_read_of_a_value_not_committed_there_is_flagged() -> None:
    events = clean()
    events.insert(-1, GroupRead(66, "g0.0", 0, 4, "p0-99"))
    only(check(events), "reads_uncommitted")
