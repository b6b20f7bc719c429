"""Fetch on the broker listener: consumers read partition logs (the controller listener's
Fetch of the metadata log is KRaft's and stays in :mod:`pykraft.runtime.dispatch`).

Interface::

    fetcher = FetchHandler(replicas, listener_name)       # replicas: ReplicaManager
    response = await fetcher.fetch(request_body, version)  # the generated FetchRequest as
    # version 4-18 came; the answer is the FetchResponse to encode at that version
    response = await fetcher.fetch(request_body, version, in_files=True)  # its records as
    # regions of the segment files (encoded into a SplicedBuffer, sent with sendfile)

Kafka's rules (``KafkaApis.handleFetchRequest``, ``ReplicaManager.fetchMessages``,
``DelayedFetch``): a partition named more than once is read and answered once, where it
first appears, with its last entry's fields (Kafka keys the request's partitions in a map);
the response holds at most the request's ``max_bytes`` capped by the broker's
``fetch.max.bytes`` (KIP-74's first batch excepted); partitions are read in request order
from their leader
(:mod:`pykraft.log.partition_reads` holds the byte budget and isolation rules), with
``current_leader_epoch`` fenced and the leader's id and epoch (plus its endpoint from v16)
named on NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH (KIP-951). The answer is immediate
when ``max_wait_ms`` <= 0, nothing is asked, ``min_bytes`` are there or a partition failed;
otherwise the request parks in the broker's Fetch purgatory (:mod:`pykraft.broker.purgatory`)
until what its reads depend on moves on one of its partitions (the high watermark, or the
log end for a follower; the log start, the leader epoch, leadership) or ``max_wait_ms``
passes, and every partition is read again (bytes still short of ``min_bytes``: it parks
again for the rest of the wait). A parked follower fetch is also answered when this broker
starts leading another partition the follower replicates, so that its next fetch names it
at once: Kafka's follower, blocked in its fetch, picks a new partition up only when that
fetch returns, up to ``replica.fetch.wait.max.ms`` later (the first acks=all produce to a
new topic waited that long).

Fetch sessions (KIP-227, :mod:`pykraft.broker.fetch_sessions`) decide what is read and
answered: a full fetch may open one, an incremental fetch reads every partition of its
session and answers those with something new; the broker's sessions are the replica
manager's (``fetch_sessions``), shared by its listeners as in Kafka. The answer groups a
topic's consecutive partitions (as Kafka's ``FetchResponse.toMessage``).

Fetch from followers (KIP-392): a consumer's Fetch from v11 carries client metadata (its
``rack_id``, "" without one), and then reads a follower too, up to the follower's high
watermark (its last stable offset for read_committed), as Kafka's ``FetchParams.
fetchOnlyLeader``; before v11 a follower answers a consumer NOT_LEADER_OR_FOLLOWER. With
a replica selector (``replica.selector.class``, :mod:`pykraft.replica.read_replica`) the
leader may name another replica for the consumer to read a partition from: that partition
is answered at once with ``preferred_read_replica``, the leader's offsets and no records
(Kafka's ``readFromLog`` skips its read), and the request is not parked.

Follower fetches (``replica_id`` >= 0 up to v14, ``replica_state`` with the broker epoch
from v15) read to the log end from the leader. A broker not among the partition's replicas
is refused (UNKNOWN_LEADER_EPOCH, or NOT_LEADER_OR_FOLLOWER without a leader epoch), as is
an older incarnation of one (NOT_LEADER_OR_FOLLOWER). The first read of a request records
each follower's fetch offset and log start offset on the leader
(:meth:`ReplicaManager.record_follower_fetch`), which may move the high watermark and
propose the follower for the ISR. Any fetcher sending ``last_fetched_epoch`` (v12+) whose
epoch diverges from the leader's log gets ``diverging_epoch`` at once and no records.

Replication throttle (:mod:`pykraft.broker.replication_throttles`, Kafka's
``shouldLeaderThrottle``): a follower out of the ISR gets no records of a partition the
leader throttles while the leader's quota is exceeded (they count toward no byte limit, nor
toward ``min_bytes``); the records of throttled partitions in each follower answer are
counted against the quota (Kafka counts those partitions' encoded size, a few dozen bytes
more each).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from pykraft.broker.fetch_session_cache import SessionIdOutOfRangeError, SessionKey
from pykraft.broker.fetch_sessions import Answer
from pykraft.broker.purgatory import DelayedOperation, FollowerKey
from pykraft.broker.replica_manager import HostedPartition, PartitionError, ReplicaManager
from pykraft.ids import TopicPartition
from pykraft.log.partition_reads import (
    FetchIsolation,
    PartitionFetch,
    PartitionRead,
    ReadablePartition,
    fetch_isolation,
    read_partitions,
    records_size,
    upper_bound,
)
from pykraft.messages.kafka.fetch_request import FetchPartition, FetchRequest, FetchTopic
from pykraft.messages.kafka.fetch_response import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    FetchResponse,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
)
from pykraft.messages.splice import Splice
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.rpc import fetch_replica_id
from pykraft.replica.read_replica import NO_PREFERRED_REPLICA, preferred_read_replica
from pykraft.runtime.request_metrics import also_named

log = logging.getLogger(__name__)

FIRST_TOPIC_ID_VERSION = 13
FIRST_LEADER_HINT_VERSION = 12  # current_leader and diverging_epoch (tagged, KIP-595/951)
FIRST_NODE_ENDPOINTS_VERSION = 16  # the named leaders' endpoints (KIP-951)
FIRST_CLIENT_METADATA_VERSION = 11  # rack_id and preferred_read_replica (KIP-392)
_LEADER_HINTS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})
#: Errors Kafka's ``KafkaApis.handleFetchRequest`` answers before reading, with
#: ``FetchResponse.partitionResponse``: its ``aborted_transactions`` keeps the schema's
#: default, an empty array, where a read's (an error of the replica manager's included)
#: is null unless read_committed.
#: Read errors Kafka counts as failed fetch requests: the unexpected ones (a corrupt batch,
#: records that do not decompress), not the expected refusals.
_UNEXPECTED_READ_ERRORS = frozenset({ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_SERVER_ERROR})
_REFUSED_BEFORE_READING = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                     ErrorCode.UNKNOWN_TOPIC_ID,
                                     ErrorCode.TOPIC_AUTHORIZATION_FAILED})



class FetchQuota(Protocol):
    """A consumer's byte rate quota, as one Fetch sees it
    (:class:`pykraft.broker.client_quotas.ConsumerQuota`)."""

    def max_bytes(self) -> int | None:
        """The most the answer may hold (None: no cap)."""

    def throttle(self, size: int) -> int:
        """Record an answer of ``size`` bytes: its throttle time (> 0: answer empty)."""


#: A requested partition: its topic (name or id), index and current leader epoch.
PartitionKey = tuple[str | uuid.UUID, int, int]
#: The topics the session may not read of a Fetch (naming them as the request does).
Denied = Callable[[FetchRequest], frozenset[object]]


def replica_id_of(request: FetchRequest) -> int:
    """The fetching replica: ``replica_id`` up to v14, ``replica_state``'s from v15."""
    return fetch_replica_id(request)


