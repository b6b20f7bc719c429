"""Fetch sessions without a broker: the leader's cache and contexts
(:mod:`pykraft.broker.fetch_session_cache`, :mod:`pykraft.broker.fetch_sessions`) and the
fetcher's handler (:mod:`pykraft.broker.fetch_session_handler`), by Kafka's rules."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.broker.fetch_session_cache import (
    EVICTION_MS,
    SHARDS,
    CachedPartition,
    FetchSessionCache,
    SessionIdOutOfRangeError,
    SessionKey,
    next_epoch,
)
from pykraft.broker.fetch_session_handler import FetchSessionHandler
from pykraft.broker.fetch_sessions import FetchManager
from pykraft.messages.kafka.fetch_request import FetchPartition
from pykraft.messages.kafka.fetch_response import PartitionData
from pykraft.protocol.errors import ErrorCode

ID_RANGE = ((1 << 31) - 1) // SHARDS


def _partitions(size: int) -> dict[SessionKey, CachedPartition]:
    return {("t", index): CachedPartition(FetchPartition(partition=index))
            for index in range(size)}


def _create(cache: FetchSessionCache, now_ms: int, *, privileged: bool = False,
            size: int = 1) -> int:
    return cache.create(now_ms, privileged=privileged, uses_topic_ids=True,
                        partitions=_partitions(size))


def test_session_ids_are_random_non_zero_and_go_to_the_shards_in_turn() -> None:
    cache = FetchSessionCache(1000, random.Random(1))
    ids = [_create(cache, 0) for _ in range(2 * SHARDS)]
    assert all(session_id != 0 and cache.get(session_id) is not None for session_id in ids)
    assert [session_id // ID_RANGE for session_id in ids] == [*range(SHARDS)] * 2
    assert len(cache) == 2 * SHARDS and cache.total_partitions() == 2 * SHARDS


def test_fewer_slots_than_shards_hold_no_session() -> None:
    """Each shard holds ``slots // 8``: 7 slots make no room anywhere."""
    assert _create(FetchSessionCache(7, random.Random(1)), 0) == 0


def test_an_id_no_shard_covers_fails_as_kafka_s_lookup() -> None:
    cache = FetchSessionCache(1000, random.Random(1))
    assert cache.get(-5) is None  # Java's division: shard 0
    for session_id in ((1 << 31) - 1, -ID_RANGE):
        with pytest.raises(SessionIdOutOfRangeError):
            cache.get(session_id)


def test_the_epoch_wraps_to_one_and_the_final_epoch_stays() -> None:
    assert (next_epoch(0), next_epoch((1 << 31) - 1), next_epoch(-1)) == (1, 1, -1)


def _one_slot() -> FetchSessionCache:
    return FetchSessionCache(1, random.Random(1), shards=1)


def test_a_stale_session_makes_room_for_anyone() -> None:
    cache = _one_slot()
    old = _create(cache, 0, privileged=True, size=10)
    assert _create(cache, EVICTION_MS) == 0  # used EVICTION_MS ago: not stale yet
    new = _create(cache, EVICTION_MS + 1)
    assert new != 0 and cache.get(old) is None and cache.evictions == 1


def test_a_follower_s_session_evicts_a_consumer_s() -> None:
    cache = _one_slot()
    consumer = _create(cache, 0, size=10)
    assert _create(cache, 1, size=100) == 0  # a young session: consumers may not evict
    follower = _create(cache, 1, privileged=True, size=1)
    assert follower != 0 and cache.get(consumer) is None
    assert _create(cache, 2, privileged=True, size=100) == 0  # young and privileged


def test_an_old_session_is_evicted_by_a_larger_one_only() -> None:
    """Once older than EVICTION_MS (when last used), a session may be evicted by any
    newcomer worth more: more partitions at the same privilege."""
    cache = _one_slot()
    session = _create(cache, 0, size=2)
    cached = cache.get(session)
    assert cached is not None
    cache.touch(cached, EVICTION_MS + 1)
    assert _create(cache, EVICTION_MS + 2, size=2) == 0  # equal: the newcomer is id 0
    assert _create(cache, EVICTION_MS + 2, size=3) != 0 and cache.get(session) is None


@given(st.integers(0, 40), st.lists(st.tuples(
    st.sampled_from(["create", "touch", "remove"]), st.booleans(), st.integers(0, 5),
    st.integers(0, EVICTION_MS)), max_size=80))
