"""Prometheus metrics with Kafka's raft metric names (``raft-metrics`` group).

Kafka exposes them over JMX as ``kafka.server:type=raft-metrics`` attributes such as
``current-leader``; the usual JMX-exporter spelling of those is used here
(``kafka_server_raft_metrics_current_leader``), so dashboards built for Kafka find them.
KIP-853's ``IsObserver`` and ``IgnoredStaticVoters`` are ``kafka.controller:type=
KafkaController`` metrics, spelled ``kafka_controller_kafkacontroller_isobserver`` etc.
As in Kafka, ``number-of-observers`` and ``uncommitted-voter-change`` exist on the leader
only, and the controller metrics on controllers only.
Averages, maxima and rates are over a sliding window, like Kafka's sampled stats. The
loop thread updates plain attributes; the scrape thread only reads them.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol
from wsgiref.simple_server import WSGIServer

from prometheus_client import start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

PREFIX = "kafka_server_raft_metrics_"
#: ``kafka.controller:type=KafkaController`` (Kafka's ControllerMetadataMetrics), controllers only.
CONTROLLER_PREFIX = "kafka_controller_kafkacontroller_"
#: ``kafka.server:type=DelayedOperationPurgatory`` (a broker's), by ``delayedOperation``.
PURGATORY_PREFIX = "kafka_server_delayedoperationpurgatory_"
WINDOW_S = 30.0
#: How long a scrape waits for the loop to compute its families (a loop held that long is
#: a scrape error, not a hung scraper).
LOOP_SCRAPE_TIMEOUT_S = 10.0
STATES = ("unattached", "prospective", "candidate", "leader", "follower", "resigned")


class WindowedStat:
    """Samples of the last ``window_s`` seconds: sum, count, max and rate."""

    def __init__(self, window_s: float = WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._window_s = window_s
        self._clock = clock
        self._samples: collections.deque[tuple[float, float]] = collections.deque()

    def record(self, value: float) -> None:
        self._samples.append((self._clock(), value))
        self._expire()

    def _expire(self) -> None:
        horizon = self._clock() - self._window_s
        while self._samples and self._samples[0][0] < horizon:
            self._samples.popleft()

    def _values(self) -> list[float]:
        self._expire()
        return [value for _, value in self._samples]

    def avg(self) -> float:
        values = self._values()
        return sum(values) / len(values) if values else float("nan")

    def max(self) -> float:
        values = self._values()
        return max(values) if values else float("nan")

    def rate(self) -> float:
        """Sum per second over the window."""
        return sum(self._values()) / self._window_s


@dataclass(slots=True)
class RaftGauges:
    """Point-in-time values, refreshed by the node after every core step."""

    current_leader: int = -1
    current_epoch: int = 0
    current_vote: int = -1
    current_state: str = "unattached"
    high_watermark: int = -1
    log_end_offset: int = 0
    log_end_epoch: int = 0
    committed_records: int = 0
    number_of_voters: int = 0
    # KIP-853: leader-only in Kafka (None elsewhere: not exported)
    number_of_observers: int | None = None
    uncommitted_voter_change: bool | None = None
    # KIP-853: controllers only (None on a broker-only node: not exported)
    is_observer: bool | None = None
    ignored_static_voters: bool | None = None


class RaftMetrics:
    """Everything the node measures; :meth:`collect` renders it for Prometheus."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.gauges = RaftGauges()
        self.commit_latency_ms = WindowedStat(clock=clock)
        self.election_latency_ms = WindowedStat(clock=clock)
        self.append_records = WindowedStat(clock=clock)
        self.fetch_records = WindowedStat(clock=clock)
        self.busy_s = WindowedStat(clock=clock)

    def poll_idle_ratio(self) -> float:
        return max(0.0, 1.0 - self.busy_s.rate())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        g = self.gauges
        plain = {
            "current_leader": (g.current_leader, "Current leader id, -1 if unknown"),
            "current_epoch": (g.current_epoch, "Current quorum epoch"),
            "current_vote": (g.current_vote, "Voted-for id in this epoch, -1 if none"),
            "high_watermark": (g.high_watermark, "High watermark, -1 if unknown"),
            "log_end_offset": (g.log_end_offset, "Log end offset"),
            "log_end_epoch": (g.log_end_epoch, "Epoch of the last record"),
            "commit_latency_avg": (self.commit_latency_ms.avg(), "Append-to-commit ms, avg"),
            "commit_latency_max": (self.commit_latency_ms.max(), "Append-to-commit ms, max"),
            "election_latency_avg": (self.election_latency_ms.avg(), "Election ms, avg"),
            "election_latency_max": (self.election_latency_ms.max(), "Election ms, max"),
            "append_records_rate": (self.append_records.rate(), "Records appended as leader/s"),
            "fetch_records_rate": (self.fetch_records.rate(), "Records fetched as follower/s"),
            "poll_idle_ratio_avg": (self.poll_idle_ratio(), "Share of time the loop is idle"),
            "committed_records": (g.committed_records, "Committed data records (counter SM)"),
            "number_of_voters": (g.number_of_voters, "Voters of the metadata partition"),
        }
        for name, (value, doc) in plain.items():
            yield GaugeMetricFamily(PREFIX + name, doc, value=value)
        optional = {
            PREFIX + "number_of_observers": (
                g.number_of_observers, "Observers the leader is tracking (leader only)"),
            PREFIX + "uncommitted_voter_change": (
                g.uncommitted_voter_change, "1 if a voter change is not committed yet"),
            CONTROLLER_PREFIX + "isobserver": (
                g.is_observer, "1 if this controller is not a voter (an observer)"),
            CONTROLLER_PREFIX + "ignoredstaticvoters": (
                g.ignored_static_voters,
                "1 if controller.quorum.voters is set but the voters come from the log"),
        }
        for full_name, (maybe, doc) in optional.items():
            if maybe is not None:
                yield GaugeMetricFamily(full_name, doc, value=float(maybe))
        state = GaugeMetricFamily(PREFIX + "current_state", "Current raft state (1 = current)",
                                  labels=["state"])
        for name in STATES:
            state.add_metric([name], 1.0 if name == g.current_state else 0.0)
        yield state