class _Resolver:
    """Looks partitions up for one read, on their leader (or on a follower too for a
    consumer with client metadata), keeping the hosted ones (to park on) and the leader
    hints of the refused ones; a led partition for which the replica selector prefers
    another replica is answered without a read. For a follower it also keeps the
    partitions under the leader's replication throttle (``throttled``) and those it holds
    back now."""

    def __init__(self, replicas: ReplicaManager, fetcher: _Follower, listener: str,
                 offsets: Mapping[PartitionKey, int]) -> None:
        self._replicas = replicas
        self._fetcher = fetcher
        self._listener = listener
        self._offsets = offsets
        self._racks: dict[int, str | None] | None = None
        self.hosted: list[HostedPartition] = []
        self.leaders: dict[PartitionKey, tuple[int, int]] = {}
        self.throttled: set[tuple[str | uuid.UUID, int]] = set()
        self.held_back: set[PartitionKey] = set()

    def __call__(self, key: PartitionKey) -> ReadablePartition | ErrorCode | PartitionRead:
        topic, index, epoch = key
        fetcher = self._fetcher
        if topic in fetcher.denied:
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
        try:
            part = self._replicas.partition_for(topic, index, current_leader_epoch=epoch,
                                                require_leader=fetcher.leader_only)
        except PartitionError as refused:
            if refused.error_code in _LEADER_HINTS:
                self.leaders[key] = (refused.leader_id, refused.leader_epoch)
            return refused.error_code
        if fetcher.replica_id >= 0:
            code = self._replicas.check_follower(part, fetcher.replica_id, epoch)
            if code != ErrorCode.NONE:
                return code
            self._throttle(key, part)
        elif key in self._offsets and part.is_leader:
            preferred = self._preferred(part, self._offsets[key])
            if preferred != NO_PREFERRED_REPLICA:
                return PartitionRead(ErrorCode.NONE, b"", part.high_watermark,
                                     part.last_stable_offset, part.log_start_offset,
                                     part.log_end_offset, preferred_read_replica=preferred)
        self.hosted.append(part)
        return part

    def _preferred(self, part: HostedPartition, fetch_offset: int) -> int:
        """Kafka's ``findPreferredReadReplica`` for this led partition."""
        replication = part.replication
        if replication is None:
            return NO_PREFERRED_REPLICA
        return preferred_read_replica(
            self._replicas.replica_selector, self._fetcher.client_rack,
            leader_id=part.broker_id, leader_end_offset=part.log_end_offset,
            followers=replication.followers, isr=part.isr, racks=self._listener_racks(),
            fetch_offset=fetch_offset, now_ms=self._replicas.clock_ms())

    def _listener_racks(self) -> dict[int, str | None]:
        """The rack of each unfenced broker with an endpoint on the client's listener
        (Kafka's ``getPartitionReplicaEndpoints``: the others are ``Node.noNode``), looked
        up once per read."""
        if self._racks is None:
            self._racks = {
                broker_id: broker.rack
                for broker_id, broker in self._replicas.image.cluster.brokers.items()
                if not broker.fenced and any(e.name == self._listener for e in broker.listeners)}
        return self._racks

    def _throttle(self, key: PartitionKey, part: HostedPartition) -> None:
        throttles = self._replicas.throttles
        if throttles.leader.is_throttled(part.topic, part.index):
            self.throttled.add(key[:2])
            if throttles.leader_holds_back(part.topic, part.index,
                                           in_sync=self._fetcher.replica_id in part.isr,
                                           now_ms=self._replicas.clock_ms()):
                self.held_back.add(key)


