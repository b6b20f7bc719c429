"""The checker explains the longest produce gaps: their window, each partition's silence,
the faults in force, the send errors, and from the sampled cluster view the nodes down,
leaders, ISRs, controllers and how long each partition could take acks=all writes."""

from __future__ import annotations

from pykraft.chaos.checker import GAPS, check
from pykraft.chaos.history import Ack, Event, FaultEvent, Observed, RunInfo, decode, encode

ALL = [1000, 1001, 1002]


def gap_history() -> list[Event]:
    return [
        RunInfo(1, [], {"min_insync_replicas": "2"}),
        FaultEvent(10, "pause", "node:1002", "start"),
        FaultEvent(40, "pause", "node:1002", "end"),  # healed before the gap: not in force
        Ack(0, "p", "a", 0, 0), Ack(100, "p", "b", 1, 0),
        Observed(50, [1000, 1001], [ALL, ALL], 1, []),
        FaultEvent(150, "kill", "leader:0=node:1000", "start"),
        Observed(1000, [1001, 1001], [[1001], [1001, 1002]], 1, [1000]),
        Ack(1200, "p", "c", 0, error="NOT_ENOUGH_REPLICAS"),
        FaultEvent(2000, "kill", "leader:0=node:1000", "end"),
        FaultEvent(2500, "kill-active-controller", "active-controller=node:1", "start"),
        FaultEvent(3000, "kill-active-controller", "active-controller=node:1", "end"),
        Observed(3000, [1001, 1001], [[1001, 1002], [1001, 1002]], -1, [1]),
        FaultEvent(3500, "pause", "leader:1", "skipped"),
        Ack(3600, "p", "d", 1, error="_MSG_TIMED_OUT"),
        Ack(5000, "p", "e", 0, 1), Ack(5100, "p", "f", 1, 1),
        FaultEvent(5200, "restart", "node:1001", "start"),  # after the gap: not in it
        Ack(5400, "p", "g", 0, 2), Ack(5500, "p", "h", 1, 2), Ack(5550, "p", "i", 0, 3),
    ]


def test_the_longest_gap_is_explained_from_the_history() -> None:
    figures = check(gap_history())
    assert figures.longest_produce_gap_ms == 4900
    gap = figures.gaps[0].as_dict()
    assert (gap["from_ms"], gap["to_ms"], gap["ms"]) == (100, 5000, 4900)
    assert gap["partitions_silent_ms"] == {"0": [0, 5000], "1": [100, 5100]}
    assert gap["faults"] == ["0.1-2.0 s kill leader:0=node:1000",
                             "2.5-3.0 s kill-active-controller active-controller=node:1",
                             "3.5 s pause leader:1 skipped"]
    assert gap["errors"] == {"NOT_ENOUGH_REPLICAS": 1, "_MSG_TIMED_OUT": 1}
    assert gap["nodes_down"] == ["0.1 s: down []", "1.0 s: down [1000]", "3.0 s: down [1]"]
    assert gap["leader_isr"] == {
        "0": ["0.1 s: leader 1000 isr [1000, 1001, 1002]", "1.0 s: leader 1001 isr [1001]",
              "3.0 s: leader 1001 isr [1001, 1002]"],
        "1": ["0.1 s: leader 1001 isr [1000, 1001, 1002]",
              "1.0 s: leader 1001 isr [1001, 1002]"]}
    assert gap["controller"] == ["0.1 s: controller 1", "3.0 s: controller -1"]
    # p0: writable 100-1000 and 3000-5000 (1000-3000 its ISR is below min.insync.replicas)
    assert gap["writable_ms"] == {"0": 900 + 2000, "1": 4900}


def test_only_the_longest_gaps_are_explained_longest_first() -> None:
    figures = check(gap_history())
    assert [g.end - g.start for g in figures.gaps] == [4900, 300, 100][:GAPS]
    assert figures.as_dict()["longest_produce_gaps"] == [g.as_dict() for g in figures.gaps]


def test_a_dead_leader_or_a_dead_isr_member_is_not_writable() -> None:
    history: list[Event] = [
        RunInfo(1, [], {"min_insync_replicas": "2"}), Ack(0, "p", "a", 0, 0),
        Observed(0, [1000], [ALL], 1, [1000]),  # the leader is down
        Observed(1000, [1001], [ALL], 1, [1000]),  # a dead member holds the ISR back
        Observed(2000, [1001], [[1001, 1002]], 1, [1000]),  # shrunk: writable again
        Observed(2500, [1001], [[1001]], 1, []),  # below min.insync.replicas
        Ack(3000, "p", "b", 0, 1)]
    assert check(history).gaps[0].writable_ms == {0: 500}


def test_without_samples_the_gap_still_names_its_faults() -> None:
    history = [e for e in gap_history() if not isinstance(e, Observed)]
    gap = check(history).gaps[0]
    assert gap.writable_ms == {} and gap.leaders == {0: [], 1: []} and gap.controllers == []
    assert len(gap.faults) == 3


def test_a_sample_survives_its_json_line() -> None:
    sample = Observed(7, [1000, -1], [ALL, []], 2, [1001])
    assert decode(encode(sample)) == sample
    assert decode('{"type":"observed","t":1,"leaders":[],"isr":[]}') == Observed(1, [], [])
