"""Leader-epoch cache semantics (Kafka's ``LeaderEpochFileCache``)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.storage.leader_epoch import LeaderEpochCache


def make() -> LeaderEpochCache:
    return LeaderEpochCache([(1, 0), (3, 10), (6, 25)])


def test_end_offset_for() -> None:
    cache = make()
    assert cache.end_offset_for(-1, 40) == (-1, -1)
    assert cache.end_offset_for(6, 40) == (6, 40)  # latest epoch ends at the log end
    assert cache.end_offset_for(3, 40) == (3, 25)
    assert cache.end_offset_for(4, 40) == (3, 25)  # largest epoch <= 4 is 3
    assert cache.end_offset_for(2, 40) == (1, 10)
    assert cache.end_offset_for(1, 40) == (1, 10)
    assert cache.end_offset_for(0, 40) == (0, 0)  # older than all: requested epoch, first start
    assert cache.end_offset_for(7, 40) == (-1, -1)  # newer than all
    assert LeaderEpochCache().end_offset_for(0, 0) == (-1, -1)


def test_assign() -> None:
    cache = make()
    assert not cache.assign(6, 30)  # same epoch, later offset: nothing to do
    assert cache.assign(8, 30)
    assert cache.entries == [(1, 0), (3, 10), (6, 25), (8, 30)]
    assert cache.assign(4, 12)  # not after the latest: evicts epochs >= 4 / offsets >= 12
    assert cache.entries == [(1, 0), (3, 10), (4, 12)]
    assert cache.assign(4, 11)  # same epoch at a smaller offset moves it
    assert cache.entries == [(1, 0), (3, 10), (4, 11)]
    with pytest.raises(ValueError, match="invalid epoch entry"):
        cache.assign(-1, 0)


def test_truncate_from_end_and_start() -> None:
    cache = make()
    assert not cache.truncate_from_end(26)
    assert cache.truncate_from_end(25)
    assert cache.entries == [(1, 0), (3, 10)]
    assert cache.truncate_from_start(12)
    assert cache.entries == [(3, 12)]
    assert not cache.truncate_from_start(12)
    assert not cache.truncate_from_start(5)
    assert cache.truncate_from_start(40)
    assert cache.entries == [(3, 40)]
    cache.clear()
    assert cache.latest_epoch is None


entry_lists = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 100)), max_size=15)


@given(entry_lists, st.integers(-1, 25), st.integers(0, 10))
def test_cache_against_a_model(assigned: list[tuple[int, int]], query: int, extra: int) -> None:
    cache = LeaderEpochCache()
    model: list[tuple[int, int]] = []
    for epoch, start in assigned:
        cache.assign(epoch, start)
        if model and epoch == model[-1][0] and start >= model[-1][1]:
            continue
        model = [(e, s) for e, s in model if e < epoch and s < start] + [(epoch, start)]
    assert cache.entries == model
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(model))
    log_end = (model[-1][1] if model else 0) + extra
    below = [entry for entry in model if entry[0] <= query]
    above = [entry for entry in model if entry[0] > query]
    if query < 0 or not model or query > model[-1][0]:
        expected = (-1, -1)
    elif query == model[-1][0]:
        expected = (query, log_end)
    elif not below:
        expected = (query, above[0][1])
    else:
        expected = (below[-1][0], above[0][1])
    assert cache.end_offset_for(query, log_end) == expected
