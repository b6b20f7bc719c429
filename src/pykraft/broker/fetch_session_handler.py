"""A fetcher's side of a fetch session (KIP-227): Kafka's client ``FetchSessionHandler``,
sans I/O, for the replica fetchers.

Interface::

    handler = FetchSessionHandler()
    request = handler.build(wanted)   # {(topic, index): FetchPartition} to fetch now
    request.session_id, request.epoch, request.to_send, request.to_forget
    handler.handle_response(error, session_id, answered)  # False: nothing to apply
    handler.handle_error()            # the connection failed

Kafka's rules: without a session the fetch is full (epoch 0, asking for a session; after a
failure it names the old session, which the leader then closes). Once the leader answered
with a session id, each fetch is incremental at the next epoch: it sends only the
partitions new to the session or whose parameters changed, and forgets those no longer
wanted, so an idle fetcher sends none. FETCH_SESSION_ID_NOT_FOUND starts over from no
session; any other error, a failed connection, or an answer naming a partition the
session does not hold (or, when full, omitting one) closes the session on the next full
fetch. An answer with session id 0 means no session (the leader had no room, or closed
it): the next fetch is full again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pykraft.broker.fetch_session_cache import INVALID_SESSION_ID, SessionKey, next_epoch
from pykraft.broker.fetch_sessions import INITIAL_EPOCH
from pykraft.messages.kafka.fetch_request import FetchPartition
from pykraft.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """What the next Fetch carries: its session metadata, the partitions to send and
    those to forget."""

    session_id: int
    epoch: int
    to_send: dict[SessionKey, FetchPartition]
    to_forget: list[SessionKey]

    @property
    def full(self) -> bool:
        return self.epoch == INITIAL_EPOCH


class FetchSessionHandler:
    """The session a fetcher holds with one leader, as the fetcher believes it."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self._partitions: dict[SessionKey, FetchPartition] = {}
        self._full = True  # whether the request in flight is a full one

    def build(self, wanted: dict[SessionKey, FetchPartition]) -> SessionRequest:
        """The next request for ``wanted``; the session becomes ``wanted``."""
        self._full = self.epoch == INITIAL_EPOCH
        if self._full:
            self._partitions = dict(wanted)
            return SessionRequest(self.session_id, self.epoch, dict(wanted), [])
        to_forget = [key for key in self._partitions if key not in wanted]
        to_send = {key: part for key, part in wanted.items()
                   if self._partitions.get(key) != part}
        self._partitions = dict(wanted)
        return SessionRequest(self.session_id, self.epoch, to_send, to_forget)

    def handle_response(self, error: int, session_id: int,
                        answered: Iterable[SessionKey]) -> bool:
        """Move the session on by the leader's answer; False when its partitions are not
        to be applied (an error, or an answer that does not fit the session)."""
        if error != ErrorCode.NONE:
            if error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH
            return False
        keys = set(answered)
        if not keys <= self._partitions.keys() or (self._full and keys != self._partitions.keys()):
            if self._full:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH
            return False
        if session_id == INVALID_SESSION_ID:
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        elif self._full:
            self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The request failed on the way: close the session with the next full fetch."""
        self.epoch = INITIAL_EPOCH
