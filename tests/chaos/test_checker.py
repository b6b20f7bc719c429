"""The history checker: synthetic histories, each with one kind of anomaly, yield exactly that
figure; a clean history yields zeros; histories survive their JSON-lines form."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.chaos.checker import FENCE_SLACK_MS, Figures, check
from pykraft.chaos.history import (
    UNKNOWN_OFFSET,
    Ack,
    Committed,
    Event,
    FaultEvent,
    HistoryError,
    Read,
    RefusalFence,
    ReplicaLog,
    RunInfo,
    Send,
    decode,
    decode_lines,
    encode,
)

ANOMALIES = ("lost", "duplicated", "reordered", "reads_past_hw", "divergent_replicas",
             "phantom")


@dataclass
class World:
    """The true logs a clean run leaves, with every producer's sends in order."""

    logs: dict[int, list[str]]
    sends: list[Send]
    failed: set[str]
    read_upto: dict[int, int]
    replica_upto: dict[tuple[int, int], int]
    faults: list[FaultEvent] = field(default_factory=list)


@st.composite
def worlds(draw: st.DrawFn) -> World:
    partitions = draw(st.integers(1, 3))
    producers = [f"p{i}" for i in range(draw(st.integers(1, 3)))]
    order = draw(st.lists(st.sampled_from(producers), min_size=2, max_size=40))
    logs: dict[int, list[str]] = {p: [] for p in range(partitions)}
    sends, failed = [], set()
    counts = dict.fromkeys(producers, 0)
    for t, producer in enumerate(order):
        value = f"{producer}-{counts[producer]}"
        counts[producer] += 1
        partition = draw(st.integers(0, partitions - 1))
        sends.append(Send(t, producer, value, partition))
        logs[partition].append(value)
        if draw(st.integers(0, 9)) == 0:
            failed.add(value)  # its answer was lost: present in the log all the same
    read_upto = {p: draw(st.integers(0, len(log))) for p, log in logs.items()}
    replica_upto = {(p, r): draw(st.integers(0, len(log)))
                    for p, log in logs.items() for r in (1000, 1001, 1002)}
    drawn = draw(st.lists(st.tuples(st.sampled_from(("kill", "pause")), st.booleans()),
                          max_size=4))
    faults = [FaultEvent(i, kind, "node:1000", phase)
              for i, (kind, skipped) in enumerate(drawn)
              for phase in (("skipped",) if skipped else ("start", "end"))]
    return World(logs, sends, failed, read_upto, replica_upto, faults)


def history(world: World, *, committed: dict[int, list[str]] | None = None) -> list[Event]:
    """Acks, reads and replica logs derived from ``world.logs``; the committed logs are those
    unless given."""
    events: list[Event] = [RunInfo(7, [{"kind": "kill"}]), *world.faults, *world.sends]
    for partition, log in world.logs.items():
        for offset, value in enumerate(log):
            send = next(s for s in world.sends if s.value == value)
            if value in world.failed:
                events.append(Ack(100, send.producer, value, partition, error="TIMED_OUT"))
            elif log.index(value) == offset:
                events.append(Ack(100 + offset, send.producer, value, partition, offset))
        events += [Read(200, "c0", partition, offset, value, len(log))
                   for offset, value in enumerate(log[:world.read_upto[partition]])]
    for (partition, replica), upto in world.replica_upto.items():
        events.append(ReplicaLog(partition, replica, 0, list(world.logs[partition][:upto])))
    final = world.logs if committed is None else committed
    events += [Committed(p, 0, list(log)) for p, log in final.items()]
    return events


def only(figures: Figures, name: str | None, count: int = 1) -> None:
    found = {a: getattr(figures, a) for a in ANOMALIES}
    assert found == {a: count if a == name else 0 for a in ANOMALIES}, figures.examples
    assert figures.anomalies == (0 if name is None else count)


@settings(max_examples=60, deadline=None)
@given(worlds())
def test_a_clean_history_has_no_anomaly(world: World) -> None:
    figures = check(history(world))
    only(figures, None)
    sent = {s.value for s in world.sends}
    assert figures.acknowledged == len(sent - world.failed)
    assert figures.failed == len(world.failed)
    assert figures.faults == Counter(f.kind for f in world.faults if f.phase == "start")
    assert figures.faults_skipped == sum(f.phase == "skipped" for f in world.faults)


