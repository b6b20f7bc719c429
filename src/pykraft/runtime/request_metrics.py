"""Kafka's request metrics (``kafka.network:type=RequestMetrics``) and the request
channel's gauges, for one process's listeners.

Per request type (``request=Produce``: the api key's name as Kafka spells it; a Fetch also
as ``FetchConsumer`` or ``FetchFollower``, as Kafka records it twice): ``RequestsPerSec`` by
``version``, ``ErrorsPerSec`` by ``error`` (every error code the response carries, NONE
included, as Kafka's ``errorCounts`` walks them), and the six times as histograms in ms.
pykraft has no network threads, request queue or handler pool: each connection's task on
the event loop reads a request, answers it and writes the answer, so Kafka's times map
onto that task's life:

- RequestQueueTimeMs: from the frame's last bytes reaching the connection to its task
  taking it up: the loop's lag, where Kafka's request waits for a handler thread;
- LocalTimeMs: the handling, less RemoteTimeMs;
- RemoteTimeMs: waiting in a purgatory (acks=all produce, long-poll fetch), as Kafka's;
- ResponseQueueTimeMs: always 0, the task writes its own answer (no response queue);
- ResponseSendTimeMs: writing the answer until the socket took it;
- TotalTimeMs: from the last bytes in to the answer written.

``RequestChannel`` ``RequestQueueSize``: requests read and not answered, less those parked
in a purgatory (Kafka holds those outside its queue too). ``SocketServer``
``NetworkProcessorAvgIdlePercent`` (a ratio, as Kafka's despite its name): the share of
wall time since the previous scrape that the loop's thread spent off the CPU, its one
network processor and handler being that thread.

Cheap on the hot path: a few clock reads and counter increments per request; the response
object is only referenced (:func:`note_response`) and its errors counted once answered.
Everything here runs on the loop; the scrape reads it there too
(:class:`~pykraft.runtime.metrics.LoopCollector`).
"""

from __future__ import annotations

import contextvars
import time
from bisect import bisect_left as _bisect
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from pykraft.messages.schema import ArrayOf, MessageSchema, schema_of
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.error_codes import ErrorCode
from pykraft.runtime.jmx_names import prometheus_name
from pykraft.runtime.request_queue import RequestQueue

#: Histogram bounds in ms: a Produce at acks=1 takes well under 1 ms, a long-poll Fetch
#: its max.wait.ms (500 ms by default), a request timing out 30 s.
BUCKETS_MS = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0,
              2500.0, 5000.0, 10000.0, 30000.0)
TIMES = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseQueueTimeMs",
         "ResponseSendTimeMs", "TotalTimeMs")


def _request_name(key: ApiKey) -> str:
    """Kafka's ``ApiKeys`` name: LIST_OFFSETS is ListOffsets."""
    return "".join(part.capitalize() for part in key.name.split("_"))


_NAMES = {int(key): _request_name(key) for key in ApiKey}


@dataclass(slots=True)
class RequestTimes:
    """One request's, shared with its handler through :data:`CURRENT`."""

    owner: RequestMetrics
    remote_s: float = 0.0
    response: object = None
    also: str | None = None
    """A second request name it is also recorded under (FetchConsumer, FetchFollower)."""
    is_parked: bool = False
    queue: RequestQueue | None = None
    """The request queue it holds a place in, until it parks or is answered."""

    def dequeue(self) -> None:
        """Give up its place in the request queue (once)."""
        if self.queue is not None:
            self.queue.leave()
            self.queue = None


CURRENT: contextvars.ContextVar[RequestTimes | None] = contextvars.ContextVar(
    "pykraft_request_times", default=None)


def note_response(response: object) -> None:
    """The response of the request being served (its errors are counted once sent)."""
    times = CURRENT.get()
    if times is not None:
        times.response = response


class parked:  # noqa: N801 - used as a function: ``with parked():``
    """The request being served waits in a purgatory meanwhile: its remote time, and out
    of the request queue's size (a class: cheaper than a generator's context manager)."""

    __slots__ = ("_started", "_times")

    def __enter__(self) -> None:
        times = CURRENT.get()
        self._times = times = None if times is None or times.is_parked else times
        if times is not None:  # a wait inside another counts once
            times.is_parked = True
            self._started = time.monotonic()
            times.owner.parked += 1
            times.dequeue()  # out of Kafka's request queue while in a purgatory

    def __exit__(self, *_: object) -> None:
        times = self._times
        if times is not None:
            times.is_parked = False
            times.owner.parked -= 1
            times.remote_s += time.monotonic() - self._started


