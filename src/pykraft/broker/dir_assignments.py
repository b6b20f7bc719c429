"""AssignReplicasToDirs to the active controller (KIP-858, Kafka's ``AssignmentsManager``):
in which of its log directories this broker holds each replica.

A broker with several log directories is given its new replicas with the directory
UNASSIGNED: it chooses one (:meth:`pykraft.log.log_manager.LogManager.plan`) and says so
here, and so after moving a replica between directories (AlterReplicaLogDirs). The replica
manager calls :meth:`AssignmentsManager.assign` whenever the image's directory for one of
its replicas differs from the one holding its log.

Interface::

    assignments = AssignmentsManager(channel, broker_id=..., broker_epoch=callable,
                                     image=callable)
    assignments.assign(topic_id, partition, directory_id)   # queue (the latest one wins)
    assignments.assign(topic_id, partition, directory_id, on_done)  # on_done() once accepted
    task = asyncio.create_task(assignments.run())            # cancel to stop

As Kafka's: one request in flight at a time, up to :data:`MAX_ASSIGNMENTS_PER_REQUEST`
assignments each; an assignment whose partition left the image, or no longer has a replica
here, is dropped before sending; a top-level error or a failure to reach the controller
sends the whole batch again after an exponential backoff (100 ms doubling to 10 s), and a
partition answered with an error is queued again (unless a newer assignment replaced it).
An assignment's ``on_done`` runs once the controller accepted it (a log directory move
swaps its logs then); one dropped or replaced never runs it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

from pykraft.errors import NetworkError, PyKraftError
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka import assign_replicas_to_dirs_request as req
from pykraft.messages.kafka import assign_replicas_to_dirs_response as res
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.backoff import ExponentialBackoff
from pykraft.runtime.controller_channel import ControllerSender

#: Kafka's AssignmentsManager sends at most this many assignments per request.
MAX_ASSIGNMENTS_PER_REQUEST = 2250
#: Kafka's STANDARD_BACKOFF: 100 ms, doubling to 10 s, 2% jitter.
BACKOFF_INITIAL_MS, BACKOFF_MAX_MS, BACKOFF_JITTER = 100, 10_000, 0.02

Key = tuple[uuid.UUID, int]
OnDone = Callable[[], None] | None
Queued = tuple[uuid.UUID, OnDone]
log = logging.getLogger(__name__)


class AssignmentsManager:
    """Sends this broker's replica-to-directory assignments; see the module docstring."""

    def __init__(self, channel: ControllerSender, *, broker_id: int,
                 broker_epoch: Callable[[], int], image: Callable[[], MetadataImage]) -> None:
        self._channel = channel
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._image = image
        self._ready: dict[Key, Queued] = {}
        self._wake = asyncio.Event()
        self._backoff = ExponentialBackoff(BACKOFF_INITIAL_MS, BACKOFF_MAX_MS, BACKOFF_JITTER)

    @property
    def pending(self) -> int:
        """Assignments queued and not yet acknowledged by the controller."""
        return len(self._ready)

    def assign(self, topic_id: uuid.UUID, partition: int, directory_id: uuid.UUID,
               on_done: OnDone = None) -> None:
        """Queue telling the controller that our replica of the partition is in
        ``directory_id`` (replacing an earlier queued assignment of it); ``on_done()``
        once it accepted that."""
        self._ready[(topic_id, partition)] = (directory_id, on_done)
        self._wake.set()

    async def run(self) -> None:
        """Send the queued assignments, one request at a time, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._ready:
                if await self.send_once():
                    self._backoff.reset()
                else:
                    await asyncio.sleep(self._backoff.next_delay_ms() / 1000)

    async def send_once(self) -> bool:
        """One AssignReplicasToDirs with the next batch; False to retry after the backoff."""
        batch = self._take_batch()
        if not batch:
            return True
        try:
            response = await self._channel.send(self._request(batch))
            assert isinstance(response, res.AssignReplicasToDirsResponse)
            code = ErrorCode(response.error_code)
        except (NetworkError, PyKraftError) as exc:
            response, code = None, ErrorCode.UNKNOWN_SERVER_ERROR
            log.debug("AssignReplicasToDirs not sent: %s", exc)
        if response is None or code != ErrorCode.NONE:
            log.warning("AssignReplicasToDirs: %d assignments failed (%s); retrying",
                        len(batch), code.name)
            self._requeue(batch)
            return False
        answered = {(topic.topic_id, part.partition_index): ErrorCode(part.error_code)
                    for directory in response.directories for topic in directory.topics
                    for part in topic.partitions}
        failed: dict[Key, Queued] = {}
        for key, (directory_id, on_done) in batch.items():
            error = answered.get(key, ErrorCode.UNKNOWN_SERVER_ERROR)
            if error != ErrorCode.NONE:
                log.error("AssignReplicasToDirs: error assigning %s-%d to %s: %s", key[0],
                          key[1], directory_id, error.name)
                failed[key] = (directory_id, on_done)
            elif on_done is not None:
                on_done()
        self._requeue(failed)
        return not failed

    def _take_batch(self) -> dict[Key, Queued]:
        """Up to the request's cap of the queued assignments, those still valid (Kafka's
        ``Assignment.valid``: the partition exists and has a replica on this broker)."""
        topics = self._image().topics.by_id
        batch: dict[Key, Queued] = {}
        for key in list(self._ready):
            if len(batch) == MAX_ASSIGNMENTS_PER_REQUEST:
                break
            queued = self._ready.pop(key)
            topic = topics.get(key[0])
            partition = None if topic is None else topic.partitions.get(key[1])
            if partition is not None and self._broker_id in partition.replicas:
                batch[key] = queued
        return batch

    def _requeue(self, batch: dict[Key, Queued]) -> None:
        for key, queued in batch.items():
            self._ready.setdefault(key, queued)

    def _request(self, batch: dict[Key, Queued]) -> req.AssignReplicasToDirsRequest:
        by_dir: dict[uuid.UUID, dict[uuid.UUID, list[int]]] = {}
        for (topic_id, partition), (directory_id, _) in batch.items():
            by_dir.setdefault(directory_id, {}).setdefault(topic_id, []).append(partition)
        return req.AssignReplicasToDirsRequest(
            broker_id=self._broker_id, broker_epoch=self._broker_epoch(),
            directories=tuple(req.DirectoryData(id=directory_id, topics=tuple(
                req.TopicData(topic_id=topic_id, partitions=tuple(
                    req.PartitionData(partition_index=p) for p in partitions))
                for topic_id, partitions in topics.items()))
                for directory_id, topics in by_dir.items()))
