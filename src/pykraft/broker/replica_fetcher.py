"""Follower fetchers: Kafka's ``ReplicaFetcherManager`` and ``ReplicaFetcherThread`` as
asyncio tasks of the broker's event loop.

Interface (wired by :class:`pykraft.broker.broker_server.BrokerServer`)::

    fetchers = ReplicaFetcherManager(broker_id, replicas, FetcherConfig.of(properties),
                                     listener_name, now_ms, broker_epoch)
    fetchers.update(image)     # after ReplicaManager.apply_image: add/remove partitions
    fetchers.start()           # tasks run from here on
    await fetchers.stop()

Each hosted partition this broker follows is fetched from its leader by one of
``num.replica.fetchers`` fetchers per source broker (chosen by Kafka's hash of topic and
partition), each with its own connection to the leader's ``inter.broker.listener.name``
endpoint (the settings resolve it; over TLS when that listener is SSL or SASL_SSL, with the
``tls`` client context) from the image's broker registrations. A
leader or leader-epoch change moves the partition to a fresh fetch; becoming leader or
losing the replica removes it; idle fetchers stop.

A fetch is a Fetch at the highest version both sides speak (v4-v17; topics by id from v13)
in a fetch session with the leader (KIP-227, :mod:`pykraft.broker.fetch_session_handler`:
a full fetch opens it, then each fetch sends only the partitions added or changed and
forgets those dropped, so an idle fetcher sends and gets empty fetches; a session error
restarts it with a full fetch at once, a failed connection closes it with the next full
fetch). A partition asks from the follower's log end offset, with its log start offset and
its image's leader epoch; ``replica_id`` up to v14 and ``replica_state`` (with the broker
epoch) from v15. From v12 it carries the latest epoch of the log as ``last_fetched_epoch``
and the leader answers a divergence with ``diverging_epoch``; against an older leader a
partition first asks OffsetForLeaderEpoch (KIP-101) until its truncation completes, as
Kafka's fetcher does in its Truncating state. Per partition (Kafka's
``processFetchRequest``): records are appended as they are
(:mod:`pykraft.broker.follower_log`); a diverging epoch
truncates by Kafka's rule and the next fetch continues from the new end; on
OFFSET_OUT_OF_RANGE the leader's latest and earliest offsets (ListOffsets as a replica)
decide between truncating to the leader's end and restarting at its log start; any other
error (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, ...) backs the
partition off ``replica.fetch.backoff.ms``, by which time the next image has usually
arrived. A broken connection backs off every partition of that fetcher. The follower's
replication throttle (``replicas.throttles.follower``, Kafka's ``shouldFollowerThrottle``)
leaves a throttled partition out of sync out of a fetch while the quota is exceeded, and
counts every throttled partition's fetched bytes. Not done as in Kafka:
``replica_directory_id``, and ``num.replica.fetchers`` changed at runtime (it is read at
start-up).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass

from pykraft.broker.fetch_session_handler import FetchSessionHandler, SessionRequest
from pykraft.broker.follower_log import (
    append_as_follower,
    last_fetched_epoch,
    truncate_fully_and_start_at,
    truncate_to,
)
from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.errors import (
    CorruptRecordError,
    StorageError,
    StorageIOError,
    UnsupportedVersionError,
)
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.java import int32, java_abs, java_string_hash
from pykraft.log.partition_reads import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from pykraft.log.producer_state import ProducerStateError
from pykraft.messages.kafka.fetch_request import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ForgottenTopic,
    ReplicaState,
)
from pykraft.messages.kafka.fetch_response import FetchResponse, PartitionData
from pykraft.messages.kafka.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from pykraft.messages.kafka.list_offsets_response import ListOffsetsResponse
from pykraft.messages.kafka.offset_for_leader_epoch_request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from pykraft.messages.kafka.offset_for_leader_epoch_response import OffsetForLeaderEpochResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode, error_name, for_code
from pykraft.records.batch import records_field
from pykraft.replica.follower import truncation_for
from pykraft.replica.replication_quota import ReplicationQuota
from pykraft.runtime.kafka_client import CONNECTION_ERRORS, ClientConnection, open_with_timeout
from pykraft.runtime.sasl_client import SaslCredentials
from pykraft.runtime.waits import wait_set
from pykraft.storage.partition_log import PartitionLog

log = logging.getLogger(__name__)

FIRST_SESSION_VERSION = 7  # KIP-227
FIRST_DIVERGING_EPOCH_VERSION = 12
FIRST_TOPIC_ID_VERSION = 13
FIRST_REPLICA_STATE_VERSION = 15
#: What a fetcher speaks: Fetch (v17 down to v4; Kafka's fetchers stop at 17),
#: ListOffsets and OffsetForLeaderEpoch (v3+ names the replica) as a replica.
FETCHER_VERSIONS: Mapping[int, tuple[int, int]] = {
    ApiKey.FETCH: (4, 17),
    ApiKey.LIST_OFFSETS: (1, 11),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (3, 4),
}
#: Against a leader without topic ids, answers stay at its version so they keep names.
BY_NAME_VERSIONS: Mapping[int, tuple[int, int]] = {
    **FETCHER_VERSIONS, ApiKey.FETCH: (4, FIRST_TOPIC_ID_VERSION - 1)}

#: The session errors after which the next fetch, a full one, is sent at once.
_SESSION_ERRORS = frozenset({ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
                             ErrorCode.INVALID_FETCH_SESSION_EPOCH})

#: Opens a connection to a leader at (host, port) within a timeout in seconds.
Opener = Callable[[tuple[str, int], str, float], Awaitable[ClientConnection]]
#: Told of an I/O error applying a partition's data (its log directory failed).
DiskFailed = Callable[[PartitionLog, str, BaseException], None]


async def open_connection(address: tuple[str, int], client_id: str, timeout_s: float, *,
                          tls: ssl.SSLContext | None = None,
                          sasl: SaslCredentials | None = None) -> ClientConnection:
    """A connection whose answers come back at a version naming topics as the leader does:
    a leader before Fetch v13 is reconnected to with v12 as our highest."""
    connection = await open_with_timeout(*address, client_id=client_id,
                                         ours=FETCHER_VERSIONS, timeout_s=timeout_s, tls=tls,
                                         sasl=sasl)
    version = connection.versions.get(ApiKey.FETCH)
    if version is None or version >= FIRST_TOPIC_ID_VERSION:
        return connection
    connection.close()
    return await open_with_timeout(*address, client_id=client_id, ours=BY_NAME_VERSIONS,
                                   timeout_s=timeout_s, tls=tls, sasl=sasl)


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """The ``replica.*`` settings a fetcher uses, with Kafka's defaults."""

    num_fetchers: int = 1
    wait_max_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 1_048_576
    response_max_bytes: int = 10_485_760
    backoff_ms: int = 1_000
    socket_timeout_ms: int = 30_000
    inter_broker_listener: str | None = None

    @classmethod
    def of(cls, properties: Mapping[str, str]) -> FetcherConfig:
        def number(key: str, default: int) -> int:
            return int(properties.get(key, default))

        defaults = cls()
        return cls(
            num_fetchers=max(1, number("num.replica.fetchers", defaults.num_fetchers)),
            wait_max_ms=number("replica.fetch.wait.max.ms", defaults.wait_max_ms),
            min_bytes=number("replica.fetch.min.bytes", defaults.min_bytes),
            max_bytes=number("replica.fetch.max.bytes", defaults.max_bytes),
            response_max_bytes=number("replica.fetch.response.max.bytes",
                                      defaults.response_max_bytes),
            backoff_ms=number("replica.fetch.backoff.ms", defaults.backoff_ms),
            socket_timeout_ms=number("replica.socket.timeout.ms", defaults.socket_timeout_ms),
            inter_broker_listener=properties.get("inter.broker.listener.name") or None)