@settings(max_examples=40, deadline=None)
@given(worlds())
def test_an_acknowledged_value_missing_from_the_committed_log_is_lost(world: World) -> None:
    world.logs[0].append("p0-late")
    world.sends.append(Send(99, "p0", "p0-late", 0))
    committed = {p: log[:-1] if p == 0 else log for p, log in world.logs.items()}
    world.read_upto[0] = min(world.read_upto[0], len(committed[0]))
    figures = check(history(world, committed=committed))
    only(figures, "lost")
    assert "absent from the committed log" in figures.examples[0]


@settings(max_examples=40, deadline=None)
@given(worlds())
def test_a_value_committed_elsewhere_than_acknowledged_is_lost(world: World) -> None:
    events = history(world)
    acks = [i for i, e in enumerate(events) if isinstance(e, Ack) and e.error is None]
    if not acks:
        return
    ack = events[acks[0]]
    assert isinstance(ack, Ack)
    events[acks[0]] = Ack(ack.t, ack.producer, ack.value, ack.partition, ack.offset + 100)
    only(check(events), "lost")


@settings(max_examples=40, deadline=None)
@given(worlds(), st.data())
def test_a_value_written_twice_is_duplicated(world: World, data: st.DataObject) -> None:
    partition = data.draw(st.sampled_from([p for p, log in world.logs.items() if log]))
    world.logs[partition].append(data.draw(st.sampled_from(world.logs[partition])))
    only(check(history(world)), "duplicated")


@settings(max_examples=40, deadline=None)
@given(worlds(), st.data())
def test_two_sends_of_one_producer_swapped_in_a_partition_are_reordered(
        world: World, data: st.DataObject) -> None:
    pairs = [(p, i, j) for p, log in world.logs.items() for i in range(len(log))
             for j in range(i + 1, len(log))
             if log[i].split("-")[0] == log[j].split("-")[0]
             and all(v.split("-")[0] != log[i].split("-")[0] for v in log[i + 1:j])]
    if not pairs:
        return
    partition, i, j = data.draw(st.sampled_from(pairs))
    log = world.logs[partition]
    log[i], log[j] = log[j], log[i]
    only(check(history(world)), "reordered")


@settings(max_examples=40, deadline=None)
@given(worlds())
def test_a_read_of_data_later_truncated_is_past_the_high_watermark(world: World) -> None:
    events = [*history(world), Send(300, "p9", "p9-0", 0),
              Ack(301, "p9", "p9-0", 0, error="NOT_ENOUGH_REPLICAS"),
              Read(302, "c0", 0, len(world.logs[0]), "p9-0", len(world.logs[0]) + 1)]
    figures = check(events)
    only(figures, "reads_past_hw")
    assert figures.failed == len(world.failed) + 1


@settings(max_examples=40, deadline=None)
@given(worlds(), st.data())
def test_a_replica_disagreeing_with_the_committed_log_diverges(
        world: World, data: st.DataObject) -> None:
    events = history(world)
    replicas = [i for i, e in enumerate(events) if isinstance(e, ReplicaLog) and e.values]
    if not replicas:
        return
    index = data.draw(st.sampled_from(replicas))
    replica = events[index]
    assert isinstance(replica, ReplicaLog)
    values = list(replica.values)
    values[data.draw(st.integers(0, len(values) - 1))] = "other"
    events[index] = ReplicaLog(replica.partition, replica.replica, 0, values)
    only(check(events), "divergent_replicas")


@settings(max_examples=40, deadline=None)
@given(worlds())
def test_a_committed_value_nobody_sent_is_a_phantom(world: World) -> None:
    world.logs[0].append("garbage")
    world.sends.append(Send(0, "ghost", "garbage", 0))
    events = [e for e in history(world)
              if not (isinstance(e, (Send, Ack)) and e.value == "garbage")]
    only(check(events), "phantom")