@dataclass(frozen=True, slots=True)
class _Follower:
    """Who fetches: a broker (``replica_id`` >= 0, its epoch or -1) or a consumer (< 0),
    the log start offsets it sent, one per requested partition, the topics (names or
    ids, as requested) it may not read, whether its records are left in the files, and
    its client metadata's rack (Fetch v11+: ``rack_id``; None before v11)."""

    replica_id: int
    broker_epoch: int
    log_starts: tuple[int, ...]
    denied: frozenset[object] = frozenset()
    in_files: bool = False
    client_rack: str | None = None

    @property
    def leader_only(self) -> bool:
        """Kafka's ``FetchParams.fetchOnlyLeader``: brokers, and consumers without client
        metadata, read leaders only."""
        return self.replica_id >= 0 or self.client_rack is None


class FetchHandler:
    """Answers broker-listener Fetch requests from a :class:`ReplicaManager`."""

    def __init__(self, replicas: ReplicaManager, listener_name: str) -> None:
        self._replicas = replicas
        self._listener = listener_name
        self._sessions = replicas.fetch_sessions

    async def fetch(self, request: FetchRequest, version: int,
                    denied: Denied = lambda _request: frozenset(), *,
                    in_files: bool = False, quota: FetchQuota | None = None
                    ) -> FetchResponse:
        """The answer to ``request`` at ``version``: reads and answers as its fetch session
        says (:mod:`pykraft.broker.fetch_sessions`); TOPIC_AUTHORIZATION_FAILED for the
        topics ``denied`` names of the partitions read (as a request of them). Read as it
        came: a field its version lacks holds the schema's default, as Kafka's generated
        classes do. ``in_files``: records are left in the segment files
        (:class:`~pykraft.messages.splice.Splice` values). A consumer's ``quota`` caps
        what is read, and when it throttles, the answer is sent empty with its
        ``throttle_time_ms``, the session left as it was (Kafka counts the encoded
        answer's bytes; pykraft its records', which dominate it)."""
        by_id = version >= FIRST_TOPIC_ID_VERSION
        replica_id = replica_id_of(request)
        also_named("FetchFollower" if replica_id >= 0 else "FetchConsumer")  # as Kafka's
        fetch_data = _fetch_data(request, by_id)
        try:
            context = self._sessions.new_context(
                version, request.session_id, request.session_epoch,
                privileged=replica_id >= 0, fetch_data=fetch_data,
                forgotten=_forgotten(request, by_id), now_ms=self._replicas.clock_ms())
        except SessionIdOutOfRangeError:
            log.exception("Fetch session lookup failed")
            return _failed(request, version, ErrorCode.UNKNOWN_SERVER_ERROR)
        asked = context.partitions
        wanted = [PartitionFetch((topic, index, part.current_leader_epoch), part.fetch_offset,
                                 part.partition_max_bytes, part.last_fetched_epoch)
                  for (topic, index), part in asked]
        starts = tuple(part.log_start_offset for _, part in asked)  # a follower's (v5+)
        isolation = fetch_isolation(replica_id, request.isolation_level)
        follower = _Follower(replica_id, request.replica_state.replica_epoch, starts,
                             denied(_request_of(request, asked, fetch_data)), in_files,
                             request.rack_id if version >= FIRST_CLIENT_METADATA_VERSION
                             else None)
        # KafkaApis: the request's max_bytes, capped by the broker's fetch.max.bytes
        max_bytes = min(request.max_bytes, self._replicas.fetch_max_bytes)
        cap = None if quota is None else quota.max_bytes()
        if cap is not None:  # KafkaApis: more would be throttled whatever came before
            max_bytes = min(max_bytes, cap)
        reads, resolver = await self._read_until_ready(
            wanted, isolation, follower, max_bytes=max_bytes,
            min_bytes=min(request.min_bytes, max_bytes),
            max_wait_s=request.max_wait_ms / 1000)
        endpoints = (self._endpoints(resolver) if version >= FIRST_NODE_ENDPOINTS_VERSION
                     else ())
        throttle_ms = 0 if quota is None else quota.throttle(
            sum(records_size(read.records) for read in reads))
        if throttle_ms > 0:
            error, session_id = context.throttled()
            return FetchResponse(throttle_time_ms=throttle_ms, error_code=error,
                                 session_id=session_id, node_endpoints=endpoints)
        error, session_id, answers = context.respond(
            self._answers(version, wanted, reads, resolver), self._replicas.clock_ms())
        self._count(replica_id, wanted, reads, answers)
        if replica_id >= 0:  # Kafka's KafkaApis: the throttled partitions' bytes sent
            self._replicas.throttles.leader.record(
                sum(_answered_size(answer) for key, answer in answers
                    if key in resolver.throttled), self._replicas.clock_ms())
        return FetchResponse(error_code=error, session_id=session_id,
                             responses=_topic_responses(answers), node_endpoints=endpoints)

    def _count(self, replica_id: int, wanted: list[PartitionFetch[PartitionKey]],
               reads: list[PartitionRead], answers: list[Answer]) -> None:
        """Kafka's BrokerTopicMetrics of a Fetch: every partition read, those that failed
        unexpectedly, and a consumer's records bytes answered (a follower's are
        replication); a topic id unknown to the image counts nowhere, as in Kafka."""
        stats = self._replicas.topic_stats
        by_id = self._replicas.image.topics.by_id
        def name(topic: str | uuid.UUID) -> str | None:
            if isinstance(topic, str):
                return topic
            found = by_id.get(topic)
            return None if found is None else found.name
        for fetch, read in zip(wanted, reads, strict=True):
            if (topic := name(fetch.key[0])) is not None:
                stats.fetched(topic, failed=read.error in _UNEXPECTED_READ_ERRORS)
        if replica_id < 0:
            for (key, _), data in answers:
                records = data.records
                size = 0 if records is None else (
                    records.length if isinstance(records, Splice) else len(records))
                if size and (topic := name(key)) is not None:
                    stats.sent(topic, size)

    def _read(self, wanted: list[PartitionFetch[PartitionKey]], isolation: FetchIsolation,
              max_bytes: int, follower: _Follower) -> tuple[list[PartitionRead], _Resolver]:
        selecting = (follower.replica_id < 0 and bool(follower.client_rack)
                     and self._replicas.replica_selector is not None)
        offsets = {fetch.key: fetch.fetch_offset for fetch in wanted} if selecting else {}
        resolver = _Resolver(self._replicas, follower, self._listener, offsets)
        return read_partitions(wanted, resolver, max_bytes=max_bytes, isolation=isolation,
                               failed=self._replicas.read_failed,
                               in_files=follower.in_files,
                               held_back=resolver.held_back.__contains__), resolver

    async def _read_until_ready(self, wanted: list[PartitionFetch[PartitionKey]],
                                isolation: FetchIsolation, follower: _Follower,
                                *, max_bytes: int, min_bytes: int, max_wait_s: float
                                ) -> tuple[list[PartitionRead], _Resolver]:
        """Read now (recording a follower's positions from this first read only, as
        Kafka's ``readFromLog`` outside the purgatory); while too little is there, park
        until a partition changes or the wait ends, then read again (Kafka's delayed
        fetch, woken without polling)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_s
        first = True
        newly_led = False
        while True:
            reads, resolver = self._read(wanted, isolation, max_bytes, follower)
            if first and follower.replica_id >= 0:
                reads = self._record_follower(wanted, reads, follower)
            first = False
            remaining = deadline - loop.time()
            if (remaining <= 0 or not wanted
                    or sum(records_size(r.records) for r in reads) >= min_bytes
                    or any(r.error != ErrorCode.NONE or r.diverging_epoch
                           or r.preferred_read_replica != NO_PREFERRED_REPLICA for r in reads)
                    or newly_led):
                return reads, resolver
            newly_led = await self._park(resolver.hosted, isolation, follower.replica_id,
                                         remaining)

    async def _park(self, partitions: list[HostedPartition], isolation: FetchIsolation,
                    replica_id: int, timeout_s: float) -> bool:
        """Wait in the Fetch purgatory until one of ``partitions`` moves or ``timeout_s``
        passes (False), or until this broker starts leading a partition the fetching
        follower ``replica_id`` replicates (True: answer now)."""
        delayed = self._replicas.delayed
        purgatories = delayed.purgatories
        op = _DelayedFetch(partitions, isolation, replica_id, purgatories.led,
                           delayed.deadline_ms(timeout_s * 1000))
        keys: list[TopicPartition | FollowerKey] = [part.tp for part in partitions]
        if replica_id >= 0:
            keys.append(FollowerKey(replica_id))
        await delayed.wait(purgatories.fetch, op, keys)
        return op.newly_led

    def _record_follower(self, wanted: list[PartitionFetch[PartitionKey]],
                         reads: list[PartitionRead], follower: _Follower
                         ) -> list[PartitionRead]:
        """Record the follower's fetch on each partition read without error or
        divergence; a refused update (an older broker incarnation) replaces the read."""
        now_ms = self._replicas.clock_ms()
        recorded = []
        for fetch, read, start in zip(wanted, reads, follower.log_starts, strict=True):
            if read.error == ErrorCode.NONE and read.diverging_epoch is None:
                topic, index, _ = fetch.key
                code = self._replicas.record_follower_fetch(
                    self._replicas.partition_for(topic, index), follower.replica_id,
                    broker_epoch=follower.broker_epoch, fetch_offset=fetch.fetch_offset,
                    log_start_offset=start, leader_end_offset=read.log_end_offset,
                    now_ms=now_ms)
                if code != ErrorCode.NONE:
                    recorded.append(PartitionRead(code))
                    continue
            recorded.append(read)
        return recorded

    def _answers(self, version: int, wanted: list[PartitionFetch[PartitionKey]],
                 reads: list[PartitionRead], resolver: _Resolver) -> list[Answer]:
        """Each partition's answer at ``version``: the leader hints and divergence from v12
        (older versions lack the fields); records are the log's bytes as read, not
        copied."""
        hints = version >= FIRST_LEADER_HINT_VERSION
        answers = []
        for fetch, read in zip(wanted, reads, strict=True):
            topic, index, _ = fetch.key
            leader = resolver.leaders.get(fetch.key, (-1, -1)) if hints else (-1, -1)
            diverging = read.diverging_epoch or (-1, -1)
            answers.append(((topic, index), PartitionData(
                partition_index=index, error_code=read.error,
                high_watermark=read.high_watermark,
                last_stable_offset=read.last_stable_offset,
                log_start_offset=read.log_start_offset,
                diverging_epoch=EpochEndOffset(epoch=diverging[0], end_offset=diverging[1]),
                current_leader=LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1]),
                preferred_read_replica=read.preferred_read_replica,
                aborted_transactions=_aborted_transactions(read),
                records=read.records)))
        return answers

    def _endpoints(self, resolver: _Resolver) -> tuple[NodeEndpoint, ...]:
        """The named leaders' endpoints on this listener (Fetch v16+, KIP-951)."""
        brokers = self._replicas.image.cluster.brokers
        found = []
        for leader_id in sorted({leader for leader, _ in resolver.leaders.values()}):
            broker = brokers.get(leader_id)
            endpoint = None if broker is None or broker.fenced else next(
                (e for e in broker.listeners if e.name == self._listener), None)
            if endpoint is not None:
                found.append(NodeEndpoint(node_id=leader_id, host=endpoint.host,
                                          port=endpoint.port,
                                          rack=broker.rack if broker else None))
        return tuple(found)