def fetcher_id(tp: TopicPartition, num_fetchers: int) -> int:
    """Kafka's ``AbstractFetcherManager.getFetcherId``: ``Utils.abs(31 * topic.hashCode +
    partition) % numFetchers`` in Java's int arithmetic."""
    return java_abs(int32(31 * java_string_hash(tp.topic) + tp.partition)) % num_fetchers


def leader_address(image: MetadataImage, leader_id: int, listener: str
                   ) -> tuple[str, int] | None:
    """The leader's endpoint on ``listener`` in its registration, if it has one."""
    broker = image.cluster.brokers.get(leader_id)
    if broker is None:
        return None
    endpoint = next((e for e in broker.listeners if e.name == listener), None)
    return None if endpoint is None else (endpoint.host, endpoint.port)


@dataclass(frozen=True, slots=True)
class FetcherKey:
    """One fetcher: the source broker, where it listens, and the fetcher number."""

    source: int
    address: tuple[str, int]
    number: int


class _FollowedPartition:
    """A partition a fetcher fetches: the replica, when it may be fetched again and its
    lag."""

    def __init__(self, part: HostedPartition) -> None:
        self.part = part
        self.leader_epoch = part.leader_epoch
        self.delayed_until = 0.0
        #: how far behind the leader's high watermark the last fetch with records (or the
        #: first answer) left it; None until then (Kafka's ``PartitionFetchState.lag``)
        self.lag: int | None = None
        #: Kafka's Truncating state: until OffsetForLeaderEpoch settled the log against
        #: the leader's (only against leaders before Fetch v12, and with an epoch to ask)
        self.truncating = last_fetched_epoch(part) >= 0


