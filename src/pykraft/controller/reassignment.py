"""Partition reassignment: AlterPartitionReassignments (API 45) and
ListPartitionReassignments (API 46), as Kafka's ReplicationControlManager.

A reassignment to target replicas T of a partition with replicas R writes one
PartitionChangeRecord: replicas T then the replicas leaving (R - T), ``adding`` T - R and
``removing`` R - T (Kafka's PartitionReassignmentReplicas). The brokers of the new replicas
start following; once the leader's AlterPartition puts every target replica in the ISR, the
same record that changes the ISR completes the reassignment (replicas T, the leaving ones
out of the ISR, a new leader if the old one left: :func:`partition_change`). A reassignment
that only reorders replicas, or whose new replicas are in sync already, completes at once.
Null target replicas cancel: the adding replicas leave the replicas and the ISR (if that
empties the ISR the revert is unclean, allowed only where unclean elections are).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from pykraft.controller import config_control
from pykraft.controller.cluster_control import election
from pykraft.controller.context import (
    MAX_RECORDS_PER_USER_OP,
    TOO_LARGE_MESSAGE,
    ControllerContext,
    ControllerResult,
)
from pykraft.controller.partition_change import Assignment, partition_change
from pykraft.image.image import MetadataImage
from pykraft.image.topics import PartitionRegistration, TopicImage
from pykraft.image.versions import MV_3_7_IV2
from pykraft.messages.kafka.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
)
from pykraft.messages.kafka.alter_partition_reassignments_response import (
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from pykraft.messages.kafka.list_partition_reassignments_request import (
    ListPartitionReassignmentsRequest,
)
from pykraft.messages.kafka.list_partition_reassignments_response import (
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import PartitionChangeRecord


class ReassignmentError(Exception):
    """One partition's refusal (Kafka's ApiException), answered on that partition."""

    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def alter_partition_reassignments(ctx: ControllerContext,
                                  req: AlterPartitionReassignmentsRequest) -> ControllerResult:
    records: list[object] = []
    topics: list[ReassignableTopicResponse] = []
    for topic in req.topics:
        answers: list[ReassignablePartitionResponse] = []
        for target in topic.partitions:
            code, message = ErrorCode.NONE, None
            try:
                change = _alter_one(ctx, topic.name, target, req.allow_replication_factor_change)
                if change is not None:
                    if len(records) == MAX_RECORDS_PER_USER_OP:
                        raise ReassignmentError(ErrorCode.POLICY_VIOLATION, TOO_LARGE_MESSAGE)
                    records.append(change)
            except ReassignmentError as refused:
                code, message = refused.code, refused.message
            answers.append(ReassignablePartitionResponse(
                partition_index=target.partition_index, error_code=code, error_message=message))
        topics.append(ReassignableTopicResponse(name=topic.name, partitions=tuple(answers)))
    return ControllerResult(tuple(records), AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=req.allow_replication_factor_change,
        error_code=ErrorCode.NONE, error_message=None, responses=tuple(topics)))


def _alter_one(ctx: ControllerContext, name: str, target: ReassignablePartition,
               allow_rf_change: bool) -> PartitionChangeRecord | None:
    topic = ctx.image.topics.by_name.get(name)
    if topic is None:
        raise ReassignmentError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                f"Unable to find a topic named {name}.")
    partition = topic.partitions.get(target.partition_index)
    if partition is None:
        raise ReassignmentError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                f"Unable to find partition {name}:{target.partition_index}.")
    if target.replicas is None:
        return _cancel(ctx, topic, target.partition_index, partition)
    return _change(ctx, topic, target.partition_index, partition, target.replicas,
                   allow_rf_change)


def _check_replicas(ctx: ControllerContext, replicas: Sequence[int]) -> None:
    """Kafka's ``validateManualPartitionAssignment`` (no replication factor to match)."""
    if not replicas:
        raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker_id in sorted(replicas):
        if broker_id not in ctx.image.cluster.brokers:
            raise ReassignmentError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker_id}, but no such "
                "broker is registered.")
        if broker_id == previous:
            raise ReassignmentError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {broker_id} more than "
                "once.")
        previous = broker_id


