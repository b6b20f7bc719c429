"""The simulator must report a violation for each deliberately broken core."""

from __future__ import annotations

import pytest
from sim_mutants import (
    AllowsConcurrentVoterChanges,
    CountsObserversTowardHighWatermark,
    GrantsTwoVotesPerEpoch,
    HighWatermarkWithoutMajority,
    SkipsTruncation,
    WithoutPreVote,
)

from pykraft.sim.runner import run_scenario
from pykraft.sim.simulated_cluster import ClientFactory


def _violations(factory: ClientFactory, scenarios: list[str], seeds: range) -> list[str]:
    found = []
    for name in scenarios:
        for seed in seeds:
            result = run_scenario(name, seed, client_factory=factory)
            if result.violation:
                found.append(result.violation)
    return found


@pytest.mark.parametrize(
    ("factory", "scenarios", "seeds", "invariant"),
    [
        (HighWatermarkWithoutMajority, ["leader-failure"], range(3),
         "MajorityReachedHighWatermark"),
        (GrantsTwoVotesPerEpoch, ["leader-failure", "back-to-back-failures"], range(20),
         "SingleLeader"),
        (SkipsTruncation, ["leader-partitioned"], range(3), "ConsistentCommittedData"),
        (WithoutPreVote, ["stable-leadership"], range(2), "StableLeadership"),
        (AllowsConcurrentVoterChanges, ["membership-churn"], range(10),
         "AtMostOneUncommittedVoterSet"),
        (CountsObserversTowardHighWatermark, ["majority-split"], range(4),
         "MajorityReachedHighWatermark"),
    ],
    ids=["hwm-without-majority", "two-votes-per-epoch", "skip-truncation", "no-pre-vote",
         "concurrent-voter-changes", "observer-counts-toward-hwm"],
)
def test_broken_core_is_caught(
    factory: ClientFactory, scenarios: list[str], seeds: range, invariant: str
) -> None:
    violations = _violations(factory, scenarios, seeds)
    assert any(v.startswith(invariant) for v in violations), violations


@pytest.mark.parametrize(
    ("scenarios", "seeds"),
    [(["leader-failure"], range(3)),
     (["leader-failure", "back-to-back-failures"], range(20)),
     (["leader-partitioned"], range(3)),
     (["stable-leadership"], range(2)),
     (["membership-churn"], range(10)),
     (["majority-split"], range(4))],
)
def test_correct_core_passes_the_same_runs(scenarios: list[str], seeds: range) -> None:
    from pykraft.raft.core import RaftClient

    assert _violations(RaftClient, scenarios, seeds) == []