class ReplicaFetcher:
    """One fetcher task: fetches its partitions from one leader, one request at a time."""

    def __init__(self, broker_id: int, key: FetcherKey, config: FetcherConfig,
                 now_ms: Callable[[], int], broker_epoch: Callable[[], int],
                 opener: Opener = open_connection, *,
                 disk_failed: DiskFailed | None = None,
                 quota: ReplicationQuota | None = None) -> None:
        self.broker_id = broker_id
        self._quota = quota or ReplicationQuota(samples=11, window_ms=1000)  # unlimited
        self.key = key
        self._opener = opener
        self._disk_failed = disk_failed
        self._config = config
        self._now_ms = now_ms
        self._broker_epoch = broker_epoch
        self.partitions: dict[TopicPartition, _FollowedPartition] = {}
        self._changed = asyncio.Event()
        self._connection: ClientConnection | None = None
        self._session = FetchSessionHandler()
        self.task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def name(self) -> str:
        return f"ReplicaFetcherThread-{self.key.number}-{self.key.source}"

    def add(self, part: HostedPartition) -> None:
        """Fetch ``part`` from the log end on; a log without any leader epoch first
        truncates to its high watermark, as Kafka's fetcher does."""
        if last_fetched_epoch(part) < 0 and part.log_end_offset > part.high_watermark:
            truncate_to(part, part.high_watermark, self._now_ms())
        self.partitions[part.tp] = _FollowedPartition(part)
        self._changed.set()

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)
        self._changed.set()

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self.run(), name=self.name)

    async def stop(self) -> None:
        if self.task is not None:
            self._stopping = True  # ends the loop even if a cancellation is lost on the way
            self._changed.set()
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.task = None

    # ------------------------------------------------------------------ the loop

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while not self._stopping:
                now = loop.time()
                ready = [f for f in self.partitions.values() if f.delayed_until <= now]
                if not ready:
                    await self._wait(min((f.delayed_until for f in self.partitions.values()),
                                         default=None))
                    continue
                try:
                    await self._truncate_or_fetch(ready)
                except CONNECTION_ERRORS as exc:
                    log.warning("[%s] error in fetch from broker %d at %s:%d: %s: %s",
                                self.name, self.key.source, *self.key.address,
                                type(exc).__name__, exc)
                    self._disconnect()
                    self._delay(ready)
                except Exception:  # a fetcher outlives one bad answer, as Kafka's thread
                    log.exception("[%s] fetch from broker %d failed", self.name,
                                  self.key.source)
                    self._disconnect()
                    self._delay(ready)
        finally:
            self._disconnect()

    async def _wait(self, until: float | None) -> None:
        self._changed.clear()
        timeout = None if until is None else max(0.0, until - asyncio.get_running_loop().time())
        await wait_set(self._changed, timeout)

    def _delay(self, followed: Iterable[_FollowedPartition]) -> None:
        until = asyncio.get_running_loop().time() + self._config.backoff_ms / 1000
        for entry in followed:
            entry.delayed_until = until

    def _disconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _timeout_s(self) -> float:
        return (self._config.socket_timeout_ms + self._config.wait_max_ms) / 1000

    async def _version(self, api_key: ApiKey) -> int:
        """The version of ``api_key`` negotiated with the leader (connecting if needed)."""
        if self._connection is None:
            self._connection = await self._opener(
                self.key.address, f"broker-{self.broker_id}-fetcher-{self.key.number}",
                self._timeout_s())
        version = self._connection.versions.get(api_key)
        if version is None:
            raise UnsupportedVersionError(
                f"broker {self.key.source} speaks no {api_key.name} version a fetcher uses "
                f"({FETCHER_VERSIONS[api_key]})", api_key=api_key)
        return version

    async def _request(self, make: Callable[[int], object], api_key: ApiKey) -> object:
        """Build a request at the version negotiated with the leader, send it and wait at
        most ``replica.socket.timeout.ms`` (plus the fetch's own wait) for the answer."""
        version = await self._version(api_key)
        assert self._connection is not None
        async with asyncio.timeout(self._timeout_s()):
            return await self._connection.request(make(version))

    async def _truncate_or_fetch(self, ready: list[_FollowedPartition]) -> None:
        """Kafka's ``doWork``: truncate the partitions that must first, then fetch."""
        truncating = [f for f in ready if f.truncating]
        if truncating:
            if await self._version(ApiKey.FETCH) >= FIRST_DIVERGING_EPOCH_VERSION:
                for entry in truncating:  # the fetch itself detects divergence
                    entry.truncating = False
            else:
                await self._truncate_by_epochs(truncating)
        now = asyncio.get_running_loop().time()
        fetching = [f for f in ready if not f.truncating and f.delayed_until <= now]
        held_back = [f for f in fetching if self._holds_back(f)]
        fetching = [f for f in fetching if f not in held_back]
        if fetching:
            await self._fetch(fetching)
        elif held_back:  # nothing to fetch: Kafka's fetcher backs off
            self._delay(held_back)

    def _holds_back(self, followed: _FollowedPartition) -> bool:
        """Kafka's ``shouldFollowerThrottle``: a throttled partition out of sync is left
        out of the fetch (and so forgotten by the session) while the follower's quota is
        exceeded."""
        in_sync = followed.lag is not None and followed.lag <= 0
        return (not in_sync and self._quota.is_throttled(followed.part.topic,
                                                         followed.part.index)
                and self._quota.is_exceeded(self._now_ms()))

    # ------------------------------------------------------------------ Fetch

    async def _fetch(self, ready: list[_FollowedPartition]) -> None:
        """Fetch ``ready`` in the fetcher's session: only what changed is sent, and only
        partitions with something new are answered (an idle fetch is empty both ways)."""
        asked = {f.part.tp: (f, f.part.log_end_offset) for f in ready}
        version = await self._version(ApiKey.FETCH)
        wanted = {(_topic_key(f.part, version), f.part.index): self._fetch_partition(f)
                  for f in ready}
        session = self._session.build(wanted)
        try:
            response = await self._request(
                lambda at: self._fetch_request(at, session), ApiKey.FETCH)
        except BaseException:
            self._session.handle_error()
            raise
        assert isinstance(response, FetchResponse)
        by_key = {(_topic_key(f.part, version), f.part.index): f.part.tp for f in ready}
        answers = [((topic.topic_id if version >= FIRST_TOPIC_ID_VERSION else topic.topic,
                     answer.partition_index), answer)
                   for topic in response.responses for answer in topic.partitions]
        if not self._session.handle_response(response.error_code, response.session_id,
                                             (key for key, _ in answers)):
            self._session_failed(response.error_code, ready)
            return
        for key, answer in answers:
            followed, offset = asked[by_key[key]]
            if self._current(followed, offset):
                await self._handle(followed, offset, answer)

    def _session_failed(self, error: int, ready: list[_FollowedPartition]) -> None:
        """An answer not to apply: after a session error the next fetch, a full one, goes
        at once (Kafka's fetcher takes it as an empty answer); any other error backs every
        partition off."""
        log.warning("[%s] fetch from broker %d failed: %s", self.name, self.key.source,
                    error_name(error) if error != ErrorCode.NONE
                    else "an answer that does not fit the fetch session")
        if error not in _SESSION_ERRORS:
            self._delay(ready)

    def _current(self, followed: _FollowedPartition, log_end_offset: int) -> bool:
        """Still fetched by this fetcher from the same log end after an await (a new image
        may have removed or re-added it meanwhile, making an answer stale)."""
        return (self.partitions.get(followed.part.tp) is followed
                and followed.part.log_end_offset == log_end_offset)

    def _fetch_partition(self, entry: _FollowedPartition) -> FetchPartition:
        """What the fetch asks of a partition: from the log end, at the image's leader
        epoch, with the log's latest epoch and log start."""
        part = entry.part
        return FetchPartition(
            partition=part.index, current_leader_epoch=entry.leader_epoch,
            fetch_offset=part.log_end_offset, last_fetched_epoch=last_fetched_epoch(part),
            log_start_offset=part.log_start_offset, partition_max_bytes=self._config.max_bytes)

    def _fetch_request(self, version: int, session: SessionRequest) -> FetchRequest:
        """The fetch at ``version``: the replica named by ``replica_id`` up to v14, by
        ``replica_state`` with this broker's epoch from v15 (KIP-903); topics by id from
        v13. Fields a version lacks keep their defaults, so it encodes at that version."""
        topics: dict[uuid.UUID | str, list[FetchPartition]] = {}
        for (topic, _), part in session.to_send.items():
            topics.setdefault(topic, []).append(part)
        forgotten: dict[uuid.UUID | str, list[int]] = {}
        for topic, index in session.to_forget:
            forgotten.setdefault(topic, []).append(index)
        by_state = version >= FIRST_REPLICA_STATE_VERSION
        in_session = version >= FIRST_SESSION_VERSION  # else sessionless, always full
        return FetchRequest(
            replica_id=-1 if by_state else self.broker_id,
            replica_state=ReplicaState(replica_id=self.broker_id,
                                       replica_epoch=self._broker_epoch())
            if by_state else ReplicaState(),
            max_wait_ms=self._config.wait_max_ms, min_bytes=self._config.min_bytes,
            max_bytes=self._config.response_max_bytes,
            session_id=session.session_id if in_session else 0,
            session_epoch=session.epoch if in_session else -1,
            topics=tuple(_fetch_topic(key, parts) for key, parts in topics.items()),
            forgotten_topics_data=tuple(_forgotten_topic(key, indexes)
                                        for key, indexes in forgotten.items()))

    # ------------------------------------------------------------------ OffsetForLeaderEpoch

    async def _truncate_by_epochs(self, truncating: list[_FollowedPartition]) -> None:
        """Kafka's ``maybeTruncate`` against a leader before Fetch v12: ask where the
        leader's log has our latest epoch end, truncate there; done when the leader knew
        the epoch we asked about, else ask again from the epoch we are back to."""
        asked = {(f.part.topic, f.part.index): (f, f.part.log_end_offset) for f in truncating}

        def make(_: int) -> OffsetForLeaderEpochRequest:  # v3+ (FETCHER_VERSIONS): one class
            topics: dict[str, list[OffsetForLeaderPartition]] = {}
            for entry in truncating:
                topics.setdefault(entry.part.topic, []).append(OffsetForLeaderPartition(
                    partition=entry.part.index, current_leader_epoch=entry.leader_epoch,
                    leader_epoch=last_fetched_epoch(entry.part)))
            return OffsetForLeaderEpochRequest(replica_id=self.broker_id, topics=tuple(
                OffsetForLeaderTopic(topic=name, partitions=tuple(parts))
                for name, parts in topics.items()))

        response = await self._request(make, ApiKey.OFFSET_FOR_LEADER_EPOCH)
        assert isinstance(response, OffsetForLeaderEpochResponse)
        for topic in response.topics:
            for answer in topic.partitions:
                found = asked.get((topic.topic, answer.partition))
                if found is None or not self._current(*found):
                    continue
                followed, end = found
                if answer.error_code != ErrorCode.NONE:
                    log.info("[%s] %s-%d: OffsetForLeaderEpoch answered %s; backing off",
                             self.name, topic.topic, answer.partition,
                             ErrorCode(answer.error_code).name)
                    self._delay([followed])
                    continue
                cut = truncation_for(followed.part.log.leader_epochs,
                                     followed.part.log_end_offset,
                                     answer.leader_epoch, answer.end_offset, end)
                truncate_to(followed.part, cut.offset, self._now_ms())
                followed.truncating = not cut.completed and last_fetched_epoch(
                    followed.part) >= 0

    async def _handle(self, followed: _FollowedPartition, fetch_offset: int,
                      answer: PartitionData) -> None:
        part = followed.part
        error = for_code(answer.error_code)
        try:
            if error == ErrorCode.NONE:
                self._apply(followed, fetch_offset, answer)
            elif error == ErrorCode.OFFSET_OUT_OF_RANGE:
                await self._out_of_range(followed)
            else:
                log.info("[%s] %s-%d: fetch answered %s; backing off %d ms", self.name,
                         part.topic, part.index, error.name, self._config.backoff_ms)
                self._delay([followed])
        except (CorruptRecordError, StorageError, ProducerStateError, OSError) as exc:
            log.error("[%s] %s-%d: cannot apply the leader's data at offset %d: %s",
                      self.name, part.topic, part.index, fetch_offset, exc)
            if isinstance(exc, (StorageIOError, OSError)) and self._disk_failed is not None:
                self._disk_failed(part.log, "appending fetched records to", exc)
            self._delay([followed])

    def _apply(self, followed: _FollowedPartition, fetch_offset: int,
               answer: PartitionData) -> None:
        part = followed.part
        diverging = answer.diverging_epoch
        if diverging.epoch >= 0 or diverging.end_offset >= 0:
            cut = truncation_for(part.log.leader_epochs, part.log_end_offset,
                                 diverging.epoch, diverging.end_offset, fetch_offset)
            log.info("%s-%d: truncating to offset %d for the leader's diverging epoch %d "
                     "ending at %d", part.topic, part.index, cut.offset, diverging.epoch,
                     diverging.end_offset)
            truncate_to(part, cut.offset, self._now_ms())
            return
        records = records_field(answer.records)
        append_as_follower(part, records,
                           leader_high_watermark=answer.high_watermark,
                           leader_log_start_offset=answer.log_start_offset,
                           now_ms=self._now_ms())
        if records or followed.lag is None:
            followed.lag = max(0, answer.high_watermark - part.log_end_offset)
        if self._quota.is_throttled(part.topic, part.index):  # in sync or not, it counts
            self._quota.record(len(records), self._now_ms())

    # ------------------------------------------------------------------ out of range

    async def _out_of_range(self, followed: _FollowedPartition) -> None:
        """Kafka's ``fetchOffsetAndTruncate``: behind the leader's end, truncate to it;
        before the leader's log start, restart empty there."""
        part = followed.part
        end = part.log_end_offset
        leader_end = await self._list_offset(followed, LATEST_TIMESTAMP)
        if leader_end is None or not self._current(followed, end):
            return
        if leader_end < end:
            log.warning("%s-%d: our log end %d is past the leader's %d; truncating",
                        part.topic, part.index, end, leader_end)
            truncate_to(part, leader_end, self._now_ms())
            return
        leader_start = await self._list_offset(followed, EARLIEST_TIMESTAMP)
        if leader_start is None or not self._current(followed, end):
            return
        if leader_start > end:
            log.warning("%s-%d: the leader's log starts at %d, after our end %d; restarting "
                        "the log there", part.topic, part.index, leader_start, end)
            truncate_fully_and_start_at(part, leader_start, self._now_ms())
        else:  # in range by now (the leader moved meanwhile): fetch again after a pause
            self._delay([followed])

    async def _list_offset(self, followed: _FollowedPartition, timestamp: int) -> int | None:
        part = followed.part

        def make(_: int) -> ListOffsetsRequest:  # one class: each version writes its fields
            return ListOffsetsRequest(
                replica_id=self.broker_id, timeout_ms=self._config.socket_timeout_ms,
                topics=(ListOffsetsTopic(name=part.topic, partitions=(ListOffsetsPartition(
                    partition_index=part.index, current_leader_epoch=followed.leader_epoch,
                    timestamp=timestamp),)),))

        response = await self._request(make, ApiKey.LIST_OFFSETS)
        assert isinstance(response, ListOffsetsResponse)
        for topic in response.topics:
            for answer in topic.partitions:
                if topic.name == part.topic and answer.partition_index == part.index:
                    if answer.error_code == ErrorCode.NONE:
                        return answer.offset
                    log.info("[%s] %s-%d: ListOffsets answered %s", self.name, part.topic,
                             part.index, ErrorCode(answer.error_code).name)
        self._delay([followed])
        return None


