"""The fault schedule: replayable from its seed, a safe one aims only at idle brokers, the
bounded mix kills the active controller once per 50 faults and aims kills, pauses and
restarts at brokers only, the stress mix draws every kind at any node."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.chaos.schedule import (
    CONTROLLER_KILL_EVERY,
    IDLE_BROKER,
    KILL_ACTIVE_CONTROLLER,
    KINDS,
    PARTITION,
    SHORT,
    STRESS,
    Fault,
    Topology,
    plan,
)

TOPOLOGY = Topology(brokers=(1000, 1001, 1002), controllers=(1, 2, 3), partitions=3)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 50))
def test_the_same_seed_gives_the_same_schedule(seed: int, count: int) -> None:
    first = plan(seed, count, TOPOLOGY)
    assert first == plan(seed, count, TOPOLOGY)
    assert [Fault.from_dict(f.as_dict()) for f in first] == first
    assert [f.index for f in first] == list(range(count))


def test_seeds_differ_and_every_kind_is_drawn() -> None:
    assert plan(1, 30, TOPOLOGY) != plan(2, 30, TOPOLOGY)
    assert {f.kind for f in plan(1, 200, TOPOLOGY)} == set(KINDS)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32))
def test_faults_name_real_targets_and_times_stay_in_range(seed: int) -> None:
    nodes = {f"node:{n}" for n in (*TOPOLOGY.brokers, *TOPOLOGY.controllers)}
    leaders = {f"leader:{p}" for p in range(TOPOLOGY.partitions)}
    for fault in plan(seed, 40, TOPOLOGY, timing=SHORT):
        assert SHORT.gap[0] <= fault.gap_ms <= SHORT.gap[1]
        assert SHORT.hold[0] <= fault.hold_ms <= SHORT.hold[1]
        if fault.kind == KILL_ACTIVE_CONTROLLER:
            assert fault.target == "active-controller"
        else:
            assert fault.target in nodes | leaders
        assert (fault.peer is not None) == (fault.kind == PARTITION)
        if fault.peer is not None:
            assert fault.peer in nodes and fault.peer != fault.target


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32))
def test_a_safe_schedule_touches_only_idle_brokers(seed: int) -> None:
    for fault in plan(seed, 40, TOPOLOGY, safe=True):
        assert fault.target == IDLE_BROKER
        assert fault.kind != KILL_ACTIVE_CONTROLLER


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32))
def test_the_bounded_mix_kills_the_active_controller_once_per_50_and_spares_controllers(
        seed: int) -> None:
    faults = plan(seed, 300, TOPOLOGY)
    assert [f.index for f in faults if f.kind == KILL_ACTIVE_CONTROLLER] == [
        i for i in range(300) if i % CONTROLLER_KILL_EVERY == CONTROLLER_KILL_EVERY - 1]
    brokers = {f"node:{n}" for n in TOPOLOGY.brokers}
    leaders = {f"leader:{p}" for p in range(TOPOLOGY.partitions)}
    for fault in faults:
        if fault.kind not in (KILL_ACTIVE_CONTROLLER, PARTITION):
            assert fault.target in brokers | leaders
    assert {f.kind for f in faults} == set(KINDS)


def test_the_stress_mix_draws_controller_kills_at_any_fault_and_hits_controllers() -> None:
    faults = plan(1, 300, TOPOLOGY, mix=STRESS)
    kills = [f.index for f in faults if f.kind == KILL_ACTIVE_CONTROLLER]
    assert len(kills) > 300 // CONTROLLER_KILL_EVERY
    controllers = {f"node:{n}" for n in TOPOLOGY.controllers}
    assert any(f.target in controllers for f in faults if f.kind != PARTITION)
