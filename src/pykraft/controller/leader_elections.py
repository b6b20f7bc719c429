"""ElectLeaders (API 43) and the automatic preferred-leader rebalance (Kafka's
ReplicationControlManager ``electLeaders`` and ``maybeBalancePartitionLeaders``).

A PREFERRED election moves leadership back to each partition's first replica when that
replica is in the ISR and usable; an UNCLEAN one gives a leaderless partition a leader,
from outside the ISR if it must, whatever the topic's ``unclean.leader.election.enable``.
A partition already led as asked answers ELECTION_NOT_NEEDED; one that cannot be elected
PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE. A request naming no
partitions (null) elects every partition of every topic and leaves out of its answer the
partitions that needed no election.

The rebalance runs every ``leader.imbalance.check.interval.seconds`` while some partition is
led by another replica than its preferred one and ``auto.leader.rebalance.enable`` is on:
at most :data:`MAX_ELECTIONS_PER_IMBALANCE` preferred elections per run, the next run at
once (10 ms) while more may remain. Kafka 4 reads no ``leader.imbalance.per.broker.
percentage``: any imbalanced partition counts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from pykraft.controller.cluster_control import election
from pykraft.controller.context import (
    MAX_RECORDS_PER_USER_OP,
    TOO_LARGE_MESSAGE,
    ControllerContext,
    ControllerResult,
)
from pykraft.controller.partition_change import partition_change, preferred_change
from pykraft.controller.responses import error_response
from pykraft.image.image import MetadataImage
from pykraft.image.topics import NO_LEADER, PartitionRegistration, TopicImage
from pykraft.messages.kafka.elect_leaders_request import ElectLeadersRequest
from pykraft.messages.kafka.elect_leaders_response import (
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import PartitionChangeRecord

PREFERRED = 0
UNCLEAN = 1
#: Kafka's ``maxElectionsPerImbalance``: preferred elections per rebalance run.
MAX_ELECTIONS_PER_IMBALANCE = 1000
#: Kafka reschedules a rebalance that hit its limit this soon, not at once, so that other
#: deferred events are not starved.
RERUN_DELAY_MS = 10


#: Kafka's ``ApiError(Errors)`` answers with the error's own message (``Errors.message()``).
DEFAULT_MESSAGES = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE:
        "Eligible topic partition leaders are not available.",
}


#: One partition's election: its error, message and record (a tuple: a request may name
#: hundreds of thousands of partitions, and each costs on the controller's loop).
Outcome = tuple[ErrorCode, str | None, PartitionChangeRecord | None]


def _refused(code: ErrorCode) -> Outcome:
    return code, DEFAULT_MESSAGES[code], None


def _elect(ctx: ControllerContext, topic: TopicImage, partition_id: int,
           election_type: int) -> Outcome:
    """One partition's election (Kafka's ``electLeader``), the topic found."""
    partition = topic.partitions.get(partition_id)
    if partition is None:
        return (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"No such partition as {topic.name}-{partition_id}", None)
    if election_type == PREFERRED:
        if has_preferred_leader(partition):
            return _refused(ErrorCode.ELECTION_NOT_NEEDED)
        record = preferred_change(topic, partition_id, partition, election(ctx))
        refusal = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    else:
        if partition.leader != NO_LEADER:
            return _refused(ErrorCode.ELECTION_NOT_NEEDED)
        record = partition_change(topic, partition_id, partition, isr=partition.isr,
                                  election=replace(election(ctx), unclean=_any_topic))
        refusal = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    if record is None:
        return _refused(refusal)
    return ErrorCode.NONE, None, record


def _any_topic(_topic: str) -> bool:
    """An UNCLEAN ElectLeaders ignores the topic's ``unclean.leader.election.enable``."""
    return True


def has_preferred_leader(partition: PartitionRegistration) -> bool:
    return bool(partition.replicas) and partition.leader == partition.replicas[0]


def _asked(ctx: ControllerContext, req: ElectLeadersRequest
           ) -> Iterator[tuple[str, TopicImage | None, Sequence[int]]]:
    """The topics and partitions a request names, or every one when it names none."""
    topics = ctx.image.topics.by_name
    if req.topic_partitions is None:
        for name in sorted(topics):
            yield name, topics[name], sorted(topics[name].partitions)
        return
    for asked in req.topic_partitions:
        yield asked.topic, topics.get(asked.topic), asked.partitions


def elect_leaders(ctx: ControllerContext, req: ElectLeadersRequest) -> ControllerResult:
    if req.election_type not in (PREFERRED, UNCLEAN):
        return ControllerResult((), error_response(
            req, ErrorCode.INVALID_REQUEST, f"Unknown election type {req.election_type}"))
    everything = req.topic_partitions is None
    seen: dict[tuple[str, int], tuple[PartitionResult | None, PartitionChangeRecord | None]] = {}
    records: list[object] = []
    results: list[ReplicaElectionResult] = []
    for name, topic, partition_ids in _asked(ctx, req):
        if topic is None:
            unknown = f"No such topic as {name}"
            results.append(ReplicaElectionResult(topic=name, partition_result=tuple(
                PartitionResult(partition_id=p, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                error_message=unknown) for p in partition_ids)))
            continue
        answers: list[PartitionResult] = []
        for partition_id in partition_ids:
            key = (name, partition_id)  # named again: the same state, the same outcome
            known = seen.get(key)
            if known is None:
                code, message, record = _elect(ctx, topic, partition_id, req.election_type)
                known = seen[key] = (None if everything and code == ErrorCode.ELECTION_NOT_NEEDED
                                     else PartitionResult(partition_id=partition_id,
                                                          error_code=code, error_message=message),
                                     record)
            answer, record = known
            if record is not None:
                records.append(record)
                if len(records) > MAX_RECORDS_PER_USER_OP:
                    return ControllerResult((), error_response(
                        req, ErrorCode.POLICY_VIOLATION, TOO_LARGE_MESSAGE))
            if answer is not None:  # every partition: those needing no election left out
                answers.append(answer)
        results.append(ReplicaElectionResult(topic=name, partition_result=tuple(answers)))
    return ControllerResult(tuple(records), ElectLeadersResponse(
        error_code=ErrorCode.NONE, replica_election_results=tuple(results)))


def imbalanced(image: MetadataImage) -> bool:
    """Some partition is led by another replica than its preferred one (Kafka's
    ``arePartitionLeadersImbalanced``)."""
    return any(not has_preferred_leader(partition)
               for topic in image.topics.by_id.values()
               for partition in topic.partitions.values())


def balance_leaders(ctx: ControllerContext,
                    limit: int = MAX_ELECTIONS_PER_IMBALANCE) -> tuple[list[object], bool]:
    """Preferred elections for imbalanced partitions, at most ``limit``; and whether the
    limit was reached (more may remain: run again soon)."""
    records: list[object] = []
    for name in sorted(ctx.image.topics.by_name):
        topic = ctx.image.topics.by_name[name]
        for partition_id in sorted(topic.partitions):
            partition = topic.partitions[partition_id]
            if has_preferred_leader(partition):
                continue
            change = preferred_change(topic, partition_id, partition, election(ctx))
            if change is not None:
                records.append(change)
                if len(records) >= limit:
                    return records, True
    return records, False