def _answered_size(answer: PartitionData) -> int:
    """The bytes of records an answer carries, in memory or left in a file."""
    records = answer.records
    return records.length if isinstance(records, Splice) else len(records or b"")


def _failed(request: FetchRequest, version: int, error: ErrorCode) -> FetchResponse:
    """Kafka's ``FetchRequest.getErrorResponse``: the error at the top with the session
    the request named, and before v13 on each of its partitions too."""
    topics = () if version >= FIRST_TOPIC_ID_VERSION else tuple(
        FetchableTopicResponse(topic=topic.topic, partitions=tuple(
            PartitionData(partition_index=part.partition, error_code=error,
                          high_watermark=-1, aborted_transactions=(), records=b"")
            for part in topic.partitions))
        for topic in request.topics)
    return FetchResponse(error_code=error, session_id=request.session_id, responses=topics)


def _fetch_data(request: FetchRequest, by_id: bool) -> dict[SessionKey, FetchPartition]:
    """Kafka's ``FetchRequest.fetchData``: a map by topic (its id from v13) and partition,
    so a partition named twice is read once, where it first appears, with what it last
    asked."""
    data: dict[SessionKey, FetchPartition] = {}
    for topic in request.topics:
        name: str | uuid.UUID = topic.topic_id if by_id else topic.topic
        for part in topic.partitions:
            data[(name, part.partition)] = part
    return data


