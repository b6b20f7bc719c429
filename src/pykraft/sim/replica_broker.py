"""A simulated broker hosting one partition's replica, driving the broker's own pure rules
(:mod:`pykraft.replica`) as the asyncio broker does: as leader, the follower states, high
watermark and ISR proposals of :class:`~pykraft.replica.leader.LeaderReplication`, the
leader-epoch and divergence checks of a fetch and the acks=all rule; as follower, fetching
from the leader, truncating by its diverging epoch and taking its high watermark.

Everything it sends goes through :class:`BrokerEnv` (the cluster's network and controller);
a crash drops its in-flight work and the unflushed suffix of its log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pykraft.protocol.errors import ErrorCode
from pykraft.replica.acks import acks_all_outcome
from pykraft.replica.epochs import Divergence, check_leader_epoch, fetch_divergence
from pykraft.replica.follower import follower_high_watermark, truncation_for
from pykraft.replica.leader import (
    AlterResult,
    Brokers,
    Committed,
    IsrProposal,
    LeaderReplication,
    PartitionAssignment,
    effective_min_isr,
)
from pykraft.sim.replica_log import Fetch, FetchAnswer, ProduceAnswer, SimReplicaLog

ReplicationFactory = Callable[..., LeaderReplication]
AlterAnswer = AlterResult | ErrorCode

TICK_MS = 25  # leader: ISR shrink checks and time-based high watermark moves
MAX_LAG_MS = 500  # replica.lag.time.max.ms, scaled to the simulation's delays
FETCH_MAX_RECORDS = 20
IDLE_FETCH_WAIT_MS = 10  # a follower's next fetch after an empty answer (its long poll)
BACKOFF_MS = 50  # replica.fetch.backoff.ms and the AlterPartition retry


@dataclass(frozen=True, slots=True)
class MetadataUpdate:
    """What the controller published: the partition's registration and the brokers."""

    offset: int
    leader: int
    assignment: PartitionAssignment
    brokers: Brokers


class BrokerEnv(Protocol):
    """What a broker needs from the simulated cluster."""

    min_insync_replicas: int

    @property
    def now_ms(self) -> int: ...

    def schedule(self, delay_ms: int, label: str, action: Callable[[], None]) -> None: ...

    def send_fetch(self, source: int, destination: int, request: Fetch,
                   on_answer: Callable[[FetchAnswer], None],
                   on_failure: Callable[[], None]) -> None: ...

    def send_alter_partition(self, sender: int, proposal: IsrProposal,
                             on_answer: Callable[[AlterAnswer], None]) -> None: ...

    def log(self, text: str) -> None: ...


@dataclass(slots=True)
class _WaitingProduce:
    offset: int
    reply: Callable[[ProduceAnswer], None]