def also_named(name: str) -> None:
    """Record the request being served under ``name`` as well."""
    times = CURRENT.get()
    if times is not None:
        times.also = name


_WIDTH = len(BUCKETS_MS) + 1
_BOUNDS = (*map(str, BUCKETS_MS), "+Inf")


@dataclass(slots=True)
class _RequestStats:
    """One request type's counts; the six histograms' buckets in one flat list (time
    ``i``'s at ``i * _WIDTH``), so a request is a few index increments."""

    by_version: dict[int, int] = field(default_factory=dict)
    errors: dict[int, int] = field(default_factory=dict)
    counts: list[int] = field(default_factory=lambda: [0] * (_WIDTH * len(TIMES)))
    sums: list[float] = field(default_factory=lambda: [0.0] * len(TIMES))

    def buckets(self, time_index: int) -> list[tuple[str, float]]:
        cumulative, found = 0, []
        start = time_index * _WIDTH
        for bound, count in zip(_BOUNDS, self.counts[start:start + _WIDTH], strict=True):
            cumulative += count
            found.append((bound, float(cumulative)))
        return found


class RequestMetrics:
    """The process's request metrics: :meth:`begin`, :meth:`record` and :meth:`end` for
    each request read."""

    def __init__(self) -> None:
        self._stats: dict[str, _RequestStats] = {}
        self._in_flight = 0
        self.parked = 0
        """Requests of :attr:`_in_flight` waiting in a purgatory (:func:`parked`)."""
        self._idle = _LoopIdle()

    def begin(self, queue: RequestQueue | None = None
              ) -> tuple[RequestTimes, contextvars.Token[RequestTimes | None]]:
        """A request read: in flight until :meth:`end`; its times go to :data:`CURRENT`
        for the handler's purgatory waits and response. It holds a place in ``queue``
        (admitted already) until it parks or ends."""
        times = RequestTimes(self, queue=queue)
        self._in_flight += 1
        return times, CURRENT.set(times)

    def end(self, token: contextvars.Token[RequestTimes | None]) -> None:
        """The request of ``token`` answered or abandoned."""
        self._in_flight -= 1
        times = CURRENT.get()
        if times is not None:
            times.dequeue()
        CURRENT.reset(token)

    def record(self, api_key: int, version: int, times: RequestTimes, *, arrived: float,
               started: float, handled: float, sent: float) -> None:
        """A request answered: read by ``arrived``, taken up at ``started``, its answer
        ready at ``handled`` and written at ``sent`` (``time.monotonic()`` seconds)."""
        remote = min(times.remote_s, handled - started) * 1000
        queue = (started - arrived) * 1000
        local = (handled - started) * 1000 - remote
        send = (sent - handled) * 1000
        total = (sent - arrived) * 1000
        slots = (_bisect(BUCKETS_MS, queue), _WIDTH + _bisect(BUCKETS_MS, local),
                 2 * _WIDTH + _bisect(BUCKETS_MS, remote), 3 * _WIDTH,  # no response queue
                 4 * _WIDTH + _bisect(BUCKETS_MS, send), 5 * _WIDTH + _bisect(BUCKETS_MS, total))
        errors = error_counts(times.response) if times.response is not None else None
        name = _NAMES.get(api_key) or str(api_key)
        for each in (name, times.also) if times.also else (name,):
            stats = self._stats.get(each)
            if stats is None:
                stats = self._stats[each] = _RequestStats()
            by_version = stats.by_version
            by_version[version] = by_version.get(version, 0) + 1
            if errors:
                counted = stats.errors
                for code, count in errors.items():
                    counted[code] = counted.get(code, 0) + count
            counts = stats.counts
            for slot in slots:
                counts[slot] += 1
            sums = stats.sums
            sums[0] += queue
            sums[1] += local
            sums[2] += remote
            sums[4] += send
            sums[5] += total

    def families(self) -> Iterator[Metric]:
        """The Prometheus families (on the loop: the scrape's :class:`LoopCollector`)."""
        requests = CounterMetricFamily(
            prometheus_name("kafka.network", "RequestMetrics", "RequestsPerSec"),
            "Requests answered, by request type and version", labels=["request", "version"])
        errors = CounterMetricFamily(
            prometheus_name("kafka.network", "RequestMetrics", "ErrorsPerSec"),
            "Error codes in responses (NONE included), by request type and error",
            labels=["request", "error"])
        times = [HistogramMetricFamily(
            prometheus_name("kafka.network", "RequestMetrics", name),
            f"Kafka's {name} of a request (ms; see pykraft.runtime.request_metrics)",
            labels=["request"]) for name in TIMES]
        for name, stats in sorted(self._stats.items()):
            for version, count in sorted(stats.by_version.items()):
                requests.add_metric([name, str(version)], count)
            for code, count in sorted(stats.errors.items()):
                errors.add_metric([name, _error_name(code)], count)
            for index, family in enumerate(times):
                family.add_metric([name], stats.buckets(index), stats.sums[index])
        yield requests
        yield errors
        yield from times
        yield GaugeMetricFamily(
            prometheus_name("kafka.network", "RequestChannel", "RequestQueueSize"),
            "Requests read and not answered, less those waiting in a purgatory",
            value=self._in_flight - self.parked)
        yield GaugeMetricFamily(
            prometheus_name("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent"),
            "Share (0-1) of the time since the previous scrape the event loop's thread was "
            "off the CPU", value=self._idle.ratio())