def _forgotten(request: FetchRequest, by_id: bool) -> list[SessionKey]:
    """The partitions the request takes out of its session (v7+)."""
    return [(topic.topic_id if by_id else topic.topic, index)
            for topic in request.forgotten_topics_data for index in topic.partitions]


def _request_of(request: FetchRequest, asked: list[tuple[SessionKey, FetchPartition]],
                fetch_data: dict[SessionKey, FetchPartition]) -> FetchRequest:
    """``request`` as naming the partitions its session reads (for the authorizer):
    itself, unless the session's partitions are others than its ``fetch_data``."""
    if len(asked) == len(fetch_data) and all(key in fetch_data for key, _ in asked):
        return request
    return dataclasses.replace(request, topics=tuple(
        FetchTopic(topic_id=topic, partitions=(part,)) if isinstance(topic, uuid.UUID)
        else FetchTopic(topic=topic, partitions=(part,)) for (topic, _), part in asked))


def _topic_responses(answers: list[Answer]) -> tuple[FetchableTopicResponse, ...]:
    """The answers by topic, named as the request named it (by id from v13); a topic's
    consecutive partitions share an entry (``FetchResponse.toMessage`` keeps their
    order)."""
    grouped: list[tuple[str | uuid.UUID, list[PartitionData]]] = []
    for (topic, _), answer in answers:
        if grouped and grouped[-1][0] == topic:
            grouped[-1][1].append(answer)
        else:
            grouped.append((topic, [answer]))
    return tuple(FetchableTopicResponse(topic_id=topic, partitions=tuple(parts))
                 if isinstance(topic, uuid.UUID)
                 else FetchableTopicResponse(topic=topic, partitions=tuple(parts))
                 for topic, parts in grouped)