class PurgatoryGauges(Protocol):
    """What a purgatory of delayed operations shows (a broker's Produce, Fetch, ...)."""

    @property
    def name(self) -> str: ...

    @property
    def watched(self) -> int: ...

    @property
    def delayed(self) -> int: ...


def purgatory_metrics(purgatories: Iterable[PurgatoryGauges]) -> Iterator[GaugeMetricFamily]:
    """Kafka's ``PurgatorySize`` (watch entries) and ``NumDelayedOperations`` per
    purgatory, labelled ``delayedOperation`` as the JMX exporter spells the key."""
    size = GaugeMetricFamily(PURGATORY_PREFIX + "purgatorysize",
                             "Delayed operations' watch entries over all keys",
                             labels=["delayedOperation"])
    delayed = GaugeMetricFamily(PURGATORY_PREFIX + "numdelayedoperations",
                                "Delayed operations waiting", labels=["delayedOperation"])
    for purgatory in purgatories:
        size.add_metric([purgatory.name], float(purgatory.watched))
        delayed.add_metric([purgatory.name], float(purgatory.delayed))
    yield size
    yield delayed


class LoopCollector(Collector):
    """Families computed on the event loop's thread when scraped, from state only that
    thread changes (the scrape's thread waits for them): gauges computed from the
    partitions, and counters the loop increments without a lock."""

    def __init__(self, loop: asyncio.AbstractEventLoop,
                 families: Sequence[Callable[[], Iterable[Metric]]],
                 timeout_s: float = LOOP_SCRAPE_TIMEOUT_S) -> None:
        self._loop = loop
        self._families = families
        self._timeout_s = timeout_s

    def _compute(self) -> list[Metric]:
        return [family for source in self._families for family in source()]

    def collect(self) -> Iterator[Metric]:
        future: concurrent.futures.Future[list[Metric]] = concurrent.futures.Future()

        def compute() -> None:
            try:
                future.set_result(self._compute())
            except BaseException as exc:  # the scrape's thread reports it
                future.set_exception(exc)
        try:
            self._loop.call_soon_threadsafe(compute)
        except RuntimeError:  # the loop closed: the process is stopping
            return
        yield from future.result(self._timeout_s)


class _MetricsCollector(Collector):
    def __init__(self, metrics: RaftMetrics, purgatories: tuple[PurgatoryGauges, ...]) -> None:
        self._metrics = metrics
        self._purgatories = purgatories

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self._metrics.collect()
        if self._purgatories:
            yield from purgatory_metrics(self._purgatories)


def serve_metrics(metrics: RaftMetrics, host: str, port: int,
                  purgatories: Iterable[PurgatoryGauges] = (),
                  on_loop: Sequence[Callable[[], Iterable[Metric]]] = ()) -> WSGIServer:
    """Expose ``/metrics`` on ``host:port`` from a daemon thread; returns its server (its
    ``shutdown`` stops it). A broker's ``purgatories`` add their sizes; ``on_loop``
    families are computed on the running loop (:class:`LoopCollector`)."""
    registry = CollectorRegistry()
    registry.register(_MetricsCollector(metrics, tuple(purgatories)))
    if on_loop:
        registry.register(LoopCollector(asyncio.get_running_loop(), on_loop))
    server, _ = start_http_server(port, addr=host, registry=registry)
    return server
