"""One KRaft node: the raft core driven by a real clock, disk and network.

Every input (a tick, a peer's request or response, a finished fsync, an append) is a plain
method call on the core from the event loop, followed by :meth:`RaftNode._drain`, which
carries out the core's ``Ready``: requests go to peers (one task each), responses resolve the
waiting inbound connection, a flush request goes to the group-commit flusher, events go to
the state machines (which may call the core back at once: the core's step has returned),
and the single tick timer is re-armed at ``next_tick_ms``. Nothing here decides anything
about consensus.

Peers are found, not configured: a replica id is sent to the address the core names for it
(``endpoint_of``: the voter set in the log, or a replica being added), so a voter set that
changes at runtime (KIP-853) needs no restart; negative destinations are the bootstrap
servers of ``controller.quorum.bootstrap.servers``.

The state machines are pluggable: ``listeners`` get the core's events (the controller, a
broker's metadata image, or an application through :mod:`pykraft.embed`); the record counter
of :mod:`pykraft.runtime.committed_counter` always runs beside it for metrics and commit waits,
and is the only state machine, snapshots included, of a node given none. The node hands
events to each in order with :func:`pykraft.raft.api.deliver`.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any

from pykraft.errors import (
    FatalRaftError,
    NetworkError,
    NotLeaderError,
    PeerUnreachableError,
    PyKraftError,
    RaftError,
    UnsupportedVersionError,
)
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.api import OutboundRequest, RaftListener, deliver
from pykraft.raft.core import RaftClient
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.states import Leader
from pykraft.runtime.cluster_id_refusals import ClusterIdRefusals
from pykraft.runtime.committed_counter import CommittedCounter, CounterSnapshot
from pykraft.runtime.disk_log import DiskRaftLog
from pykraft.runtime.disk_quorum_state import FileQuorumStateStore
from pykraft.runtime.event_loop import running_loop_name
from pykraft.runtime.flusher import GroupCommitFlusher
from pykraft.runtime.logfmt import event
from pykraft.runtime.metrics import RaftMetrics
from pykraft.runtime.peers import PeerConnection, PeerPool
from pykraft.runtime.settings import NodeSettings
from pykraft.runtime.waits import wait_set
from pykraft.storage.metadata_log import wall_clock_ms

log = logging.getLogger("pykraft.node")

#: The KRaft APIs a controller serves (and sends to its peers).
SERVED_APIS = frozenset({
    ApiKey.API_VERSIONS, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH,
    ApiKey.FETCH, ApiKey.DESCRIBE_QUORUM, ApiKey.DESCRIBE_CLUSTER, ApiKey.FETCH_SNAPSHOT,
    ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER, ApiKey.UPDATE_RAFT_VOTER,
})
SERVED_RANGES = {key: r for key, r in listener_ranges(Listener.CONTROLLER).items()
                 if key in SERVED_APIS}
#: Inbound requests are routed back by a token far above any node id.
_FIRST_INBOUND_TOKEN = 1 << 40


class RaftNode:
    """Owns the core, the log, the peers and the timers of one node."""

    def __init__(self, settings: NodeSettings, *,
                 clock: Callable[[], int] = wall_clock_ms,
                 listeners: Sequence[RaftListener] = ()) -> None:
        self.settings = settings
        self._clock = clock
        self.metrics = RaftMetrics()
        settings.partition_dir.mkdir(parents=False, exist_ok=True)
        self.disk_log = DiskRaftLog.open(settings.partition_dir,
                                         segment_bytes=settings.segment_bytes,
                                         segment_ms=settings.segment_ms)
        # The counter snapshots only when it is the node's sole state machine: a controller
        # or broker listener snapshots its own image.
        self.machine = CommittedCounter(
            settings.node_id,
            settings.controller.snapshot_policy() if not listeners else None, clock)
        self._listeners: tuple[RaftListener, ...] = (self.machine, *listeners)
        store = FileQuorumStateStore(settings.partition_dir, settings.quorum.voters)
        self.core = RaftClient(
            settings.node_id, settings.quorum, self.disk_log, store,
            rng=random.Random(), now_ms=clock(), cluster_id=settings.cluster_id,
            directory_id=settings.directory_id,
        )
        self.machine.attach(self.core.read_snapshot)
        self._pool = PeerPool(client_id=f"raft-client-{settings.node_id}", ours=SERVED_RANGES,
                              request_timeout_ms=settings.quorum.request_timeout_ms,
                              tls=settings.controller_tls, sasl=settings.controller_sasl)
        self.peers = self._pool.peers
        """Open connections by core destination (replica id, or < 0 for bootstrap servers)."""
        self._named: dict[int, tuple[str, int]] = {}
        """Addresses peers' Fetch answers gave for replicas outside our voter set (the
        leader, to an observer that has no voter set yet)."""
        self.flusher: GroupCommitFlusher | None = None
        self._refusals = ClusterIdRefusals(settings.cluster_id, clock)
        self.exit_code = 0
        self.stopped = asyncio.Event()
        self._inbound: dict[int, asyncio.Future[rpc.RaftResponse]] = {}
        self._appends: list[tuple[bytes, asyncio.Future[int]]] = []
        self._tokens = itertools.count(_FIRST_INBOUND_TOKEN)
        self._tick: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._shutdown_done = asyncio.Event()
        self._last_state: tuple[str, int, int | None] = ("", -1, None)
        self._leaderless_since: float | None = None
        self._last_end = self.disk_log.log_end_offset

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Begin driving the core (call from the running loop)."""
        self.flusher = GroupCommitFlusher(self.disk_log, self._on_flushed, self._fatal)
        event(log, "started", state=self.core.state.name, epoch=self.core.epoch,
              log_end_offset=self.disk_log.log_end_offset, listener=str(self.settings.listener),
              quorum="dynamic" if self.settings.is_dynamic else "static",
              voters=",".join(str(v) for v in sorted(self.core.voters)) or "-",
              kraft_version=self.core.kraft_version, event_loop=running_loop_name())
        self._drain()

    async def shutdown(self) -> None:
        """Graceful stop: resign (EndQuorumEpoch), wait for acks within the bound, flush."""
        if self.exit_code == 0:
            event(log, "shutdown_begin", state=self.core.state.name, epoch=self.core.epoch)
            self._step(self.core.begin_shutdown)
            if not await wait_set(self._shutdown_done, self.settings.shutdown_timeout_ms / 1000):
                event(log, "shutdown_timeout", level=logging.WARNING,
                      waited_ms=self.settings.shutdown_timeout_ms)
            if self.flusher is not None and not await self.flusher.wait_idle(
                    self.settings.shutdown_timeout_ms / 1000):
                event(log, "flush_timeout", level=logging.WARNING,
                      waited_ms=self.settings.shutdown_timeout_ms)
        self._stop_io()
        if self.exit_code == 0:
            self.disk_log.close()
        else:
            self.disk_log.metadata_log.close()
        event(log, "shutdown_complete", resigned_and_acked=self.resign_acknowledged,
              exit_code=self.exit_code, log_end_offset=self.disk_log.log_end_offset)

    def _stop_io(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
        for task in list(self._tasks):
            task.cancel()
        self._pool.close()
        for waiter in self._inbound.values():
            waiter.cancel()
        self._inbound.clear()

    def _fatal(self, error: BaseException) -> None:
        """A broken invariant or a failed fsync: stop at once, exit non-zero (Kafka halts)."""
        event(log, "fatal", level=logging.ERROR, error=f"{type(error).__name__}: {error}")
        self.exit_code = 1
        self.stopped.set()

    # -- inputs -------------------------------------------------------------------------

    def _step(self, action: Callable[[int], object]) -> None:
        """Run one core input at the current time, then carry out its outputs."""
        started = time.monotonic()
        try:
            action(self._clock())
            self._drain()
        except PyKraftError as exc:
            self._fatal(exc)
        self.metrics.busy_s.record(time.monotonic() - started)

    def now_ms(self) -> int:
        """The node's clock (wall-clock milliseconds unless a test injects one)."""
        return self._clock()

    def step(self, action: Callable[[int], object]) -> None:
        """Run ``action(now_ms)`` against the core from outside (the controller's submits
        and ticks), then carry out what it produced."""
        self._step(action)

    def _on_tick(self) -> None:
        self._tick = None
        self._step(self.core.tick)

    def _on_flushed(self, offset: int) -> None:
        self._step(lambda now: self.core.flush_completed(now, offset))

    def request(self, body: rpc.RaftRequest) -> asyncio.Future[rpc.RaftResponse]:
        """Hand an inbound KRaft request to the core; resolves with its
        response, which may come later (a parked Fetch)."""
        token = next(self._tokens)
        answer: asyncio.Future[rpc.RaftResponse] = asyncio.get_running_loop().create_future()
        self._inbound[token] = answer
        answer.add_done_callback(lambda done: None if done.cancelled() or done.exception()
                                 else self._refusals.received(body, done.result()))
        self._step(lambda now: self.core.handle_request(now, token, 0, body))
        return answer

    def append(self, value: bytes) -> asyncio.Future[int]:
        """Bench append on the leader: resolves with the record's offset, or fails with
        NotLeaderError (nothing appended) on any other node.

        Appends made during one event-loop iteration reach the core together, so concurrent
        clients share one core call, one batch and one disk write even with a zero linger
        (one call per append made the loop, not the disk, the limit under load).
        """
        answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._appends.append((value, answer))
        if len(self._appends) == 1:
            asyncio.get_running_loop().call_soon(self._append_pending)
        return answer

    def _append_pending(self) -> None:
        pending, self._appends = self._appends, []
        try:
            last = self.core.append(self._clock(), [value for value, _ in pending])
            self._drain()
        except NotLeaderError as exc:
            error: PyKraftError = exc
        except PyKraftError as exc:
            self._fatal(exc)
            error = exc
        else:
            for offset, (_, answer) in enumerate(pending, start=last - len(pending) + 1):
                if not answer.done():
                    answer.set_result(offset)
            return
        for _, answer in pending:
            if not answer.done():
                answer.set_exception(error)

    # -- outputs ------------------------------------------------------------------------

    def _drain(self) -> None:
        """Carry out ``Ready`` until the core has nothing more: what the state machines do
        with the events (appends, a snapshot) may produce output of its own."""
        while True:
            ready = self.core.ready()
            for out in ready.requests:
                self._spawn(self._exchange(out))
            for response in ready.responses:
                answer = self._inbound.pop(response.destination, None)
                if answer is not None and not answer.done():
                    answer.set_result(response.response)
            if ready.flush is not None and self.flusher is not None:
                self.flusher.request()
            deliver(ready.events, *self._listeners)
            due = self.machine.take_snapshot_due()
            if due is not None:
                self._write_due_snapshot(due)
            elif not ready.events:
                break
        self._arm_tick(ready.next_tick_ms)
        self._observe()

    def create_snapshot(self, snapshot_id: OffsetAndEpoch,
                        batches: Iterable[Sequence[bytes]]) -> None:
        """Write the application's snapshot at ``snapshot_id`` now, for a state machine that
        snapshots on its own schedule (:mod:`pykraft.embed`). The core's refusal (not a
        delivered batch boundary, below the log start, taken already; nothing written) is
        raised to the caller and the node goes on; any other error is fatal, as in a step."""
        refused: list[RaftError] = []

        def write(now_ms: int) -> None:
            try:
                self._write_snapshot(now_ms, snapshot_id, batches)
            except FatalRaftError:
                raise
            except RaftError as exc:
                refused.append(exc)

        self._step(write)
        if refused:
            raise refused[0]

    def _write_due_snapshot(self, due: CounterSnapshot) -> None:
        try:
            self._write_snapshot(self._clock(), due.snapshot_id, due.batches(),
                                 records=due.records)
        except RaftError as exc:
            # e.g. a snapshot fetched meanwhile covers the offset: the next threshold retries
            event(log, "snapshot_skipped", level=logging.WARNING,
                  snapshot_id=str(due.snapshot_id), error=str(exc))

    def _write_snapshot(self, now_ms: int, snapshot_id: OffsetAndEpoch,
                        batches: Iterable[Sequence[bytes]], **fields: object) -> None:
        self.core.create_snapshot(now_ms, snapshot_id, batches)
        event(log, "snapshot_written", logging.INFO, snapshot_id=str(snapshot_id), **fields,
              log_start_offset=self.core.log_start_offset)

    def _arm_tick(self, at_ms: int) -> None:
        if self._tick is not None:
            self._tick.cancel()
        delay_s = max(0, at_ms - self._clock()) / 1000
        self._tick = asyncio.get_running_loop().call_later(delay_s, self._on_tick)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._fatal(task.exception() or RuntimeError("task failed"))

    @property
    def resign_acknowledged(self) -> bool:
        """Graceful shutdown of a leader: every other voter acknowledged EndQuorumEpoch."""
        return self.core.resign_acknowledged

    def address_of(self, destination: int) -> tuple[str, int] | None:
        """Where a request for ``destination`` goes now, or None if nobody knows."""
        if destination < 0:
            return self.settings.bootstrap_address(destination)
        endpoint = self.core.endpoint_of(destination)
        if endpoint is None:
            return self._named.get(destination)
        return (endpoint.host, endpoint.port)

    def peer(self, destination: int) -> PeerConnection | None:
        """The connection for ``destination``, replaced when its address moved (a voter
        that came back with new endpoints, or a replica id reused by a new controller)."""
        return self._pool.get(destination, self.address_of(destination))

    async def _exchange(self, out: OutboundRequest) -> None:
        peer = self.peer(out.destination)
        if peer is None:
            self._step(lambda now: self.core.handle_send_failure(now, out.destination,
                                                                 out.correlation_id))
            return
        try:
            response = await peer.send(out.request)
        except UnsupportedVersionError:
            # as Kafka's KafkaNetworkChannel: UNSUPPORTED_VERSION answers a request that no
            # version the peer speaks can carry (a pre-vote to a replica before KIP-996 then
            # campaigns for real, an UpdateRaftVoter to a leader before KIP-853 is done)
            response = rpc.error_response(out.request, ErrorCode.UNSUPPORTED_VERSION)
        except NetworkError as exc:
            unreachable = isinstance(exc, PeerUnreachableError)
            self._step(lambda now: self.core.handle_send_failure(
                now, out.destination, out.correlation_id, unreachable=unreachable))
            return
        address = self.address_of(out.destination)
        self._refusals.answered(str(out.destination) if out.destination >= 0 or address is None
                                else f"{address[0]}:{address[1]}", out.request, response)
        if isinstance(response, rpc.FetchResponse):
            self._named.update((int(e.node_id), (e.host, int(e.port)))
                               for e in response.node_endpoints)
        self._step(lambda now: self.core.handle_response(now, out.destination,
                                                         out.correlation_id, response))

    def _observe(self) -> None:
        """Metrics, one log line per state change, and the shutdown signal."""
        core = self.core
        state = (core.state.name, core.epoch, core.state.leader_id)
        gauges = self.metrics.gauges
        end = self.disk_log.log_end_offset
        if end > self._last_end:
            stat = (self.metrics.append_records if state[0] == "Leader"
                    else self.metrics.fetch_records)
            stat.record(end - self._last_end)
        self._last_end = end
        gauges.log_end_offset = end
        gauges.log_end_epoch = self.disk_log.last_fetched_epoch
        hwm = core.high_watermark
        gauges.high_watermark = -1 if hwm is None else hwm
        gauges.committed_records = self.machine.records
        self._observe_membership(hwm)
        for latency in self.machine.take_commit_latencies():
            self.metrics.commit_latency_ms.record(latency)
        if state != self._last_state:
            self._on_state_change(state)
        if core.shutdown_complete and not self._shutdown_done.is_set():
            self._shutdown_done.set()

    def _observe_membership(self, high_watermark: int | None) -> None:
        """KIP-853's gauges: voters everywhere; observers and an uncommitted voter change on
        the leader; whether a controller is an observer, or ignores its static voters."""
        core = self.core
        gauges = self.metrics.gauges
        gauges.number_of_voters = len(core.voters)
        state = core.state
        if isinstance(state, Leader):
            gauges.number_of_observers = len(state.progress.active_observers(self._clock()))
            changed_at = core.control_state.last_voter_set_offset
            gauges.uncommitted_voter_change = changed_at is not None and (
                high_watermark is None or changed_at >= high_watermark)
        else:
            gauges.number_of_observers = gauges.uncommitted_voter_change = None
        if self.settings.is_controller:
            gauges.is_observer = not core.is_voter
            gauges.ignored_static_voters = bool(self.settings.voters) and core.kraft_version > 0

    def _on_state_change(self, state: tuple[str, int, int | None]) -> None:
        name, epoch, leader = state
        previous = self._last_state
        self._last_state = state
        gauges = self.metrics.gauges
        gauges.current_state = name.lower()
        gauges.current_epoch = epoch
        gauges.current_leader = -1 if leader is None else leader
        voted = getattr(self.core.state, "voted_id", None)
        gauges.current_vote = -1 if voted is None else voted
        now = time.monotonic()
        if leader is None and self._leaderless_since is None:
            self._leaderless_since = now
        elif leader is not None and self._leaderless_since is not None:
            self.metrics.election_latency_ms.record((now - self._leaderless_since) * 1000)
            self._leaderless_since = None
        event(log, "state_change", previous=previous[0] or "-", state=name, epoch=epoch,
              leader=-1 if leader is None else leader,
              log_end_offset=self.disk_log.log_end_offset,
              high_watermark=gauges.high_watermark)
