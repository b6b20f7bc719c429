"""The controller's fast failover under the replication simulator: a crashed leader is
fenced on its refused listeners before its session expires, and a paused broker, a lossy
or blocked link to the controller, slow disks and crashes with quick restarts fence no
running incarnation (NoFalseFencing, checked after every event, with the replica
invariants). The large sweeps run from ``pykraft sim sweep --scenario replica-failover-*``."""

from __future__ import annotations

import pytest
from sim_mutants import ReportsTheCurrentEpoch, TimeoutIsRefusal

from pykraft.sim.replica_cluster import ReplicaCluster
from pykraft.sim.replica_controller import SimController
from pykraft.sim.replica_invariants import replica_invariants
from pykraft.sim.replica_liveness import WatchFactory
from pykraft.sim.replica_scenarios import REPLICA_SCENARIOS
from pykraft.sim.runner import run_replica_scenario, run_scenario

SEEDS = range(200)
FAILOVER = [name for name in REPLICA_SCENARIOS if name.startswith("replica-failover-")]


def test_every_failover_scenario_is_in_the_sweeps() -> None:
    assert FAILOVER == ["replica-failover-leader-crash", "replica-failover-paused",
                        "replica-failover-lossy-link", "replica-failover-slow-disk",
                        "replica-failover-quick-restart"]


@pytest.mark.parametrize("scenario", FAILOVER)
def test_failover_scenario_has_no_violation(scenario: str) -> None:
    runs = [run_scenario(scenario, seed) for seed in SEEDS]
    assert [f"seed {r.seed}: {r.violation}" for r in runs if r.violation] == []


@pytest.mark.parametrize(
    ("factory", "scenario", "seeds"),
    [(TimeoutIsRefusal, "replica-failover-lossy-link", (0, 1, 2)),
     (ReportsTheCurrentEpoch, "replica-failover-quick-restart", (2, 6))],
    ids=["timeout-is-refusal", "reports-the-current-epoch"],
)
def test_broken_failover_rule_is_caught(factory: WatchFactory, scenario: str,
                                        seeds: tuple[int, ...]) -> None:
    violations = [run_replica_scenario(scenario, seed, watch_factory=factory).violation
                  for seed in seeds]
    assert all(v is not None and v.startswith("NoFalseFencing") for v in violations), (
        violations)


def test_same_seed_same_failover_run() -> None:
    """Heartbeats, probes, pauses and slow disks draw from the run's one Random."""
    for scenario in FAILOVER:
        first, again = run_scenario(scenario, 5), run_scenario(scenario, 5)
        assert (first.trace_digest, first.events) == (again.trace_digest, again.events)


def traced(scenario: str, seed: int) -> list[str]:
    lines: list[str] = []
    run_scenario(scenario, seed, trace=lines.append)
    return lines


def test_quick_restarts_race_stale_evidence_against_the_new_registration() -> None:
    """The race the scenario exists for happens: refusals about the old incarnation come
    back after the new one registered, and fence nothing."""
    stale = [seed for seed in range(20) if any(
        "refused everywhere (fenced: False)" in line
        for line in traced("replica-failover-quick-restart", seed))]
    assert len(stale) >= 5, stale


def test_a_paused_broker_is_probed_and_its_listeners_accept() -> None:
    lines = traced("replica-failover-paused", 0)
    assert any("probe accepted" in line for line in lines)
    assert any("no evidence" in line for line in lines)


def test_a_blocked_controller_link_times_probes_out() -> None:
    timed_out = [seed for seed in range(10) if any(
        "times out" in line and "probe" in line
        for line in traced("replica-failover-lossy-link", seed))]
    assert timed_out, "no probe crossed the blocked link"


def test_evidence_fences_only_the_registered_incarnation() -> None:
    controller = SimController((0, 1, 2), lambda: None)
    old = controller.register(1)
    new = controller.register(1)  # a quick restart
    assert not controller.broker_unreachable(1, old)
    assert controller.broker_epochs[1] == new and controller.stale_refusals == 1
    assert controller.broker_unreachable(1, new)
    assert 1 not in controller.broker_epochs and controller.refusal_fences == [(1, new)]


def test_a_paused_broker_runs_nothing_until_it_resumes() -> None:
    cluster = ReplicaCluster(3, 3, 2)
    cluster.invariants.extend(replica_invariants())
    cluster.start_all()
    cluster.run_for(200)
    follower = next(b for b in cluster.brokers if b != cluster.controller.leader)
    end = cluster.brokers[follower].log.end_offset
    assert cluster.pause(follower, 150)
    cluster.run_for(140)
    assert cluster.brokers[follower].log.end_offset == end
    assert follower in cluster.controller.broker_epochs
    cluster.run_until(lambda: cluster.brokers[follower].log.end_offset > end, 1000,
                      what="the resumed follower fetches again")
