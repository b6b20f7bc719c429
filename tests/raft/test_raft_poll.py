"""The poll loop re-runs while each pass changes the state, within a bound whose breach is
a loud error: a state that never settles is a livelock, i.e. a bug, never a silent stop."""

from __future__ import annotations

import random

import pytest
from raft_harness import Harness, config

from pykraft.errors import RaftError
from pykraft.raft.core import MAX_TRANSITIONS_PER_POLL, RaftClient
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.quorum_state import MemoryQuorumStateStore
from pykraft.raft.states import Leader


class _NeverSettles(RaftClient):
    """A broken role: every pass of the poll enters a fresh state of the same epoch."""

    passes = 0

    def _poll_state(self) -> None:
        self.passes += 1
        self.become_unattached(self.epoch)


def test_a_poll_that_never_settles_stops_the_replica_loudly() -> None:
    with pytest.raises(RaftError, match="livelock"):
        _NeverSettles(0, config({0, 1, 2}), MemoryLog(), MemoryQuorumStateStore(),
                      rng=random.Random(1), now_ms=0)


def test_a_chain_of_transitions_just_within_the_bound_settles() -> None:
    class Counting(_NeverSettles):
        def _poll_state(self) -> None:
            super()._poll_state()
            if self.passes >= MAX_TRANSITIONS_PER_POLL - 1:
                self._poll_state = lambda: None  # type: ignore[method-assign]

    client = Counting(0, config({0, 1, 2}), MemoryLog(), MemoryQuorumStateStore(),
                      rng=random.Random(1), now_ms=0)
    assert client.passes == MAX_TRANSITIONS_PER_POLL - 1


def test_a_sole_voter_settles_as_leader_within_one_poll() -> None:
    h = Harness(0, {0})
    assert isinstance(h.state(), Leader)