def _aborted_transactions(read: PartitionRead
                          ) -> tuple[AbortedTransaction, ...] | None:
    """The aborted transactions a committed read may meet; None (null) for a read of
    uncommitted records or a failed read; an empty array for a partition refused before
    reading (see :data:`_REFUSED_BEFORE_READING`)."""
    if read.error in _REFUSED_BEFORE_READING:
        return ()
    if read.aborted is None or read.error != ErrorCode.NONE:
        return None
    return tuple(AbortedTransaction(producer_id=txn.producer_id, first_offset=txn.first_offset)
                 for txn in read.aborted)


class _DelayedFetch(DelayedOperation):
    """Kafka's DelayedFetch, woken rather than read: completes when a partition's view
    moved since the read (see :func:`_view`), or for a follower (``replica_id`` >= 0) when
    ``led`` counts a new partition led here that it replicates (``newly_led``: its fetcher
    adds a partition to its next request only, and waiting out ``max_wait_ms`` would hold
    back its first records and every acks=all produce to it)."""

    def __init__(self, partitions: list[HostedPartition], isolation: FetchIsolation,
                 replica_id: int, led: Counter[int], deadline_ms: int) -> None:
        super().__init__(deadline_ms)
        self._parked = [(part, _view(part, isolation)) for part in partitions]
        self._isolation = isolation
        self._replica_id = replica_id
        self._led = led
        self._led_at = led[replica_id] if replica_id >= 0 else 0
        self.newly_led = False

    def try_complete(self) -> bool:
        if self._replica_id >= 0 and self._led[self._replica_id] != self._led_at:
            self.newly_led = True
            return self.force_complete()
        if any(_view(part, self._isolation) != view for part, view in self._parked):
            return self.force_complete()
        return False

    def on_complete(self, expired: bool) -> None:
        """Nothing to do here: the awaiting request reads its partitions again."""


def _view(part: HostedPartition, isolation: FetchIsolation) -> tuple[int, int, int, bool]:
    """What a read of ``part`` depends on: how far it may read (the log end for a follower,
    so a high watermark move alone does not wake one), its log start and leadership."""
    return upper_bound(part, isolation), part.log_start_offset, part.leader_epoch, part.is_leader