def _change(ctx: ControllerContext, topic: TopicImage, partition_id: int,
            partition: PartitionRegistration, replicas: tuple[int, ...],
            allow_rf_change: bool) -> PartitionChangeRecord | None:
    """Kafka's ``changePartitionReassignment``."""
    _check_replicas(ctx, replicas)
    current = Assignment.of(partition)
    if not allow_rf_change:
        factor = (len(set(partition.replicas) - set(partition.removing_replicas))
                  if current.reassigning else len(partition.replicas))
        if len(replicas) != factor:
            raise ReassignmentError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"The replication factor is changed from {factor} to {len(replicas)}")
    removing = tuple(sorted(set(partition.replicas) - set(replicas)))
    adding = tuple(sorted(set(replicas) - set(partition.replicas)))
    return partition_change(
        topic, partition_id, partition, isr=partition.isr, election=election(ctx),
        assignment=Assignment((*replicas, *removing), removing, adding),
        default_dir=_default_dir(ctx))


def _cancel(ctx: ControllerContext, topic: TopicImage, partition_id: int,
            partition: PartitionRegistration) -> PartitionChangeRecord | None:
    """Kafka's ``cancelPartitionReassignment`` (PartitionReassignmentRevert): back to the
    original replicas, the adding ones out of the ISR."""
    current = Assignment.of(partition)
    if not current.reassigning:
        # Kafka's ApiError.fromThrowable drops a message that is the error's default one
        raise ReassignmentError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)
    original = tuple(r for r in partition.replicas if r not in current.adding)
    isr = tuple(r for r in partition.isr if r not in current.adding)
    unclean_allowed = config_control.unclean_election_enabled(ctx, topic.name)
    if not isr:
        if not original:
            raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                    "Invalid replica assignment: addingReplicas contains all "
                                    "replicas.")
        if not unclean_allowed:
            raise ReassignmentError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Unable to revert partition assignment for {topic.name}:{partition_id} "
                "because it would require an unclean leader election.")
        isr = original[:1]
    # election(ctx) is unclean exactly where the topic allows it, as Kafka's revert
    return partition_change(topic, partition_id, partition, isr=isr, election=election(ctx),
                            assignment=Assignment(original), default_dir=_default_dir(ctx))


def _default_dir(ctx: ControllerContext) -> Callable[[int], uuid.UUID] | None:
    """New replicas' directories, from metadata.version 3.7-IV2 (directory assignment)."""
    return ctx.default_dir if ctx.metadata_version >= MV_3_7_IV2 else None


def list_partition_reassignments(image: MetadataImage, req: ListPartitionReassignmentsRequest
                                 ) -> ListPartitionReassignmentsResponse:
    """The reassignments under way in the committed image: of the partitions named, or of
    every partition (topics by name; Kafka's order is its hash map's)."""
    topics = image.topics.by_name
    asked: list[tuple[TopicImage, Sequence[int]]]
    if req.topics is None:
        asked = [(topics[name], sorted(topics[name].partitions)) for name in sorted(topics)]
    else:
        asked = [(topics[t.name], t.partition_indexes) for t in req.topics if t.name in topics]
    answer: list[OngoingTopicReassignment] = []
    for topic, partition_ids in asked:
        ongoing = tuple(
            OngoingPartitionReassignment(
                partition_index=i, replicas=p.replicas, adding_replicas=p.adding_replicas,
                removing_replicas=p.removing_replicas)
            for i in partition_ids
            if (p := topic.partitions.get(i)) is not None and Assignment.of(p).reassigning)
        if ongoing:
            answer.append(OngoingTopicReassignment(name=topic.name, partitions=ongoing))
    return ListPartitionReassignmentsResponse(error_code=ErrorCode.NONE, error_message=None,
                                              topics=tuple(answer))
