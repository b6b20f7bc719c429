"""One partition replicated under the seeded simulator: a bounded sweep of every
replication scenario (the large sweeps run from ``pykraft sim sweep``), seed replay, the
kill rule, and broken replica rules caught by the invariants."""

from __future__ import annotations

import pytest
from sim_mutants import ExpandsBehindHighWatermark, HighWatermarkAtLeaderEnd
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.sim.replica_broker import ReplicationFactory
from pykraft.sim.replica_cluster import ReplicaCluster
from pykraft.sim.replica_controller import SimController
from pykraft.sim.replica_scenarios import ELR_SUFFIX, PROGRESS, REPLICA_SCENARIOS
from pykraft.sim.runner import run_replica_scenario, run_scenario

SEEDS = range(3)


@pytest.mark.parametrize("scenario", [*REPLICA_SCENARIOS,
                                      *(name + ELR_SUFFIX for name in REPLICA_SCENARIOS)])
def test_replica_scenario_has_no_violation(scenario: str) -> None:
    runs = [run_scenario(scenario, seed) for seed in SEEDS]
    assert [f"seed {r.seed}: {r.violation}" for r in runs if r.violation] == []
    assert all(r.commit_count >= PROGRESS for r in runs)


def test_same_seed_same_replication_run() -> None:
    first, again = run_scenario("replica-churn", 11), run_scenario("replica-churn", 11)
    assert (first.trace_digest, first.events) == (again.trace_digest, again.events)
    assert run_scenario("replica-churn", 12).trace_digest != first.trace_digest


@pytest.mark.parametrize(
    ("factory", "scenario", "invariant", "seeds"),
    [(HighWatermarkAtLeaderEnd, "replica-steady", "HighWatermarkWithinIsr", (0, 1)),
     # runs whose crashes come after the broken expansion: 8 of seeds 0-11 (96 of 0-99
     # before fast failover fenced crashed followers at once, 81 since)
     (ExpandsBehindHighWatermark, "replica-follower-crashes", "AckedWritesKept", (0, 4))],
    ids=["hw-at-leader-end", "expand-behind-hw"],
)
def test_broken_replica_rule_is_caught(factory: ReplicationFactory, scenario: str,
                                       invariant: str, seeds: tuple[int, ...]) -> None:
    violations = [run_replica_scenario(scenario, seed, replication_factory=factory).violation
                  for seed in seeds]
    assert all(v is not None and v.startswith(invariant) for v in violations), violations


def test_an_unclean_restart_taken_for_a_clean_one_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller that keeps a crashed broker eligible elects it without the committed
    records it lost (seeds 0 and 1 of 20 do)."""
    register = SimController.register

    def always_clean(self: SimController, broker_id: int, *, clean: bool = False) -> int:
        return register(self, broker_id, clean=True)

    monkeypatch.setattr(SimController, "register", always_clean)
    violations = [run_scenario("replica-elr-recovery" + ELR_SUFFIX, seed).violation
                  for seed in (0, 1)]
    assert all(v is not None and v.startswith("ElrLeaderHadCommitted") for v in violations), \
        violations


def test_the_last_live_isr_member_is_never_killed() -> None:
    cluster = ReplicaCluster(1, 3, 2)
    cluster.start_all()
    assert cluster.kill(1) and cluster.kill(2)
    assert not cluster.kill(0)  # 1 and 2 are still in the ISR, but dead
    cluster.run_until(lambda: cluster.controller.assignment.isr == (0,), 1000,
                      what="the dead replicas fenced out of the ISR")


def test_cli_replays_a_replication_run_with_its_truncation() -> None:
    result = CliRunner().invoke(app, ["sim", "run", "--scenario", "replica-leader-isolated",
                                      "--seed", "3", "--trace"])
    assert result.exit_code == 0, result.output
    assert "truncates to" in result.output
    assert "replica-leader-isolated seed 3:" in result.output