class _LoopIdle:
    """The loop thread's idle share since the previous reading, or since it was made (made
    and read on that thread: ``time.thread_time`` is the calling thread's)."""

    def __init__(self) -> None:
        self._last = (time.monotonic(), time.thread_time())

    def ratio(self) -> float:
        now = (time.monotonic(), time.thread_time())
        last, self._last = self._last, now
        if now[0] <= last[0]:
            return 1.0
        busy = (now[1] - last[1]) / (now[0] - last[0])
        return min(max(1.0 - busy, 0.0), 1.0)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


# -- the error codes of a response ----------------------------------------------------------

#: Per message class: its ErrorCode fields, its struct fields and its struct-array fields
#: that hold error codes somewhere below (None: none at all).
_Plan = tuple[tuple[str, ...], tuple[tuple[str, "_Plan"], ...],
              tuple[tuple[str, "_Plan"], ...]]
_PLANS: dict[type, _Plan | None] = {}


def error_counts(response: object) -> dict[int, int]:
    """Every ``ErrorCode`` field of ``response``, counted by code (an object that is no
    Kafka message: none)."""
    counts: dict[int, int] = {}
    plan = _PLANS[type(response)] if type(response) in _PLANS else _plan_of(type(response))
    if plan is not None:
        _count(response, plan, counts)
    return counts


def _count(message: object, plan: _Plan, counts: dict[int, int]) -> None:
    codes, structs, arrays = plan
    for attr in codes:
        code = getattr(message, attr)
        counts[code] = counts.get(code, 0) + 1
    for attr, inner in structs:
        value = getattr(message, attr)
        if value is not None:
            _count(value, inner, counts)
    for attr, inner in arrays:
        for element in getattr(message, attr) or ():
            _count(element, inner, counts)


def _plan_of(cls: type) -> _Plan | None:
    if cls in _PLANS:
        return _PLANS[cls]
    try:
        schema = schema_of(cls)
    except TypeError:
        _PLANS[cls] = None
        return None
    _PLANS[cls] = None  # a recursive schema (none in Kafka's) ends here
    plan = _plan_of_schema(schema)
    _PLANS[cls] = plan
    return plan


def _plan_of_schema(schema: MessageSchema) -> _Plan | None:
    codes, structs, arrays = [], [], []
    for spec in schema.fields:
        kind = spec.type
        if isinstance(kind, MessageSchema):
            inner = _plan_of(kind.cls)
            if inner is not None:
                structs.append((spec.attr, inner))
        elif isinstance(kind, ArrayOf) and isinstance(kind.element, MessageSchema):
            inner = _plan_of(kind.element.cls)
            if inner is not None:
                arrays.append((spec.attr, inner))
        elif spec.kafka_name == "ErrorCode":
            codes.append(spec.attr)
    if not (codes or structs or arrays):
        return None
    return tuple(codes), tuple(structs), tuple(arrays)
