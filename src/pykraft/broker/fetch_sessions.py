"""Which partitions a Fetch reads and which of their answers it sends, by its session
(KIP-227): Kafka's ``FetchManager`` and ``FetchContext``s, sans I/O.

Interface::

    manager = FetchManager(FetchSessionCache(slots, rng))
    context = manager.new_context(version, session_id, session_epoch, privileged=...,
                                  fetch_data=..., forgotten=..., now_ms=...)
    context.partitions        # [(key, FetchPartition)]: what to read, in order
    error, session_id, answers = context.respond(answers, now_ms)  # what to send

Kafka's rules (``FetchManager.newContext``): a full fetch (epoch 0 or -1) closes the session
it names; epoch -1 reads sessionless, epoch 0 answers in full and then opens a session of
its partitions if the cache has room (its id in the answer, else 0). Any other epoch is an
incremental fetch of a session: FETCH_SESSION_ID_NOT_FOUND if unknown,
INVALID_FETCH_SESSION_EPOCH unless the epoch is the session's next, and
FETCH_SESSION_TOPIC_ID_ERROR when the request's version names topics otherwise than the
session does (by id from v13); each error answers no partitions and session id 0. Otherwise
the request's partitions are added to the session or update its cached parameters, its
forgotten ones leave (a session left empty is closed and the fetch is sessionless), and
every partition of the session is read. Its answer keeps only the partitions with
something new (``CachedPartition.maybeUpdateResponseData``): records, an error, a diverging
epoch, or a high watermark or log start other than last answered; a partition that brought
records moves to the end of the session so the others are read first next time. Should
another fetch of the session come meanwhile (a duplicate: the epoch moved on), the answer
is INVALID_FETCH_SESSION_EPOCH with the session's id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pykraft.broker.fetch_session_cache import (
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSession,
    FetchSessionCache,
    SessionKey,
    next_epoch,
)
from pykraft.messages.kafka.fetch_request import FetchPartition
from pykraft.messages.kafka.fetch_response import PartitionData
from pykraft.messages.splice import Splice
from pykraft.protocol.errors import ErrorCode

INITIAL_EPOCH = 0  # FetchMetadata.INITIAL_EPOCH / FINAL_EPOCH: a full fetch
FINAL_EPOCH = -1
FIRST_TOPIC_ID_VERSION = 13

#: A partition's answer, by its session key.
Answer = tuple[SessionKey, PartitionData]
#: What a fetch sends: its error, its session id and the answers it keeps.
Respond = tuple[ErrorCode, int, list[Answer]]


class FetchContext(Protocol):
    """How one fetch reads and answers (Kafka's ``FetchContext``)."""

    @property
    def partitions(self) -> list[tuple[SessionKey, FetchPartition]]:
        """The partitions to read, in order, with their fetch parameters."""

    def respond(self, answers: list[Answer], now_ms: int) -> Respond:
        """The answer to send of the reads of :attr:`partitions`."""

    def throttled(self) -> tuple[ErrorCode, int]:
        """The error and session id of an answer sent empty, its client throttled: no
        session opened, none updated (Kafka's ``getThrottledResponse``)."""


@dataclass(frozen=True, slots=True)
class SessionError:
    """A session error: nothing read, no partition answered."""

    error: ErrorCode

    @property
    def partitions(self) -> list[tuple[SessionKey, FetchPartition]]:
        return []

    def respond(self, answers: list[Answer], now_ms: int) -> Respond:
        return self.error, INVALID_SESSION_ID, []

    def throttled(self) -> tuple[ErrorCode, int]:
        return self.error, INVALID_SESSION_ID


@dataclass(frozen=True, slots=True)
class Sessionless:
    """A full fetch that opens no session."""

    fetch_data: dict[SessionKey, FetchPartition]

    @property
    def partitions(self) -> list[tuple[SessionKey, FetchPartition]]:
        return list(self.fetch_data.items())

    def respond(self, answers: list[Answer], now_ms: int) -> Respond:
        return ErrorCode.NONE, INVALID_SESSION_ID, answers

    def throttled(self) -> tuple[ErrorCode, int]:
        return ErrorCode.NONE, INVALID_SESSION_ID


@dataclass(frozen=True, slots=True)
class FullFetch:
    """A full fetch that opens a session of its partitions, room permitting."""

    cache: FetchSessionCache
    fetch_data: dict[SessionKey, FetchPartition]
    privileged: bool
    uses_topic_ids: bool

    @property
    def partitions(self) -> list[tuple[SessionKey, FetchPartition]]:
        return list(self.fetch_data.items())

    def respond(self, answers: list[Answer], now_ms: int) -> Respond:
        cached = {key: CachedPartition(self.fetch_data[key], answer.high_watermark,
                                       answer.log_start_offset) for key, answer in answers}
        session_id = self.cache.create(now_ms, privileged=self.privileged,
                                       uses_topic_ids=self.uses_topic_ids, partitions=cached)
        return ErrorCode.NONE, session_id, answers

    def throttled(self) -> tuple[ErrorCode, int]:
        return ErrorCode.NONE, INVALID_SESSION_ID


class IncrementalFetch:
    """A fetch in a session: reads all its partitions, answers what changed."""

    def __init__(self, session: FetchSession) -> None:
        self._session = session
        self._epoch = session.epoch  # the session's, bumped for this fetch
        self._partitions = [(key, cached.request)
                            for key, cached in session.partitions.items()]

    @property
    def partitions(self) -> list[tuple[SessionKey, FetchPartition]]:
        return self._partitions

    def respond(self, answers: list[Answer], now_ms: int) -> Respond:
        session = self._session
        if session.epoch != self._epoch:
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, []
        kept = []
        for key, answer in answers:
            cached = session.partitions[key]
            if _must_respond(cached, answer):
                kept.append((key, answer))
                if _has_records(answer):
                    del session.partitions[key]
                    session.partitions[key] = cached
        return ErrorCode.NONE, session.id, kept

    def throttled(self) -> tuple[ErrorCode, int]:
        if self._session.epoch != self._epoch:
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, self._session.id
        return ErrorCode.NONE, self._session.id


def _must_respond(cached: CachedPartition, answer: PartitionData) -> bool:
    """Kafka's ``maybeUpdateResponseData``, updating the cached answer as it goes."""
    must = _has_records(answer)
    if cached.high_watermark != answer.high_watermark:
        must = True
        cached.high_watermark = answer.high_watermark
    if cached.log_start_offset != answer.log_start_offset:
        must = True
        cached.log_start_offset = answer.log_start_offset
    if answer.preferred_read_replica != -1:
        must = True  # the consumer is to move to that replica (KIP-392)
    if answer.error_code != ErrorCode.NONE:
        cached.high_watermark = -1  # answered again once the error goes away
        must = True
    diverging = answer.diverging_epoch
    return must or diverging.epoch != -1 or diverging.end_offset != -1


def _has_records(answer: PartitionData) -> bool:
    """Whether the answer carries records (in memory, or left in a segment file)."""
    records = answer.records
    if isinstance(records, Splice):
        return records.length > 0
    return bool(records)


class FetchManager:
    """The fetch contexts of one broker's fetches, over its session cache."""

    def __init__(self, cache: FetchSessionCache) -> None:
        self.cache = cache

    def new_context(self, version: int, session_id: int, epoch: int, *, privileged: bool,
                    fetch_data: dict[SessionKey, FetchPartition],
                    forgotten: list[SessionKey], now_ms: int) -> FetchContext:
        """The context of a fetch (``privileged``: a follower's); raises
        :class:`~pykraft.broker.fetch_session_cache.SessionIdOutOfRangeError` as Kafka throws."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.cache.remove(session_id)
            if epoch == FINAL_EPOCH:
                return Sessionless(fetch_data)
            return FullFetch(self.cache, fetch_data, privileged,
                             version >= FIRST_TOPIC_ID_VERSION)
        session = self.cache.get(session_id)
        if session is None:
            return SessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= FIRST_TOPIC_ID_VERSION):
            return SessionError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        _update(session, fetch_data, forgotten)
        if not session.partitions:
            self.cache.remove(session.id)
            return Sessionless(fetch_data)
        self.cache.touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        return IncrementalFetch(session)


def _update(session: FetchSession, fetch_data: dict[SessionKey, FetchPartition],
            forgotten: list[SessionKey]) -> None:
    """Kafka's ``FetchSession.update``: add or re-parameterise the requested partitions
    (new ones unanswered yet), then drop the forgotten ones."""
    for key, request in fetch_data.items():
        cached = session.partitions.get(key)
        if cached is None:
            session.partitions[key] = CachedPartition(request)
        else:
            cached.request = request
    for key in forgotten:
        session.partitions.pop(key, None)
