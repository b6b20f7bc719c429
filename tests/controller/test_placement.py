"""Replica placement properties: distinct replicas, rack spreading, balanced leaders."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.controller.placement import UsableBroker, place_replicas


@st.composite
def clusters(draw: st.DrawFn) -> list[UsableBroker]:
    ids = draw(st.lists(st.integers(0, 50), min_size=1, max_size=12, unique=True))
    rack_sets: list[list[str | None]] = [[None], ["a"], ["a", "b"], ["a", "b", "c"],
                                         ["a", "b", "c", "d"]]
    racks = draw(st.sampled_from(rack_sets))
    return [UsableBroker(b, draw(st.sampled_from(racks))) for b in ids]


@given(brokers=clusters(), partitions=st.integers(1, 60), seed=st.integers(0, 2**32),
       data=st.data())
def test_placement_properties(brokers: list[UsableBroker], partitions: int, seed: int,
                              data: st.DataObject) -> None:
    rf = data.draw(st.integers(1, len(brokers)))
    placements = place_replicas(brokers, num_partitions=partitions, replication_factor=rf,
                                rng=random.Random(seed))
    rack_of = {b.broker_id: b.rack for b in brokers}
    racks = len(set(rack_of.values()))
    assert len(placements) == partitions
    for replicas in placements:
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert set(replicas) <= set(rack_of)
        assert len({rack_of[r] for r in replicas}) == min(rf, racks)
    leaders = Counter(replicas[0] for replicas in placements)
    counts = [leaders.get(b.broker_id, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1


def test_placement_is_deterministic_for_a_seed() -> None:
    brokers = [UsableBroker(i, "ab"[i % 2]) for i in range(6)]
    first = place_replicas(brokers, num_partitions=10, replication_factor=3, rng=random.Random(4))
    again = place_replicas(brokers, num_partitions=10, replication_factor=3, rng=random.Random(4))
    assert first == again


def test_placement_rejects_impossible_factor() -> None:
    with pytest.raises(ValueError):
        place_replicas([UsableBroker(1, None)], num_partitions=1, replication_factor=2,
                       rng=random.Random(0))
