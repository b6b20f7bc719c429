"""Delayed operations (Kafka's ``DelayedOperation`` and ``DelayedOperationPurgatory``),
sans-I/O: no event loop, no clock of its own.

Interface::

    class Op(DelayedOperation):
        def try_complete(self) -> bool:      # the condition; when it holds:
            return self.force_complete()     # ... complete (True the one time it does)
        def on_complete(self, expired): ...  # once: satisfied, or expired at the deadline

    produce = Purgatory("Produce")
    done = produce.try_complete_else_watch(op, keys)  # keys: e.g. topic partitions
    produce.check_and_complete(key)          # after an event that may satisfy the ops
    produce.expire(now_ms)                   # the runtime's timer, at next_deadline_ms()
    op.cancel()                              # its requester went away: no callback at all
    produce.watched, produce.delayed         # PurgatorySize, NumDelayedOperations

An operation ends exactly once: completed (``force_complete``), expired or cancelled,
whichever comes first; a completed one leaves every watch list at once. Each key's
operations are checked in the order they were watched (a group's replies are answered in
the order of their batches). Expiry is one heap per purgatory, driven by one timer of the
runtime (:mod:`pykraft.broker.purgatory_timer`), not a timeout per operation.

:class:`Purgatories` are a broker's three, checked in a fixed order on each partition
event: Produce, then Fetch, then the group coordinator's commits. So an acks=all produce
completed by a high watermark move is answered ahead of the fetches the same move wakes,
by construction (Kafka's ``ReplicaManager`` completes delayed produces before fetches).
"""

from __future__ import annotations

import heapq
import itertools
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class DelayedOperation(ABC):
    """One waiting request: its condition, its deadline (ms on the runtime's clock) and
    what to do once it ends."""

    def __init__(self, deadline_ms: int) -> None:
        self.deadline_ms = deadline_ms
        self._ended = False
        self._unwatch: Callable[[DelayedOperation], None] | None = None
        self.on_done: Callable[[bool], None] | None = None
        """Told once after :meth:`on_complete` (expired or not): the runtime's waiter."""

    @property
    def completed(self) -> bool:
        """Ended: completed, expired or cancelled."""
        return self._ended

    @abstractmethod
    def try_complete(self) -> bool:
        """Check the condition; when it holds return :meth:`force_complete`, else False."""

    @abstractmethod
    def on_complete(self, expired: bool) -> None:
        """The operation's work once it ends (its answer, its errors when ``expired``)."""

    def force_complete(self) -> bool:
        """Complete now, unless it already ended; True if this call completed it."""
        return self._end(expired=False)

    def expire(self) -> bool:
        """End as expired, unless it already ended (the purgatory's timer calls it)."""
        return self._end(expired=True)

    def cancel(self) -> bool:
        """End without any callback (its requester is gone); True if it was waiting."""
        if self._ended:
            return False
        self._ended = True
        self._leave()
        return True

    def _end(self, *, expired: bool) -> bool:
        if self._ended:
            return False
        self._ended = True
        self._leave()
        self.on_complete(expired)
        if self.on_done is not None:
            self.on_done(expired)
        return True

    def _leave(self) -> None:
        if self._unwatch is not None:
            unwatch, self._unwatch = self._unwatch, None
            unwatch(self)


class Purgatory(Generic[K]):
    """Operations watched by key until they complete, expire or are cancelled."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[K, dict[DelayedOperation, None]] = {}
        self._keys: dict[DelayedOperation, tuple[K, ...]] = {}
        self._deadlines: list[tuple[int, int, DelayedOperation]] = []
        self._order = itertools.count()
        self._watched = 0  # kept, not summed: the metrics' scrape thread reads it

    @property
    def watched(self) -> int:
        """Watch entries over all keys (Kafka's ``PurgatorySize``)."""
        return self._watched

    @property
    def delayed(self) -> int:
        """Operations waiting (Kafka's ``NumDelayedOperations``)."""
        return len(self._keys)

    def watching(self, key: K) -> int:
        """How many operations wait on ``key``."""
        return len(self._watchers.get(key, ()))

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[K]) -> bool:
        """Complete ``op`` now if its condition holds (True), else watch it under each of
        ``keys`` until it completes or its deadline passes (False)."""
        if op.completed:
            raise ValueError("the operation already ended")
        if op.try_complete():
            return True
        watched = tuple(dict.fromkeys(keys))
        self._keys[op] = watched
        for key in watched:
            self._watchers.setdefault(key, {})[op] = None
        self._watched += len(watched)
        op._unwatch = self._forget
        heapq.heappush(self._deadlines, (op.deadline_ms, next(self._order), op))
        return False

    def check_and_complete(self, key: K) -> int:
        """Try the operations watching ``key``, in watch order; how many completed."""
        ops = self._watchers.get(key)
        if not ops:
            return 0
        return sum(1 for op in list(ops) if not op.completed and op.try_complete())

    def expire(self, now_ms: int) -> int:
        """Expire the operations whose deadline is ``now_ms`` or earlier; how many."""
        expired = 0
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, _, op = heapq.heappop(self._deadlines)
            expired += op.expire()
        return expired

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline of a waiting operation (None: none waits)."""
        while self._deadlines and self._deadlines[0][2].completed:
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None

    def _forget(self, op: DelayedOperation) -> None:
        keys = self._keys.pop(op, ())
        self._watched -= len(keys)
        for key in keys:
            ops = self._watchers[key]
            del ops[op]
            if not ops:
                del self._watchers[key]
        if len(self._deadlines) > 2 * len(self._keys) + 64:  # ended ops' entries pile up
            self._deadlines = [entry for entry in self._deadlines if not entry[2].completed]
            heapq.heapify(self._deadlines)


@dataclass(frozen=True, slots=True)
class FollowerKey:
    """A follower's fetch waits on it for partitions this broker starts leading that the
    follower replicates (its request cannot name them yet)."""

    replica_id: int


class Purgatories(Generic[K]):
    """A broker's purgatories, keyed by partition, and the events that check them."""

    def __init__(self) -> None:
        self.produce: Purgatory[K] = Purgatory("Produce")
        self.fetch: Purgatory[K | FollowerKey] = Purgatory("Fetch")
        self.group: Purgatory[K] = Purgatory("GroupCommit")
        self.led: Counter[int] = Counter()
        """Per replica id, how many partitions replicated by it this broker started to
        lead: a parked follower fetch completes when its replica's count moves."""

    def __iter__(self) -> Iterator[Purgatory[K] | Purgatory[K | FollowerKey]]:
        return iter((self.produce, self.fetch, self.group))

    def partition_changed(self, key: K) -> None:
        """An append, a high watermark or log start move, a leadership or ISR change, a
        deletion: acks=all produces first, then fetches, then group replies."""
        self.produce.check_and_complete(key)
        self.fetch.check_and_complete(key)
        self.group.check_and_complete(key)

    def started_leading(self, replicas: Iterable[int]) -> None:
        """This broker leads a partition replicated by ``replicas`` (from now on)."""
        for replica in replicas:
            self.led[replica] += 1
            self.fetch.check_and_complete(FollowerKey(replica))

    def expire(self, now_ms: int) -> int:
        return sum(purgatory.expire(now_ms) for purgatory in self)

    def next_deadline_ms(self) -> int | None:
        deadlines = [d for d in (p.next_deadline_ms() for p in self) if d is not None]
        return min(deadlines, default=None)
