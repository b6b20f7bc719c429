"""The leader's cache of fetch sessions (KIP-227): Kafka's ``FetchSessionCache`` and its
``FetchSessionCacheShard``s, sans I/O (time comes in as ``now_ms``, session ids from an
injected :class:`random.Random`).

Interface::

    cache = FetchSessionCache(slots, rng)      # max.incremental.fetch.session.cache.slots
    session_id = cache.create(now_ms, privileged=..., uses_topic_ids=..., partitions=...)
    session = cache.get(session_id)            # None: unknown (FETCH_SESSION_ID_NOT_FOUND)
    cache.touch(session, now_ms)               # after a use: its recency and size
    cache.remove(session_id)

Kafka's rules (``BrokerServer``, ``FetchSessionCacheShard``): the cache is split into
:data:`SHARDS` shards of ``slots // SHARDS`` sessions each (so fewer than 8 slots hold no
session at all); shard ``n`` draws its ids at random from ``[max(1, n * range), (n + 1) *
range)`` with ``range = (2**31 - 1) // SHARDS``, and a session id names its shard by Java's
integer division (an id outside every shard's range makes Kafka's lookup throw: see
:class:`SessionIdOutOfRangeError`). New sessions go to the shards in turn. A full shard makes
room by evicting, in this order: the least recently used session if unused for more than
:data:`EVICTION_MS`; else the least valuable evictable one, if the newcomer is worth more
(ordered by privileged, a follower's, over not, then by partition count, then by id; a
session becomes evictable by a privileged newcomer when not privileged itself or older
than :data:`EVICTION_MS`, by any newcomer only when older than that, both judged when it
was last used). The memory is bounded by the slots: at most ``slots`` sessions, each as
large as the fetch that made or grew it.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from pykraft.messages.kafka.fetch_request import FetchPartition

SHARDS = 8  # KafkaBroker.NumFetchSessionCacheShards
EVICTION_MS = 120_000  # KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
INVALID_SESSION_ID = 0
_INT_MAX = (1 << 31) - 1

#: A session's partition: its topic (by name before Fetch v13, by id from v13) and index.
SessionKey = tuple[str | uuid.UUID, int]


class SessionIdOutOfRangeError(LookupError):
    """A session id no shard covers (negative beyond the first range, or at the top of
    the int range): Kafka's ``getCacheShard`` indexes past its shard list and the Fetch
    fails with UNKNOWN_SERVER_ERROR."""


@dataclass(slots=True)
class CachedPartition:
    """A partition of a session: the fetcher's last parameters for it (Kafka keeps them
    so an incremental fetch need not repeat them), and the high watermark and log start
    last answered (-1 until answered, and the high watermark again after an error, so
    the partition is answered once the error goes away)."""

    request: FetchPartition
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclass(slots=True, eq=False)
class FetchSession:
    """One session: its partitions in fetch order, and the epoch the next incremental
    fetch must carry."""

    id: int
    privileged: bool
    uses_topic_ids: bool
    creation_ms: int
    partitions: dict[SessionKey, CachedPartition]
    epoch: int = 1
    last_used_ms: int = 0
    #: as of the last touch: the partition count, and by whom it may be evicted
    cached_size: int = -1
    evictable_by_privileged: bool = False
    evictable_by_all: bool = False

    def value(self) -> tuple[bool, int, int]:
        """Kafka's ``EvictableKey``: the lesser session is evicted first."""
        return self.privileged, self.cached_size, self.id


def next_epoch(epoch: int) -> int:
    """``FetchMetadata.nextEpoch``: wraps from Int.MaxValue to 1; a negative epoch stays
    the final one."""
    if epoch < 0:
        return -1
    return 1 if epoch == _INT_MAX else epoch + 1


@dataclass(slots=True)
class _Shard:
    max_entries: int
    number: int
    sessions: dict[int, FetchSession] = field(default_factory=dict)


class FetchSessionCache:
    """Sessions by id, in :data:`SHARDS` shards, each bounded."""

    def __init__(self, slots: int, rng: random.Random, *, shards: int = SHARDS,
                 eviction_ms: int = EVICTION_MS) -> None:
        self._rng = rng
        self._eviction_ms = eviction_ms
        self._id_range = _INT_MAX // shards
        self._shards = [_Shard(slots // shards, n) for n in range(shards)]
        self._turn = 0
        self.evictions = 0
        """How many sessions were evicted (Kafka's IncrementalFetchSessionEvictionsPerSec)."""

    def __len__(self) -> int:
        return sum(len(shard.sessions) for shard in self._shards)

    def __iter__(self) -> Iterator[FetchSession]:
        for shard in self._shards:
            yield from shard.sessions.values()

    def _shard_of(self, session_id: int) -> _Shard:
        quotient = abs(session_id) // self._id_range  # Java's division truncates
        index = -quotient if session_id < 0 else quotient
        if not 0 <= index < len(self._shards):
            raise SessionIdOutOfRangeError(f"no fetch session cache shard holds id {session_id}")
        return self._shards[index]

    def get(self, session_id: int) -> FetchSession | None:
        return self._shard_of(session_id).sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        return self._shard_of(session_id).sessions.pop(session_id, None)

    def create(self, now_ms: int, *, privileged: bool, uses_topic_ids: bool,
               partitions: dict[SessionKey, CachedPartition]) -> int:
        """A new session's id in the next shard, evicting one if that shard is full and
        Kafka's rules allow; :data:`INVALID_SESSION_ID` if there is no room."""
        shard = self._shards[self._turn % len(self._shards)]
        self._turn += 1
        if (len(shard.sessions) >= shard.max_entries
                and not self._evict(shard, privileged, len(partitions), now_ms)):
            return INVALID_SESSION_ID
        session = FetchSession(self._new_id(shard), privileged, uses_topic_ids, now_ms,
                               partitions)
        shard.sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def _new_id(self, shard: _Shard) -> int:
        low = max(1, shard.number * self._id_range)
        while True:
            session_id = self._rng.randrange(low, (shard.number + 1) * self._id_range)
            if session_id not in shard.sessions:
                return session_id

    def _evict(self, shard: _Shard, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's ``tryEvict``: a stale session, else a less valuable evictable one."""
        if not shard.sessions:
            return False
        stalest = min(shard.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self._eviction_ms:
            return self._evicted(shard, stalest)
        evictable = [s for s in shard.sessions.values()
                     if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not evictable:
            return False
        least = min(evictable, key=FetchSession.value)
        if (privileged, size, 0) < least.value():
            return False
        return self._evicted(shard, least)

    def _evicted(self, shard: _Shard, session: FetchSession) -> bool:
        del shard.sessions[session.id]
        self.evictions += 1
        return True

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Record a use: the session's recency, size and evictability as of ``now_ms``."""
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.creation_ms > self._eviction_ms
        session.evictable_by_privileged = not session.privileged or old
        session.evictable_by_all = old

    def total_partitions(self) -> int:
        """Kafka's NumIncrementalFetchPartitionsCached."""
        return sum(session.cached_size for session in self)
