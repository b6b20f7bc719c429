"""AlterPartition to the active controller (Kafka's ``DefaultAlterPartitionManager``): the
ISR changes partition leaders propose, batched into one request at a time.

Interface::

    manager = AlterPartitionManager(channel, replicas, broker_id=..., broker_epoch=callable)
    replicas.isr_changes = manager.submit     # submit(part, IsrProposal), from the leader
    task = asyncio.create_task(manager.run())  # cancel to stop

A proposal waits in the unsent set until an answer names its partition; one submitted
while its partition's previous proposal is still unsent is answered
OPERATION_NOT_ATTEMPTED at once. Everything unsent goes out together (topic ids and
``new_isr_with_epochs``, the members' broker epochs of v3), and each partition's answer goes
to :meth:`ReplicaManager.complete_isr_change`. A top-level error (STALE_BROKER_EPOCH,
NOT_CONTROLLER), a network failure or a partition to retry sends again after a short
backoff. The controller must speak v3 (Kafka >= 3.5, as pykraft's does): v2 cannot carry
``new_isr_with_epochs``, so writing the request at v2 fails (and is retried) rather than
send no ISR.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable

from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.errors import NetworkError, PyKraftError
from pykraft.ids import TopicPartition
from pykraft.messages.kafka import alter_partition_request as req
from pykraft.messages.kafka import alter_partition_response as res
from pykraft.protocol.errors import ErrorCode
from pykraft.replica.leader import AlterResult, IsrProposal
from pykraft.runtime.controller_channel import ControllerSender

RETRY_BACKOFF_S = 0.05  # Kafka reschedules a failed AlterPartition after 50 ms

log = logging.getLogger(__name__)


class AlterPartitionManager:
    """Sends the replica manager's ISR proposals; see the module docstring."""

    def __init__(self, channel: ControllerSender, replicas: ReplicaManager, *, broker_id: int,
                 broker_epoch: Callable[[], int]) -> None:
        self._channel = channel
        self._replicas = replicas
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._unsent: dict[TopicPartition, tuple[HostedPartition, IsrProposal]] = {}
        self._wake = asyncio.Event()

    def submit(self, hosted: HostedPartition, proposal: IsrProposal) -> None:
        """Queue ``proposal``; refused at once while the partition has one unsent."""
        if hosted.tp in self._unsent:
            self._answer(hosted, proposal, ErrorCode.OPERATION_NOT_ATTEMPTED)
            return
        self._unsent[hosted.tp] = (hosted, proposal)
        self._wake.set()

    @property
    def unsent(self) -> int:
        return len(self._unsent)

    async def run(self) -> None:
        """Send whatever is unsent, one request at a time, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._unsent:
                continue
            if not await self.send_once():
                await asyncio.sleep(RETRY_BACKOFF_S)
            if self._unsent:
                self._wake.set()

    async def send_once(self) -> bool:
        """One AlterPartition with everything unsent; False when it should be retried
        after the backoff (a failure, or partitions resubmitted)."""
        items = list(self._unsent.values())
        try:
            response = await self._channel.send(self._request(items))
        except NetworkError as exc:
            log.debug("AlterPartition not sent: %s", exc)
            return False
        except PyKraftError as exc:  # e.g. a controller without AlterPartition v3
            log.warning("AlterPartition failed: %s", exc)
            return False
        assert isinstance(response, res.AlterPartitionResponse)
        if response.error_code != ErrorCode.NONE:
            log.warning("controller refused AlterPartition: %s",
                        ErrorCode(response.error_code).name)
            return False
        answers = {(topic.topic_id, part.partition_index): part
                   for topic in response.topics for part in topic.partitions}
        settled = True
        for hosted, proposal in items:
            answer = answers.get((hosted.topic_id, hosted.index))
            if answer is None:
                log.warning("%s-%d was sent in AlterPartition but not answered", hosted.topic,
                            hosted.index)
                continue
            del self._unsent[hosted.tp]
            settled &= not self._answer(hosted, proposal, _result(answer))
        return settled

    def _answer(self, hosted: HostedPartition, proposal: IsrProposal,
                result: AlterResult | ErrorCode) -> bool:
        """Hand one answer to the replica manager; resubmit when it asks for a retry."""
        retry = self._replicas.complete_isr_change(hosted, proposal, result,
                                                   self._replicas.clock_ms())
        if retry:
            self.submit(hosted, proposal)
        return retry

    def _request(self, items: list[tuple[HostedPartition, IsrProposal]]
                 ) -> req.AlterPartitionRequest:
        by_topic: dict[uuid.UUID, list[req.PartitionData]] = {}
        for hosted, proposal in items:
            by_topic.setdefault(hosted.topic_id, []).append(req.PartitionData(
                partition_index=hosted.index, leader_epoch=proposal.leader_epoch,
                new_isr_with_epochs=tuple(req.BrokerState(broker, epoch)
                                          for broker, epoch in proposal.isr_with_epochs),
                leader_recovery_state=proposal.leader_recovery_state,
                partition_epoch=proposal.partition_epoch))
        return req.AlterPartitionRequest(
            broker_id=self._broker_id, broker_epoch=self._broker_epoch(),
            topics=tuple(req.TopicData(topic_id=topic_id, partitions=tuple(parts))
                         for topic_id, parts in by_topic.items()))


def _result(answer: res.PartitionData) -> AlterResult | ErrorCode:
    """A partition's answer: the committed state, or its error."""
    if answer.error_code != ErrorCode.NONE:
        return ErrorCode(answer.error_code)
    return AlterResult(answer.leader_epoch, answer.partition_epoch, answer.isr,
                       answer.leader_recovery_state)
