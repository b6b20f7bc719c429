"""A history's faults become replay steps on the nodes they hit, at their times after the
first send, held as long; a replay takes its cluster and workload from the recorded run."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.chaos.history import Event, FaultEvent, RunInfo, Send, encode
from pykraft.chaos.injector import Active
from pykraft.chaos.replay import ReplayError, Step, recorded_run
from pykraft.chaos.run import ChaosError, RunOptions, replaying

SETTINGS = {"seed": "300", "brokers": "3", "controllers": "1", "partitions": "2",
            "replication_factor": "3", "min_insync_replicas": "2", "producers": "1",
            "consumers": "0", "rate_per_s": "50.0", "short": "True"}


def recorded() -> list[Event]:
    return [
        RunInfo(300, [], SETTINGS),
        FaultEvent(400, "pause", "node:1001", "start"),  # before the first send
        FaultEvent(900, "pause", "node:1001", "end"),
        Send(1000, "p0.0", "p0.0-0000000", 0),
        FaultEvent(1500, "kill", "leader:0=node:1000", "start"),
        FaultEvent(2300, "kill", "leader:0=node:1000", "end"),
        FaultEvent(2600, "pause", "leader:1", "skipped"),
        FaultEvent(3000, "partition", "leader:1=node:1001-node:2", "start"),
        FaultEvent(3400, "partition", "leader:1=node:1001-node:2", "end"),
        FaultEvent(3500, "partition", "node:1002-node:1", "start"),
        FaultEvent(3900, "partition", "node:1002-node:1", "end"),
        FaultEvent(4000, "kill-active-controller", "active-controller=node:1", "start"),
    ]


def test_the_recorded_faults_become_steps_on_their_nodes() -> None:
    info, steps = recorded_run(recorded())
    assert info.seed == 300
    assert steps == [
        Step(-600, "pause", "node:1001", Active("pause", (1001,), "node:1001"), 500),
        Step(500, "kill", "leader:0=node:1000", Active("kill", (1000,), "leader:0"), 800),
        Step(1600, "pause", "leader:1", None),
        Step(2000, "partition", "leader:1=node:1001-node:2",
             Active("partition", (1001, 2), "leader:1"), 400),
        Step(2500, "partition", "node:1002-node:1",
             Active("partition", (1002, 1), "node:1002"), 400),
        # the run ended with this fault in force: replayed, healed at once
        Step(3000, "kill-active-controller", "active-controller=node:1",
             Active("kill-active-controller", (1,), "active-controller"), 0),
    ]
    assert [s.active.target for s in steps if s.active] == [
        s.target for s in steps if s.active]


@given(st.sampled_from(["kill", "pause", "restart", "partition"]),
       st.lists(st.sampled_from([1, 2, 3, 1000, 1001, 1002]), min_size=1, max_size=2,
                unique=True),
       st.sampled_from(["leader:0", "leader:2", "active-controller", "idle-broker", None]))
def test_a_recorded_target_parses_back_to_its_fault(kind: str, nodes: list[int],
                                                    role: str | None) -> None:
    active = Active(kind, tuple(nodes), role or f"node:{nodes[0]}")
    assert Active.parse(kind, active.target) == active


def test_a_history_without_a_run_or_with_a_target_naming_no_node_is_refused() -> None:
    with pytest.raises(ReplayError, match="no run line"):
        recorded_run(recorded()[1:])
    with pytest.raises(ReplayError, match="names no node"):
        recorded_run([RunInfo(1, []), FaultEvent(5, "kill", "leader:0=broker", "start")])


def write(path: Path, events: list[Event]) -> Path:
    path.write_text("".join(encode(e) + "\n" for e in events))
    return path


def test_a_replay_takes_the_recorded_runs_settings_and_its_first_faults(
        tmp_path: Path) -> None:
    history = write(tmp_path / "history.jsonl", recorded())
    options, steps = replaying(RunOptions(tmp_path / "again", faults=3), history)
    assert (options.seed, options.controllers, options.partitions, options.consumers,
            options.rate_per_s) == (300, 1, 2, 0, 50.0)
    assert options.directory == tmp_path / "again"
    assert [s.kind for s in steps] == ["pause", "kill", "pause"]
    with pytest.raises(ChaosError, match="does not record"):
        replaying(RunOptions(tmp_path / "x"), write(tmp_path / "old.jsonl", [RunInfo(1, [])]))
    with pytest.raises(ChaosError, match="cannot read"):
        replaying(RunOptions(tmp_path / "x"), tmp_path / "missing.jsonl")