class SimBroker:
    def __init__(self, broker_id: int, env: BrokerEnv, factory: ReplicationFactory) -> None:
        self.broker_id = broker_id
        self.log = SimReplicaLog()
        self.alive = False
        self.incarnation = 0
        self.broker_epoch = -1
        self.metadata: MetadataUpdate | None = None
        self.replication: LeaderReplication | None = None
        self._env = env
        self._factory = factory
        self._waiting: list[_WaitingProduce] = []
        self._fetch_token = 0  # a role or leader change orphans the fetch in flight

    # ------------------------------------------------------------------ lifecycle

    def start(self, broker_epoch: int, metadata: MetadataUpdate) -> None:
        self.alive = True
        self.incarnation += 1
        self.broker_epoch = broker_epoch
        self.apply(metadata)
        self._schedule_tick(self.incarnation)

    def crash(self) -> None:
        self.alive = False
        self.incarnation += 1
        self.log.lose_unflushed()
        self.metadata = None
        self.replication = None
        self._waiting.clear()
        self._fetch_token += 1

    def _schedule_tick(self, incarnation: int) -> None:
        def tick() -> None:
            if self.incarnation == incarnation:
                self._tick()
                self._schedule_tick(incarnation)
        self._env.schedule(TICK_MS, f"tick {self.broker_id}", tick)

    # ------------------------------------------------------------------ metadata

    @property
    def leader_id(self) -> int:
        return -1 if self.metadata is None else self.metadata.leader

    def apply(self, update: MetadataUpdate) -> None:
        """A published image; older ones (delivered out of order) are ignored."""
        if not self.alive or (self.metadata is not None
                              and update.offset <= self.metadata.offset):
            return
        previous = self.metadata
        self.metadata = update
        if previous is not None and (
                update.assignment.partition_epoch <= previous.assignment.partition_epoch):
            if self.replication is not None:
                self._advance_high_watermark()
            return
        if update.leader == self.broker_id:
            self._make_leader(update.assignment)
        else:
            self._make_follower(previous)

    def _make_leader(self, assignment: PartitionAssignment) -> None:
        rep, now, end = self.replication, self._env.now_ms, self.log.end_offset
        if rep is None or assignment.leader_epoch > rep.leader_epoch:
            self.log.begin_epoch(assignment.leader_epoch)
            self._env.log(f"broker {self.broker_id} leads epoch {assignment.leader_epoch} "
                          f"from offset {end}")
        if rep is None:
            self.replication = self._factory(self.broker_id, assignment, epoch_start_offset=end,
                                             now_ms=now, max_lag_ms=MAX_LAG_MS)
            self._fetch_token += 1
        else:
            rep.assign(assignment, leader_end_offset=end, now_ms=now)
        self._advance_high_watermark()

    def _make_follower(self, previous: MetadataUpdate | None) -> None:
        self.replication = None
        self._answer_waiting()
        if previous is not None and (previous.leader, previous.assignment.leader_epoch) == (
                self.leader_id, self._leader_epoch):
            return  # the same leader and epoch: the fetch in flight stays valid
        self._fetch_token += 1
        if self.leader_id >= 0:
            self._fetch(self._fetch_token)

    @property
    def _leader_epoch(self) -> int:
        return -1 if self.metadata is None else self.metadata.assignment.leader_epoch

    # ------------------------------------------------------------------ leader

    def handle_produce(self, acks: int, value: int,
                       reply: Callable[[ProduceAnswer], None]) -> None:
        rep = self.replication
        if not self.alive:
            return
        if rep is None:
            reply(ProduceAnswer(ErrorCode.NOT_LEADER_OR_FOLLOWER))
            return
        if acks == -1 and len(rep.isr) < effective_min_isr(
                self._env.min_insync_replicas, len(rep.assignment.replicas)):
            reply(ProduceAnswer(ErrorCode.NOT_ENOUGH_REPLICAS))
            return
        offset = self.log.append((rep.leader_epoch, value))
        if acks == -1:
            self._waiting.append(_WaitingProduce(offset, reply))
        else:
            reply(ProduceAnswer(ErrorCode.NONE, offset))
        self._advance_high_watermark()

    def handle_fetch(self, request: Fetch) -> FetchAnswer | None:
        """A follower's fetch, by Kafka's order: epoch checks, divergence, the offset's
        range, then the follower's new state, the high watermark and a possible expand."""
        rep, log = self.replication, self.log
        if not self.alive:
            return None
        if rep is None:
            return FetchAnswer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        code = check_leader_epoch(request.current_leader_epoch, rep.leader_epoch)
        if code == ErrorCode.NONE:
            code = rep.check_follower(request.replica_id, request.current_leader_epoch)
        if code != ErrorCode.NONE:
            return FetchAnswer(code)
        end = log.end_offset
        verdict = fetch_divergence(log.epochs, fetch_offset=request.fetch_offset,
                                   last_fetched_epoch=request.last_fetched_epoch,
                                   log_start_offset=0, log_end_offset=end)
        if isinstance(verdict, Divergence):
            return FetchAnswer(ErrorCode.NONE, (), log.high_watermark, end, verdict)
        if verdict is not None or not 0 <= request.fetch_offset <= end:
            return FetchAnswer(ErrorCode.OFFSET_OUT_OF_RANGE, log_end_offset=end)
        code = rep.record_fetch(request.replica_id, fetch_offset=request.fetch_offset,
                                log_start_offset=0, broker_epoch=request.broker_epoch,
                                now_ms=self._env.now_ms, leader_end_offset=end,
                                brokers=self._brokers)
        if code != ErrorCode.NONE:
            return FetchAnswer(code)
        self._advance_high_watermark()
        self._send(rep.propose_expand(request.replica_id, high_watermark=log.high_watermark,
                                      brokers=self._brokers, local_epoch=self.broker_epoch))
        records = tuple(log.records[request.fetch_offset:
                                    request.fetch_offset + FETCH_MAX_RECORDS])
        return FetchAnswer(ErrorCode.NONE, records, log.high_watermark, end)

    def read_committed(self, offset: int) -> FetchAnswer | None:
        """A consumer's fetch: records from ``offset`` up to the high watermark only."""
        if not self.alive:
            return None
        if self.replication is None:
            return FetchAnswer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        hw = self.log.high_watermark
        if not 0 <= offset <= self.log.end_offset:
            return FetchAnswer(ErrorCode.OFFSET_OUT_OF_RANGE)
        records = tuple(self.log.records[offset:min(hw, offset + FETCH_MAX_RECORDS)])
        return FetchAnswer(ErrorCode.NONE, records, hw, self.log.end_offset)

    @property
    def _brokers(self) -> Brokers:
        return Brokers({}) if self.metadata is None else self.metadata.brokers

    def _advance_high_watermark(self) -> None:
        rep, log = self.replication, self.log
        if rep is None:
            return
        hw = rep.high_watermark(log.high_watermark, leader_end_offset=log.end_offset,
                                now_ms=self._env.now_ms,
                                min_insync_replicas=self._env.min_insync_replicas,
                                brokers=self._brokers)
        if hw != log.high_watermark:
            log.high_watermark = hw
        self._answer_waiting()

    def _answer_waiting(self) -> None:
        """acks=all produces whose outcome is known (NOT_LEADER_OR_FOLLOWER once demoted)."""
        rep = self.replication
        still: list[_WaitingProduce] = []
        for waiting in self._waiting:
            outcome = acks_all_outcome(
                is_leader=rep is not None, high_watermark=self.log.high_watermark,
                required_offset=waiting.offset + 1,
                isr_size=0 if rep is None else len(rep.maximal_isr),
                min_isr=self._env.min_insync_replicas,
                replication_factor=0 if rep is None else len(rep.assignment.replicas))
            if outcome is None:
                still.append(waiting)
            else:
                waiting.reply(ProduceAnswer(outcome, waiting.offset))
        self._waiting = still

    def _tick(self) -> None:
        rep = self.replication
        if rep is None:
            return
        self._advance_high_watermark()
        self._send(rep.propose_shrink(now_ms=self._env.now_ms,
                                      leader_end_offset=self.log.end_offset,
                                      local_epoch=self.broker_epoch))

    def _send(self, proposal: IsrProposal | None) -> None:
        if proposal is None:
            return
        rep, incarnation = self.replication, self.incarnation
        self._env.log(f"broker {self.broker_id} proposes ISR {list(proposal.isr)} "
                      f"(partition epoch {proposal.partition_epoch})")

        def answered(answer: AlterAnswer) -> None:
            if self.incarnation != incarnation or self.replication is not rep or rep is None:
                return
            if rep.complete(proposal, answer):
                self._env.schedule(BACKOFF_MS, f"retry alter {self.broker_id}",
                                   lambda: self._resend(rep, proposal))
            self._advance_high_watermark()
        self._env.send_alter_partition(self.broker_id, proposal, answered)

    def _resend(self, rep: LeaderReplication, proposal: IsrProposal) -> None:
        """Kafka retries a failed AlterPartition while the same change is still pending."""
        state = rep.state
        if self.replication is rep and not isinstance(state, Committed) and (
                state.proposal == proposal):
            self._send(proposal)

    # ------------------------------------------------------------------ follower

    def _fetch(self, token: int) -> None:
        if not self.alive or token != self._fetch_token or self.replication is not None:
            return
        leader, log = self.leader_id, self.log
        if leader < 0:
            return
        request = Fetch(self.broker_id, self.broker_epoch, self._leader_epoch, log.end_offset,
                        log.last_epoch)
        self._env.send_fetch(self.broker_id, leader, request,
                             lambda answer: self._fetched(token, request, answer),
                             lambda: self._fetch_later(token, BACKOFF_MS))

    def _fetch_later(self, token: int, delay_ms: int) -> None:
        if token == self._fetch_token:
            self._env.schedule(delay_ms, f"fetch {self.broker_id}", lambda: self._fetch(token))

    def _fetched(self, token: int, request: Fetch, answer: FetchAnswer) -> None:
        if not self.alive or token != self._fetch_token:
            return
        log = self.log
        if answer.error != ErrorCode.NONE:
            if answer.error == ErrorCode.OFFSET_OUT_OF_RANGE and (
                    0 <= answer.log_end_offset < log.end_offset):
                log.truncate_to(answer.log_end_offset)  # the leader's log is shorter
            self._fetch_later(token, BACKOFF_MS)
            return
        if answer.diverging is not None:
            cut = truncation_for(log.epochs, log.end_offset, answer.diverging.epoch,
                                 answer.diverging.end_offset, request.fetch_offset)
            self._env.log(f"broker {self.broker_id} truncates to {cut.offset} (leader's "
                          f"epoch {answer.diverging.epoch} ends at "
                          f"{answer.diverging.end_offset})")
            log.truncate_to(cut.offset)
            self._fetch(token)
            return
        for index, record in enumerate(answer.records):
            if request.fetch_offset + index == log.end_offset:
                log.append(record)
        log.high_watermark = follower_high_watermark(
            answer.high_watermark, log_start_offset=0, log_end_offset=log.end_offset)
        if answer.records:
            self._fetch(token)
        else:
            self._fetch_later(token, IDLE_FETCH_WAIT_MS)