def test_the_cache_stays_within_its_slots(slots: int, steps: list[tuple[str, bool, int, int]]
                                          ) -> None:
    """Whatever happens, each shard holds at most ``slots // 8`` sessions, ids are unique,
    non-zero and in their shard's range, and every session made is still there, evicted
    or removed."""
    cache = FetchSessionCache(slots, random.Random(0))
    now, made, removed = 0, 0, 0
    for action, privileged, size, elapsed in steps:
        now += elapsed
        live = sorted(session.id for session in cache)
        if action == "create":
            made += _create(cache, now, privileged=privileged, size=size) != 0
        elif live:
            session_id = live[size % len(live)]
            if action == "remove":
                removed += cache.remove(session_id) is not None
            else:
                session = cache.get(session_id)
                assert session is not None
                cache.touch(session, now)
        ids = [session.id for session in cache]
        assert len(ids) == len(set(ids)) and 0 not in ids
        for shard in range(SHARDS):
            assert sum(1 for i in ids if i // ID_RANGE == shard) <= slots // SHARDS
        assert made == len(ids) + cache.evictions + removed


# -- the contexts and the fetcher's handler together ------------------------------------------

UNIVERSE = [("a", 0), ("a", 1), ("b", 0), ("c", 3)]


def _answer(key: SessionKey, high_watermark: int, records: bytes = b"") -> PartitionData:
    return PartitionData(partition_index=key[1], high_watermark=high_watermark,
                         log_start_offset=0, records=records)


@given(st.lists(st.tuples(st.dictionaries(st.sampled_from(UNIVERSE), st.integers(0, 3)),
                          st.sampled_from(["answered", "lost", "closed"])),
                max_size=30))
def test_the_leader_s_session_follows_the_fetcher_s(
        steps: list[tuple[dict[SessionKey, int], str]]) -> None:
    """Each fetch the handler builds, applied by the leader's manager, leaves the session
    the handler believes in holding on the leader exactly the partitions and parameters it
    wants; a lost answer or a session the leader dropped costs a full fetch (after an
    error answer, applied by nothing), and a full fetch closes the session it names."""
    manager = FetchManager(FetchSessionCache(1000, random.Random(0)))
    handler = FetchSessionHandler()
    for now, (offsets, fate) in enumerate(steps):
        wanted = {key: FetchPartition(partition=key[1], fetch_offset=offset)
                  for key, offset in offsets.items()}
        request = handler.build(wanted)
        context = manager.new_context(13, request.session_id, request.epoch,
                                      privileged=True, fetch_data=request.to_send,
                                      forgotten=request.to_forget, now_ms=now)
        answers = [(key, _answer(key, now)) for key, _ in context.partitions]
        error, session_id, kept = context.respond(answers, now)
        if request.full and request.session_id:
            assert manager.cache.get(request.session_id) is None
        if fate == "lost":
            handler.handle_error()
            continue
        if fate == "closed" and session_id:
            manager.cache.remove(session_id)
        applied = handler.handle_response(error, session_id, (key for key, _ in kept))
        assert applied == (error == ErrorCode.NONE)
        if applied and session_id and fate != "closed":
            session = manager.cache.get(handler.session_id)
            assert session is not None and session.epoch == handler.epoch
            assert {key: part.request for key, part in session.partitions.items()} == wanted


def test_an_idle_incremental_fetch_is_empty_both_ways() -> None:
    manager = FetchManager(FetchSessionCache(1000, random.Random(0)))
    handler = FetchSessionHandler()
    wanted: dict[SessionKey, FetchPartition] = {("a", 0): FetchPartition(partition=0,
                                                                       fetch_offset=5)}
    sizes = []
    for now, high_watermark in enumerate((5, 5, 6)):
        request = handler.build(wanted)
        context = manager.new_context(13, request.session_id, request.epoch,
                                      privileged=False, fetch_data=request.to_send,
                                      forgotten=request.to_forget, now_ms=now)
        error, session_id, kept = context.respond(
            [(key, _answer(key, high_watermark)) for key, _ in context.partitions], now)
        assert handler.handle_response(error, session_id, (key for key, _ in kept))
        sizes.append((len(request.to_send), len(kept)))
    assert sizes == [(1, 1), (0, 0), (0, 1)]  # the high watermark moved: answered


def test_session_errors_restart_the_fetcher_s_session() -> None:
    handler = FetchSessionHandler()
    handler.build({})
    assert handler.handle_response(ErrorCode.NONE, 42, [])
    assert (handler.session_id, handler.epoch) == (42, 1)
    assert not handler.handle_response(ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    assert (handler.session_id, handler.epoch) == (42, 0)  # closes 42 on the full fetch
    assert not handler.handle_response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
    assert (handler.session_id, handler.epoch) == (0, 0)
