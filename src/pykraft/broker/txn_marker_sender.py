"""The transaction coordinator's marker sender (Kafka's ``TransactionMarkerChannelManager``):
each partition of a finished transaction gets its COMMIT or ABORT marker from its leader.

Interface::

    sender = MarkerSender(broker_id, replicas, connect, written=..., current=...,
                          timeout_ms=request.timeout.ms)
    sender.send(order)      # a MarkerOrder from the transaction shard
    await sender.close()

Markers wait in one queue per destination broker: the partition's leader in this broker's
metadata image. A partition whose topic or partition is gone leaves the transaction at once
(``written``); one without a leader waits and is placed again every
:data:`RETRY_BACKOFF_MS`. Each destination has one WriteTxnMarkers in flight, carrying every
marker queued for it, one entry per transaction. Markers for partitions this broker leads
are written in place, through the same handler a peer's request reaches; the others go over
the inter-broker listener, one connection per broker.

Each partition's answer is acted on by :func:`~pykraft.txn.marker_results.marker_action`:
written, sent again to the leader of then after :data:`RETRY_BACKOFF_MS`, or the
transaction's markers stopped. A connection that fails sends everything it carried again.
A transaction whose coordinator no longer leads in the order's epoch (``current`` says
no) is dropped: the coordinator that took over sends its markers.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from pykraft.broker.replica_manager import ReplicaManager
from pykraft.broker.txn_markers import write_txn_markers
from pykraft.errors import NetworkError
from pykraft.ids import TopicPartition
from pykraft.image.topics import NO_LEADER
from pykraft.messages.kafka.write_txn_markers_request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from pykraft.messages.kafka.write_txn_markers_response import WriteTxnMarkersResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.kafka_client import CONNECTION_ERRORS, ClientConnection
from pykraft.runtime.logfmt import event
from pykraft.txn.marker_results import MarkerAction, marker_action
from pykraft.txn.requests import MarkerOrder

log = logging.getLogger(__name__)

#: What the sender speaks to another broker.
MARKER_SENDER_VERSIONS: Mapping[int, tuple[int, int]] = {ApiKey.WRITE_TXN_MARKERS: (1, 2)}
#: Kafka's ``retry.backoff.ms`` default, between attempts at a marker.
RETRY_BACKOFF_MS = 100
#: Opens a connection to broker ``id`` (None: it has no inter-broker endpoint now).
Connector = Callable[[int], Awaitable[ClientConnection | None]]
#: Told that ``partition`` of ``order`` has its marker (or needs none any more).
Written = Callable[[MarkerOrder, TopicPartition], None]


@dataclass(frozen=True, slots=True)
class _Marker:
    order: MarkerOrder
    partition: TopicPartition


class MarkerSender:
    """The markers of every transaction this broker coordinates, by destination."""

    def __init__(self, broker_id: int, replicas: ReplicaManager, connect: Connector, *,
                 written: Written, current: Callable[[MarkerOrder], bool],
                 clock_ms: Callable[[], int], timeout_ms: int) -> None:
        self._broker_id = broker_id
        self._replicas = replicas
        self._connect = connect
        self._written = written
        self._current = current
        self._clock_ms = clock_ms
        self._timeout_ms = timeout_ms
        self._queues: defaultdict[int, list[_Marker]] = defaultdict(list)
        self._senders: dict[int, asyncio.Task[None]] = {}
        self._connections: dict[int, ClientConnection] = {}
        self._unplaced: list[_Marker] = []
        self._retry: asyncio.TimerHandle | None = None
        self._closed = False

    @property
    def unknown_destination_queue_size(self) -> int:
        """Markers waiting for their partition's leader to be known (Kafka's
        UnknownDestinationQueueSize)."""
        return len(self._unplaced)

    def send(self, order: MarkerOrder) -> None:
        """Queue a marker for each partition of ``order``."""
        for partition in sorted(order.partitions):
            self._place(_Marker(order, partition))

    def _place(self, marker: _Marker) -> None:
        if self._closed or not self._current(marker.order):
            return
        image = self._replicas.image
        topic = image.topics.by_name.get(marker.partition.topic)
        registration = None if topic is None else topic.partitions.get(
            marker.partition.partition)
        if registration is None:  # deleted: nothing to mark (Kafka's removeMarkersForTxn)
            self._written(marker.order, marker.partition)
            return
        if registration.leader == NO_LEADER:
            self._unplaced.append(marker)
            self._schedule_retry()
            return
        self._queues[registration.leader].append(marker)
        self._wake(registration.leader)

    def _schedule_retry(self) -> None:
        if self._retry is None and not self._closed:
            self._retry = asyncio.get_running_loop().call_later(
                RETRY_BACKOFF_MS / 1000, self._place_again)

    def _place_again(self) -> None:
        self._retry = None
        waiting, self._unplaced = self._unplaced, []
        for marker in waiting:
            self._place(marker)

    def _retry_later(self, markers: list[_Marker]) -> None:
        self._unplaced.extend(markers)
        self._schedule_retry()

    def _wake(self, destination: int) -> None:
        if destination not in self._senders and not self._closed:
            task = asyncio.get_running_loop().create_task(self._drain(destination))
            self._senders[destination] = task
            task.add_done_callback(lambda _: self._senders.pop(destination, None))

    async def _drain(self, destination: int) -> None:
        """Send what is queued for ``destination``, one request at a time, until empty."""
        while self._queues.get(destination) and not self._closed:
            batch = [m for m in self._queues.pop(destination) if self._current(m.order)]
            if not batch:
                continue
            try:
                answers = await self._exchange(destination, batch)
            except (NetworkError, *CONNECTION_ERRORS) as exc:
                self._forget(destination)
                event(log, "txn_markers_send_failed", level=logging.INFO,
                      broker=destination, markers=len(batch), error=str(exc))
                self._retry_later(batch)
                continue
            self._settle(batch, answers)

    async def _exchange(self, destination: int, batch: list[_Marker]
                        ) -> dict[tuple[int, TopicPartition], ErrorCode]:
        """Each marker's answer from ``destination``, by (producer id, partition): the
        answer's key, as Kafka's ``errorsByProducerId``."""
        request = _request(batch)
        response: WriteTxnMarkersResponse
        if destination == self._broker_id:
            response = await write_txn_markers(request, self._replicas, now_ms=self._clock_ms,
                                               timeout_ms=self._timeout_ms)
        else:
            connection = self._connections.get(destination)
            if connection is None:
                connection = await self._connect(destination)
                if connection is None:
                    raise NetworkError(f"broker {destination} has no inter-broker endpoint")
                self._connections[destination] = connection
            try:  # bounded as Kafka's channel bounds it: a silent peer is a lost one
                answer = await asyncio.wait_for(connection.request(request),
                                                self._timeout_ms / 1000)
            except TimeoutError:
                raise NetworkError(f"broker {destination} did not answer WriteTxnMarkers "
                                   f"within {self._timeout_ms} ms") from None
            assert isinstance(answer, WriteTxnMarkersResponse)
            response = answer
        return {(m.producer_id, TopicPartition(t.name, p.partition_index)):
                ErrorCode(p.error_code)
                for m in response.markers for t in m.topics for p in t.partitions}

    def _settle(self, batch: list[_Marker],
                answers: dict[tuple[int, TopicPartition], ErrorCode]) -> None:
        stopped: set[MarkerOrder] = set()
        retried: list[_Marker] = []
        for marker in batch:
            if marker.order in stopped:
                continue
            error = answers.get((marker.order.producer_id, marker.partition),
                                ErrorCode.UNKNOWN_SERVER_ERROR)
            action = marker_action(error)
            if action is MarkerAction.DONE:
                self._written(marker.order, marker.partition)
            elif action is MarkerAction.RETRY:
                retried.append(marker)
            else:
                stopped.add(marker.order)
                event(log, "txn_markers_stopped", level=logging.WARNING,
                      transactional_id=marker.order.transactional_id,
                      producer_id=marker.order.producer_id,
                      producer_epoch=marker.order.producer_epoch,
                      partition=str(marker.partition), error=error.name)
        self._retry_later([m for m in retried if m.order not in stopped])

    def _forget(self, destination: int) -> None:
        connection = self._connections.pop(destination, None)
        if connection is not None:
            connection.close()

    async def close(self) -> None:
        """Stop sending (what is queued is dropped: a coordinator that loads the
        transactions again sends their markers)."""
        self._closed = True
        if self._retry is not None:
            self._retry.cancel()
        tasks = list(self._senders.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for destination in list(self._connections):
            self._forget(destination)


def _request(batch: list[_Marker]) -> WriteTxnMarkersRequest:
    """One WriteTxnMarkers entry per transaction, in the order they were queued."""
    by_order: dict[MarkerOrder, list[TopicPartition]] = {}
    for marker in batch:
        by_order.setdefault(marker.order, []).append(marker.partition)
    markers = []
    for order, partitions in by_order.items():
        topics: dict[str, list[int]] = {}
        for tp in partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        markers.append(WritableTxnMarker(
            producer_id=order.producer_id, producer_epoch=order.producer_epoch,
            transaction_result=order.commit, coordinator_epoch=order.coordinator_epoch,
            transaction_version=order.transaction_version,
            topics=tuple(WritableTxnMarkerTopic(name=name, partition_indexes=tuple(indexes))
                         for name, indexes in topics.items())))
    return WriteTxnMarkersRequest(markers=tuple(markers))