def test_longest_produce_gap_is_between_successful_acks() -> None:
    events: list[Event] = [Ack(10, "p", "a", 0, 0), Ack(15, "p", "b", 0, error="X"),
                           Ack(40, "p", "c", 0, 1), Ack(45, "p", "d", 0, 2)]
    assert check(events).longest_produce_gap_ms == 30


def test_a_broker_fenced_on_refusal_while_its_node_ran_is_a_false_fence() -> None:
    faults: list[Event] = [
        FaultEvent(1000, "kill", "leader:0=node:1001", "start"),
        FaultEvent(3000, "kill", "leader:0=node:1001", "end"),
        FaultEvent(5000, "pause", "node:1002", "start"),
        FaultEvent(8000, "pause", "node:1002", "end"),
        FaultEvent(9000, "restart", "node:1003", "start")]  # never healed
    right = [RefusalFence(1200, 1001, 7), RefusalFence(3500, 1001, 7),  # within the slack
             RefusalFence(9100, 1003, 4), RefusalFence(60_000, 1003, 4)]
    figures = check([*faults, *right])
    assert (figures.fenced_on_refusal, figures.false_fences, figures.anomalies) == (4, 0, 0)
    wrong = [RefusalFence(6000, 1002, 9),  # paused, not dead
             RefusalFence(900, 1001, 7),  # before its kill
             RefusalFence(3000 + FENCE_SLACK_MS + 1, 1001, 7)]  # after its restart
    figures = check([*faults, *right, *wrong])
    assert (figures.fenced_on_refusal, figures.false_fences, figures.anomalies) == (4, 3, 3)
    assert "broker 1002 (epoch 9) fenced on refused listeners at 6.0 s" in figures.examples[0]


@settings(max_examples=30, deadline=None)
@given(worlds())
def test_a_history_survives_its_json_lines(world: World) -> None:
    events = history(world)
    assert decode_lines([encode(e) for e in events]) == events


def test_a_torn_last_line_is_dropped_and_damage_elsewhere_refused() -> None:
    lines = [encode(Send(1, "p", "p-0", 0)), encode(Ack(2, "p", "p-0", 0, 0))]
    assert decode_lines([*lines, lines[1][:10]]) == [decode(line) for line in lines]
    with pytest.raises(HistoryError):
        decode_lines([lines[0][:10], *lines])
    with pytest.raises(HistoryError):
        decode('{"type": "nonsense"}')


def _without_offsets(events: list[Event]) -> list[Event]:
    return [Ack(e.t, e.producer, e.value, e.partition, UNKNOWN_OFFSET)
            if isinstance(e, Ack) and e.error is None else e for e in events]


@settings(max_examples=30, deadline=None)
@given(worlds())
def test_an_acknowledgement_without_offset_counts_where_its_value_is(world: World) -> None:
    only(check(_without_offsets(history(world))), None)
    world.logs[0].append("p0-late")
    world.sends.append(Send(99, "p0", "p0-late", 0))
    committed = {p: log[:-1] if p == 0 else log for p, log in world.logs.items()}
    world.read_upto[0] = min(world.read_upto[0], len(committed[0]))
    only(check(_without_offsets(history(world, committed=committed))), "lost")


@settings(max_examples=40, deadline=None)
@given(worlds(), st.data(), st.booleans())
def test_a_copy_from_a_bumped_epoch_is_the_clients_resend_not_a_duplicate(
        world: World, data: st.DataObject, bumped: bool) -> None:
    partition = data.draw(st.sampled_from([p for p, log in world.logs.items() if log]))
    log = world.logs[partition]
    log.append(data.draw(st.sampled_from(log)))
    sessions: list[str | None] = [*(["7.0"] * (len(log) - 1)), "7.1" if bumped else "7.0"]
    events = [*history(world), ReplicaLog(partition, 1003, 0, list(log), len(log), sessions)]
    figures = check(events)
    if bumped:
        only(figures, None)
        assert figures.resent_after_epoch_bump == 1
    else:
        only(figures, "duplicated")
        assert "producer sessions 7.0 and 7.0" in figures.examples[0]
