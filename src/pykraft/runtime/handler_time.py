"""Handler time: how long the event loop spent on one request, what ``request_percentage``
(KIP-124) is checked against.

Kafka's request quota counts thread time: an I/O thread's from taking a request off the
queue until its response is sent or the request parks (``requestThreadTimeNanos``,
recorded and checked then), and a network thread's spent reading and writing it (recorded
later without throttling). A percentage is of one thread: 100 % is one thread busy all the
time. pykraft has one thread for all of it, the event loop's, so a request's handler time
is the loop time its connection's task spent running it: every step of the task from the
decoding of the frame to the writing of its answer, each step timed from the moment the
loop resumes the task until the task suspends again. Time suspended (a purgatory, the
controller's answer to a forwarded request, work on the codec thread, other connections'
turns) is not the request's; work other tasks do for it (a coordinator's shard, the replica
fetchers) is not either, as in Kafka a purgatory's or coordinator thread's is not. What
runs up to the throttle decision is recorded with throttling; the rest (encoding, the
write) afterwards without, as Kafka records its network thread's time
(:meth:`HandlerTime.finish`). 100 % stands for the loop's whole time, as for one of
Kafka's threads.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, TypeVar

from pykraft.security.session import Session

T = TypeVar("T")
CURRENT: contextvars.ContextVar[HandlerTime | None] = contextvars.ContextVar(
    "pykraft_handler_time", default=None)


class HandlerTime:
    """One request's loop time on ``session``'s connection (:meth:`run` times a step
    sequence; :meth:`so_far` reads it, the running step included)."""

    __slots__ = ("_clock", "_rest", "_started", "recorded_s", "session", "spent_s",
                 "throttle_ms")

    def __init__(self, session: Session,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.session = session
        self._clock = clock
        self.spent_s = 0.0
        self._started: float | None = None
        self.throttle_ms: int | None = None
        """The request quota's decision, once taken (it is taken once per request)."""
        self.recorded_s = 0.0
        """The time recorded with that decision."""
        self._rest: Callable[[float], None] | None = None

    def so_far(self) -> float:
        """Loop seconds spent on the request until now."""
        started = self._started
        return self.spent_s + (0.0 if started is None else self._clock() - started)

    def decided(self, throttle_ms: int, recorded_s: float,
                rest: Callable[[float], None]) -> None:
        """The quota recorded ``recorded_s`` and throttles for ``throttle_ms``; ``rest``
        records the time spent after (:meth:`finish`)."""
        self.throttle_ms = throttle_ms
        self.recorded_s = recorded_s
        self._rest = rest

    def finish(self) -> None:
        """The request is answered: the time after the decision goes to ``rest``."""
        if self._rest is not None:
            self._rest(max(self.spent_s - self.recorded_s, 0.0))

    async def run(self, step: Coroutine[Any, Any, T]) -> T:
        """``await step``, its steps on the loop added to :attr:`spent_s`."""
        return await _Stepped(step, self)


class _Stepped(Generic[T]):
    """Drives a coroutine step by step for the awaiting task, timing each step."""

    __slots__ = ("_coro", "_timed")

    def __init__(self, coro: Coroutine[Any, Any, T], timed: HandlerTime) -> None:
        self._coro = coro
        self._timed = timed

    def __await__(self) -> Generator[Any, Any, T]:
        coro, timed = self._coro, self._timed
        now = timed._clock
        value: Any = None
        error: BaseException | None = None
        while True:
            timed._started = started = now()
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                result: T = stop.value
                return result
            finally:
                timed.spent_s += now() - started
                timed._started = None
            try:
                value, error = (yield yielded), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # thrown in by the task (a cancellation too)
                value, error = None, exc