def _fetch_topic(key: uuid.UUID | str, partitions: list[FetchPartition]) -> FetchTopic:
    if isinstance(key, uuid.UUID):
        return FetchTopic(topic_id=key, partitions=tuple(partitions))
    return FetchTopic(topic=key, partitions=tuple(partitions))


def _forgotten_topic(key: uuid.UUID | str, partitions: list[int]) -> ForgottenTopic:
    if isinstance(key, uuid.UUID):
        return ForgottenTopic(topic_id=key, partitions=tuple(partitions))
    return ForgottenTopic(topic=key, partitions=tuple(partitions))


def _topic_key(part: HostedPartition, version: int) -> uuid.UUID | str:
    """How a Fetch of ``version`` names the partition's topic: its id from v13."""
    return part.topic_id if version >= FIRST_TOPIC_ID_VERSION else part.topic


class ReplicaFetcherManager:
    """Which fetcher fetches which followed partition, from one image to the next."""

    def __init__(self, broker_id: int, replicas: ReplicaManager, config: FetcherConfig,
                 listener_name: str, now_ms: Callable[[], int],
                 broker_epoch: Callable[[], int], tls: ssl.SSLContext | None = None,
                 sasl: SaslCredentials | None = None) -> None:
        self.broker_id = broker_id
        self._opener: Opener = functools.partial(open_connection, tls=tls, sasl=sasl)
        self._replicas = replicas
        self._config = config
        self._listener = config.inter_broker_listener or listener_name
        self._now_ms = now_ms
        self._broker_epoch = broker_epoch
        self.fetchers: dict[FetcherKey, ReplicaFetcher] = {}
        self._assigned: dict[TopicPartition, tuple[FetcherKey, HostedPartition, int]] = {}
        self._running = False
        self._stopping: set[asyncio.Task[None]] = set()

    def update(self, image: MetadataImage) -> None:
        """Follow every hosted partition led elsewhere, from its current leader and epoch."""
        wanted: dict[TopicPartition, tuple[FetcherKey, HostedPartition]] = {}
        for tp, part in self._replicas.partitions.items():
            if part.is_leader or part.leader_id < 0:
                continue
            address = leader_address(image, part.leader_id, self._listener)
            if address is None:
                log.warning("%s-%d: leader %d has no %s endpoint; not fetching", tp.topic,
                            tp.partition, part.leader_id, self._listener)
                continue
            wanted[tp] = (FetcherKey(part.leader_id, address,
                                     fetcher_id(tp, self._config.num_fetchers)), part)
        for tp, (key, part, epoch) in list(self._assigned.items()):
            if wanted.get(tp) != (key, part) or part.leader_epoch != epoch:
                self.fetchers[key].remove(tp)
                del self._assigned[tp]
        for tp, (key, part) in wanted.items():
            if tp not in self._assigned:
                self._fetcher(key).add(part)
                self._assigned[tp] = (key, part, part.leader_epoch)
        for key, fetcher in list(self.fetchers.items()):
            if not fetcher.partitions:
                del self.fetchers[key]
                self._stop_later(fetcher)

    def _fetcher(self, key: FetcherKey) -> ReplicaFetcher:
        fetcher = self.fetchers.get(key)
        if fetcher is None:
            fetcher = self.fetchers[key] = ReplicaFetcher(
                self.broker_id, key, self._config, self._now_ms, self._broker_epoch,
                self._opener, disk_failed=self._replicas.log_dir_failed,
                quota=self._replicas.throttles.follower)
            if self._running:
                fetcher.start()
        return fetcher

    def _stop_later(self, fetcher: ReplicaFetcher) -> None:
        if fetcher.task is None:
            return
        task = asyncio.get_running_loop().create_task(fetcher.stop())
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    def start(self) -> None:
        self._running = True
        for fetcher in self.fetchers.values():
            fetcher.start()

    async def stop(self) -> None:
        self._running = False
        for fetcher in self.fetchers.values():
            await fetcher.stop()
        for task in list(self._stopping):
            await task
