"""The asyncio driver of pykraft's fast failover: the decisions (who to probe, when, what a
round of probes means) are :class:`pykraft.controller.broker_liveness.LivenessWatch`'s;
this module does the TCP connects and the timers, and hands the controller the evidence.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable

from pykraft.controller.broker_liveness import (
    PROBE_ROUNDS,
    PROBE_SPACING_MS,
    LivenessWatch,
    Probe,
    ProbeAgain,
    ProbeOutcome,
    Report,
    incarnation_of,
)
from pykraft.image.cluster_image import BrokerRegistration
from pykraft.runtime.logfmt import event

log = logging.getLogger("pykraft.liveness")
#: A probe that neither connects nor is refused within this long is no evidence.
CONNECT_TIMEOUT_S = 1.0


async def probe_endpoint(host: str, port: int,
                         timeout_s: float = CONNECT_TIMEOUT_S) -> ProbeOutcome:
    """What a TCP connect to ``host:port`` sees (an accepted one is closed at once)."""
    try:
        async with asyncio.timeout(timeout_s):
            _, writer = await asyncio.open_connection(host, port)
    except ConnectionRefusedError:
        return ProbeOutcome.REFUSED
    except TimeoutError:
        return ProbeOutcome.TIMED_OUT
    except OSError:
        return ProbeOutcome.FAILED
    writer.close()
    return ProbeOutcome.ACCEPTED


class BrokerLiveness:
    """Feeds a :class:`LivenessWatch` the heartbeats and closed connections of the
    controller's listener, runs the probes it decides on and its overdue checks, and tells
    ``report(broker_id, epoch)`` (True if it fenced) when a broker's listeners all refused.
    ``registration`` looks a broker up in the controller's current image, ``unfenced``
    lists its unfenced brokers."""

    def __init__(self, registration: Callable[[int], BrokerRegistration | None],
                 report: Callable[[int, int], bool], *,
                 unfenced: Callable[[], Iterable[int]] = tuple,
                 overdue_s: float | None = None,
                 rounds: int = PROBE_ROUNDS, spacing_s: float = PROBE_SPACING_MS / 1000,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._watch = LivenessWatch(
            lambda broker_id: incarnation_of(registration(broker_id)), unfenced=unfenced,
            overdue_ms=None if overdue_s is None else overdue_s * 1000, rounds=rounds,
            spacing_ms=spacing_s * 1000)
        self._report = report
        self._connect_timeout_s = connect_timeout_s
        self._clock = clock
        self._probing: dict[tuple[int, int], asyncio.Task[None]] = {}
        """(broker, epoch) -> its probe under way."""
        self._watchdog: asyncio.Task[None] | None = None

    def heartbeat_from(self, client_address: str, broker_id: int) -> None:
        self._watch.heartbeat(self._now_ms(), client_address, broker_id)
        every_ms = self._watch.check_every_ms
        if every_ms is not None and self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().create_task(
                self._watch_overdue(every_ms / 1000))

    def closed(self, client_address: str) -> None:
        """A controller-listener connection closed: probe the broker heartbeating on it."""
        if (probe := self._watch.closed(client_address)) is not None:
            self._start(probe)

    async def settled(self) -> None:
        """Until every probe under way has ended (tests, and a caller that must know)."""
        await asyncio.gather(*self._probing.values(), return_exceptions=True)

    def _now_ms(self) -> float:
        return self._clock() * 1000

    async def _watch_overdue(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            for probe in self._watch.overdue(self._now_ms()):
                self._start(probe)

    def _start(self, probe: Probe) -> None:
        target = probe.target
        task = asyncio.get_running_loop().create_task(self._probe(probe))
        self._probing[target.broker_id, target.epoch] = task

        def ended(_: asyncio.Task[None]) -> None:
            self._probing.pop((target.broker_id, target.epoch), None)
            self._watch.abandon(target)  # a cancelled probe leaves no verdict
        task.add_done_callback(ended)

    async def _probe(self, probe: Probe) -> None:
        while True:
            outcomes = await asyncio.gather(*(
                probe_endpoint(host, port, self._connect_timeout_s)
                for host, port in probe.target.endpoints))
            verdict = self._watch.round_done(self._now_ms(), probe, outcomes)
            if not isinstance(verdict, ProbeAgain):
                break
            await asyncio.sleep(max(0.0, verdict.at_ms - self._now_ms()) / 1000)
            probe = verdict.probe
        target = verdict.target  # the verdict names the incarnation, as the core decided
        named = ",".join(f"{host}:{port}" for host, port in target.endpoints)
        if isinstance(verdict, Report):
            fenced = self._report(target.broker_id, target.epoch)
            event(log, "broker_listeners_refused", broker=target.broker_id,
                  broker_epoch=target.epoch, fenced=fenced, endpoints=named)
        else:
            event(log, "broker_listeners_not_refused", broker=target.broker_id,
                  broker_epoch=target.epoch, endpoints=named)

    def close(self) -> None:
        for task in [*self._probing.values(), self._watchdog]:
            if task is not None:
                task.cancel()
        self._probing.clear()
        self._watchdog = None
        self._watch.clear()
