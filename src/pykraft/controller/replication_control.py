"""Topics and partitions: CreateTopics, DeleteTopics, CreatePartitions, AlterPartition
(Kafka's ReplicationControlManager; elections and eligible leader replicas in
:mod:`pykraft.controller.partition_change`).

New partitions are placed on usable brokers by :mod:`pykraft.controller.placement`, start
with the whole replica set as ISR, the first replica as leader, and epochs 0. As in Kafka
4.4, a CreateTopics or CreatePartitions request asking for more than
``MAX_PARTITIONS_PER_REQUEST`` partitions in all is refused whole before any topic is looked
at (POLICY_VIOLATION "Excessively large number of [additional] partitions per request."), so
a huge count is never placed; and a request may not produce more than
``MAX_RECORDS_PER_USER_OP`` records (validate_only included): Kafka's bounded record list
throws, and every topic of such a request gets POLICY_VIOLATION "Unable to perform
excessively large batch operation.". The work per request stays linear in its size: names,
duplicates and collisions are looked up in maps built once.

Each topic created, grown or deleted is charged to the request's controller mutation quota
(``ctx.mutation_quota``, KIP-599) with its partitions, where Kafka 4.4 charges it: a new topic
once placed (validate_only too), new partitions before they are placed, a deleted topic's
partitions; a strict quota refuses the topic with THROTTLING_QUOTA_EXCEEDED.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from pykraft.config.broker_configs import BrokerConfigLayers
from pykraft.config.topic_keys import INTERNAL_TOPIC_CONFIGS
from pykraft.controller import config_control, mutations
from pykraft.controller.cluster_control import election, usable_brokers
from pykraft.controller.context import (
    MAX_RECORDS_PER_USER_OP,
    TOO_LARGE_MESSAGE,
    ControllerContext,
    ControllerResult,
)
from pykraft.controller.partition_change import partition_change
from pykraft.controller.placement import UsableBroker, place_replicas
from pykraft.controller.responses import delete_topic_states, error_response
from pykraft.controller.topic_names import topic_name_problem
from pykraft.ids import ZERO_UUID, random_uuid
from pykraft.image.configs import ConfigResourceType
from pykraft.image.topics import NO_LEADER, NO_LEADER_CHANGE, TopicImage
from pykraft.image.versions import MV_3_7_IV2
from pykraft.java import java_hash_order, java_string_hash
from pykraft.messages.kafka import alter_partition_request as ap_req
from pykraft.messages.kafka import alter_partition_response as ap_resp
from pykraft.messages.kafka import create_topics_response as ct_resp
from pykraft.messages.kafka.create_partitions_request import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from pykraft.messages.kafka.create_partitions_response import (
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest
from pykraft.messages.kafka.delete_topics_response import (
    DeletableTopicResult,
    DeleteTopicsResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from pykraft.replica.isr_change import isr_change_error
from pykraft.replica.leader import IsrProposal, PartitionAssignment


@dataclass(frozen=True, slots=True)
class Failure:
    code: ErrorCode
    message: str | None


#: Kafka's answer to an operation whose records would not fit MAX_RECORDS_PER_USER_OP.
TOO_LARGE = Failure(ErrorCode.POLICY_VIOLATION, TOO_LARGE_MESSAGE)
#: A topic the controller mutation quota refuses (:mod:`pykraft.controller.mutations`).
THROTTLED = Failure(mutations.THROTTLED, None)
#: Kafka's ReplicationControlManager refuses a CreateTopics or CreatePartitions request
#: asking for more partitions than this in all, before looking at any topic of it.
MAX_PARTITIONS_PER_REQUEST = 10_000


def _new_topic_id(ctx: ControllerContext) -> uuid.UUID:
    while True:
        topic_id = random_uuid(lambda: uuid.UUID(int=ctx.rng.getrandbits(128)))
        if topic_id not in ctx.image.topics.by_id:
            return topic_id


def _partition_record(ctx: ControllerContext, topic_id: uuid.UUID, partition_id: int,
                      replicas: tuple[int, ...]) -> PartitionRecord:
    isr = tuple(r for r in replicas if ctx.usable(r))
    directories = (tuple(ctx.default_dir(r) for r in replicas)
                   if ctx.metadata_version >= MV_3_7_IV2 else ())
    return PartitionRecord(
        partition_id=partition_id, topic_id=topic_id, replicas=replicas, isr=isr,
        leader=next(iter(isr), NO_LEADER), leader_epoch=0, partition_epoch=0,
        directories=directories,
    )


def _check_manual(ctx: ControllerContext, assignments: Sequence[Sequence[int]],
                  replication_factor: int | None) -> Failure | None:
    """Manual replica lists: non-empty, distinct, registered, one usable broker, same size."""
    for replicas in assignments:
        if not replicas or len(set(replicas)) != len(replicas):
            return Failure(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "A manual partition assignment must list distinct brokers")
        unknown = [b for b in replicas if b not in ctx.image.cluster.brokers]
        if unknown:
            return Failure(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes broker {unknown[0]}, "
                           "but no such broker is registered.")
        if not any(ctx.usable(b) for b in replicas):
            return Failure(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"All brokers specified in the partition assignment {list(replicas)} "
                           "are fenced or shutting down.")
        expected = replication_factor if replication_factor is not None else len(assignments[0])
        if len(replicas) != expected:
            return Failure(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes a partition with "
                           f"{len(replicas)} replica(s), but this is not consistent with "
                           f"previous partitions, which have {expected} replica(s).")
    return None


def _auto_assign(ctx: ControllerContext, count: int,
                 replication_factor: int) -> list[tuple[int, ...]] | Failure:
    brokers = [UsableBroker(b.broker_id, b.rack) for b in usable_brokers(ctx)]
    if replication_factor > len(brokers):
        return Failure(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            f"replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered or some brokers have all their log "
            "directories cordoned.")
    return place_replicas(brokers, num_partitions=count, replication_factor=replication_factor,
                          rng=ctx.rng)


class TakenNames:
    """The topic names in use and, by their collision form ('.' as '_'), which name holds
    it: one map lookup per new name instead of a scan of every topic."""

    def __init__(self, names: Iterable[str]) -> None:
        self._by_form: dict[str, str] = {}
        self._names: set[str] = set()
        for name in names:
            self.add(name)

    def add(self, name: str) -> None:
        self._names.add(name)
        self._by_form.setdefault(name.replace(".", "_"), name)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def clash(self, name: str) -> str | None:
        """A taken name that differs from ``name`` only by '.' against '_'."""
        return self._by_form.get(name.replace(".", "_"))


def _plan_topic(ctx: ControllerContext, topic: CreatableTopic,
                taken: TakenNames) -> list[tuple[int, ...]] | Failure:
    problem = topic_name_problem(topic.name)
    if problem is not None:
        return Failure(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    if topic.name in taken:
        return Failure(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
    clash = taken.clash(topic.name)
    if clash is not None:
        return Failure(ErrorCode.INVALID_TOPIC_EXCEPTION,
                       f"Topic '{topic.name}' collides with existing topic: {clash}")
    keys = [c.name for c in topic.configs]
    if len(set(keys)) != len(keys):
        return Failure(ErrorCode.INVALID_REQUEST, "Duplicate configuration keys")
    failure = config_control.validate(ConfigResourceType.TOPIC,
                                      {c.name: c.value for c in topic.configs})
    if failure is not None:
        return Failure(failure.code, failure.message)
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            return Failure(ErrorCode.INVALID_REQUEST,
                           "Both numPartitions or replicationFactor and replicasAssignments "
                           "were set. Both cannot be used at the same time.")
        indexes = sorted(a.partition_index for a in topic.assignments)
        if indexes != list(range(len(indexes))):
            return Failure(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "Partitions must be numbered 0 to N-1 in the manual assignment.")
        ordered = sorted(topic.assignments, key=lambda a: a.partition_index)
        assignments = [a.broker_ids for a in ordered]
        failure_m = _check_manual(ctx, assignments, None)
        return assignments if failure_m is None else failure_m
    count = ctx.config.default_num_partitions if topic.num_partitions == -1 \
        else topic.num_partitions
    factor = ctx.config.default_replication_factor if topic.replication_factor == -1 \
        else topic.replication_factor
    if count < 1:
        return Failure(ErrorCode.INVALID_PARTITIONS,
                       "Number of partitions was set to an invalid non-positive value.")
    if factor < 1:
        return Failure(ErrorCode.INVALID_REPLICATION_FACTOR,
                       "Replication factor must be larger than 0, or -1 to use the default "
                       "value.")
    return _auto_assign(ctx, count, factor)


def _topic_configs(ctx: ControllerContext) -> tuple[ct_resp.CreatableTopicConfigs, ...]:
    """Every topic config of a topic that sets none, as a CreateTopics answer lists them:
    this controller's broker default (its dynamic configs, its properties), else Kafka's."""
    layers = BrokerConfigLayers.of(ctx.image.configs.broker, ctx.config.node_id,
                                   ctx.config.properties)
    return tuple(
        ct_resp.CreatableTopicConfigs(
            name=entry.name, value=entry.value, read_only=False,
            config_source=entry.source, is_sensitive=False)
        for entry in config_control.topic_entries({}, layers)
    )


def _given_configs(defaults: tuple[ct_resp.CreatableTopicConfigs, ...], given: dict[str, str]
                   ) -> tuple[ct_resp.CreatableTopicConfigs, ...]:
    """``defaults`` with the topic's own values in their place (TOPIC_CONFIG), and the
    internal keys it sets (listed only then, as Kafka's answer lists them)."""
    topic = config_control.ConfigSource.TOPIC_CONFIG
    internal = [ct_resp.CreatableTopicConfigs(name=name, value=value, read_only=False,
                                              config_source=topic, is_sensitive=False)
                for name, value in given.items() if name in INTERNAL_TOPIC_CONFIGS]
    return tuple(sorted([replace(entry, value=given[entry.name], config_source=topic)
                         if entry.name in given else entry for entry in defaults] + internal,
                        key=lambda entry: entry.name))


def _create_topics_failed(req: CreateTopicsRequest, failure: Failure) -> ControllerResult:
    """Every topic of the request refused with one error, nothing written."""
    return ControllerResult((), error_response(req, failure.code, failure.message))


def _partitions_asked(topic: CreatableTopic, default: int) -> int:
    """The partitions a topic asks for, as Kafka's ``validateTotalNumberOfPartitions``
    counts them (an invalid count counts none)."""
    if topic.assignments:
        return len(topic.assignments)
    if topic.num_partitions == -1:
        return default
    return max(0, topic.num_partitions)


def create_topics(ctx: ControllerContext, req: CreateTopicsRequest) -> ControllerResult:
    if sum(_partitions_asked(t, ctx.config.default_num_partitions)
           for t in req.topics) > MAX_PARTITIONS_PER_REQUEST:
        return _create_topics_failed(req, Failure(
            ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request."))
    named = Counter(t.name for t in req.topics)
    taken = TakenNames(ctx.image.topics.by_name)
    defaults = _topic_configs(ctx)  # shared by the topics that set no config
    budget = MAX_RECORDS_PER_USER_OP
    records: list[object] = []
    results: list[ct_resp.CreatableTopicResult] = []
    for topic in req.topics:
        plan: list[tuple[int, ...]] | Failure
        if named[topic.name] > 1:
            plan = Failure(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        else:
            plan = _plan_topic(ctx, topic, taken)
        if not isinstance(plan, Failure) and not ctx.mutation_quota.record(len(plan)):
            plan = THROTTLED  # charged once placed, as Kafka's createTopic
        configs = [c for c in topic.configs if c.value is not None]
        if not isinstance(plan, Failure) and 1 + len(plan) + len(configs) > budget:
            return _create_topics_failed(req, TOO_LARGE)
        if isinstance(plan, Failure):
            results.append(ct_resp.CreatableTopicResult(
                name=topic.name, error_code=plan.code, error_message=plan.message))
            continue
        topic_id = _new_topic_id(ctx)
        taken.add(topic.name)
        budget -= 1 + len(plan) + len(configs)
        # Kafka's order: the topic, its configs (in its HashMap's order), its partitions
        records.append(TopicRecord(name=topic.name, topic_id=topic_id))
        records += [ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name=topic.name,
                                 name=c.name, value=c.value)
                    for c in java_hash_order(configs, lambda c: java_string_hash(c.name))]
        records += [_partition_record(ctx, topic_id, i, r) for i, r in enumerate(plan)]
        results.append(ct_resp.CreatableTopicResult(  # validate_only too, as Kafka
            name=topic.name, topic_id=topic_id,
            error_code=ErrorCode.NONE, error_message=None,
            num_partitions=len(plan), replication_factor=len(plan[0]),
            configs=_given_configs(defaults, {c.name: c.value for c in configs
                                              if c.value is not None})
            if configs else defaults))
    return ControllerResult(() if req.validate_only else tuple(records),
                            ct_resp.CreateTopicsResponse(topics=tuple(results)))


def delete_topics(ctx: ControllerContext, req: DeleteTopicsRequest) -> ControllerResult:
    records: list[object] = []
    results: list[DeletableTopicResult] = []
    deleted: set[uuid.UUID] = set()
    for state in delete_topic_states(req):
        topic: TopicImage | None = None
        failure: Failure | None = None
        if state.name is not None and state.topic_id != ZERO_UUID:
            failure = Failure(ErrorCode.INVALID_REQUEST,
                              "A topic must be named by its name or its id, not both")
        elif state.topic_id != ZERO_UUID:
            topic = ctx.image.topics.by_id.get(state.topic_id)
            if topic is None:
                failure = Failure(ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this "
                                  "topic ID.")
        else:
            topic = ctx.image.topics.by_name.get(state.name or "")
            if topic is None:
                failure = Failure(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  "This server does not host this topic-partition.")
        if topic is not None and topic.topic_id in deleted:
            failure = Failure(ErrorCode.INVALID_REQUEST, "Topic named twice in the request")
        if failure is not None or topic is None:
            results.append(DeletableTopicResult(
                name=state.name, topic_id=state.topic_id,
                error_code=failure.code if failure else ErrorCode.UNKNOWN_SERVER_ERROR,
                error_message=failure.message if failure else None))
            continue
        if not ctx.mutation_quota.record(len(topic.partitions)):  # named by its name and id
            results.append(DeletableTopicResult(name=topic.name, topic_id=topic.topic_id,
                                                error_code=THROTTLED.code,
                                                error_message=THROTTLED.message))
            continue
        deleted.add(topic.topic_id)
        records.append(RemoveTopicRecord(topic_id=topic.topic_id))
        if len(records) > MAX_RECORDS_PER_USER_OP:
            return ControllerResult((), error_response(req, TOO_LARGE.code, TOO_LARGE.message))
        results.append(DeletableTopicResult(name=topic.name, topic_id=topic.topic_id,
                                            error_code=ErrorCode.NONE, error_message=None))
    return ControllerResult(tuple(records), DeleteTopicsResponse(responses=tuple(results)))


def _partitions_added(ctx: ControllerContext, entries: Iterable[CreatePartitionsTopic]) -> int:
    """The partitions a request adds to existing topics, as Kafka's
    ``validateTotalNumberOfPartitions`` counts them (unknown topics and decreases add none)."""
    added = 0
    for entry in entries:
        topic = ctx.image.topics.by_name.get(entry.name)
        if topic is not None:
            added += max(0, entry.count - len(topic.partitions))
    return added


def create_partitions(ctx: ControllerContext, req: CreatePartitionsRequest) -> ControllerResult:
    named = Counter(t.name for t in req.topics)
    if _partitions_added(ctx, (t for t in req.topics if named[t.name] == 1)) \
            > MAX_PARTITIONS_PER_REQUEST:  # within MAX_RECORDS_PER_USER_OP too, then
        return ControllerResult((), error_response(
            req, ErrorCode.POLICY_VIOLATION,
            "Excessively large number of additional partitions per request."))
    records: list[object] = []
    results: list[CreatePartitionsTopicResult] = []
    for entry in req.topics:
        topic = ctx.image.topics.by_name.get(entry.name)
        if topic is None or named[entry.name] > 1:
            duplicate = named[entry.name] > 1  # Kafka's unknown topic exception: no message
            results.append(CreatePartitionsTopicResult(
                name=entry.name, error_code=ErrorCode.INVALID_REQUEST if duplicate
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                error_message="Duplicate topic name." if duplicate else None))
            continue
        plan = _plan_partitions(ctx, topic, entry.count, entry.assignments)
        if isinstance(plan, Failure):
            results.append(CreatePartitionsTopicResult(
                name=entry.name, error_code=plan.code, error_message=plan.message))
            continue
        first = len(topic.partitions)
        records += [_partition_record(ctx, topic.topic_id, first + i, r)
                    for i, r in enumerate(plan)]
        results.append(CreatePartitionsTopicResult(name=entry.name, error_code=ErrorCode.NONE,
                                                   error_message=None))
    return ControllerResult(() if req.validate_only else tuple(records),
                            CreatePartitionsResponse(results=tuple(results)))


def _plan_partitions(ctx: ControllerContext, topic: TopicImage, count: int,
                     assignments: Sequence[CreatePartitionsAssignment] | None
                     ) -> list[tuple[int, ...]] | Failure:
    current = len(topic.partitions)
    if count == current:
        return Failure(ErrorCode.INVALID_PARTITIONS,
                       f"Topic already has {current} partition(s).")
    if count < current:
        return Failure(ErrorCode.INVALID_PARTITIONS,
                       f"The topic {topic.name} currently has {current} partition(s); "
                       f"{count} would not be an increase.")
    added = count - current
    factor = len(topic.partitions[0].replicas) if current else 1
    lists = None if assignments is None else [a.broker_ids for a in assignments]
    if lists is not None and len(lists) != added:
        return Failure(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                       f"Attempted to add {added} additional partition(s), but only "
                       f"{len(lists)} assignment(s) were specified.")
    if not ctx.mutation_quota.record(added):  # before placing them, as Kafka
        return THROTTLED
    if lists is None:
        return _auto_assign(ctx, added, factor)
    failure = _check_manual(ctx, lists, factor)
    return lists if failure is None else failure


def _partition_error(index: int, code: ErrorCode) -> ap_resp.PartitionData:
    return ap_resp.PartitionData(partition_index=index, error_code=code, leader_id=-1,
                                 leader_epoch=-1, partition_epoch=-1)


def alter_partition(ctx: ControllerContext, req: ap_req.AlterPartitionRequest) -> ControllerResult:
    """ISR changes proposed by a partition leader, checked against its epochs (Kafka's
    QuorumController answers a request naming no topic at once, before the broker epoch)."""
    broker = ctx.image.cluster.brokers.get(req.broker_id)
    if req.topics and (broker is None or broker.epoch != req.broker_epoch):
        return ControllerResult((), ap_resp.AlterPartitionResponse(
            error_code=ErrorCode.STALE_BROKER_EPOCH))
    records: list[object] = []
    topics: list[ap_resp.TopicData] = []
    for data in req.topics:
        topic = ctx.image.topics.by_id.get(data.topic_id)
        answers: list[ap_resp.PartitionData] = []
        for part in data.partitions:
            if topic is None:
                answers.append(_partition_error(part.partition_index, ErrorCode.UNKNOWN_TOPIC_ID))
                continue
            outcome = _alter_one(ctx, req.broker_id, topic, part)
            if isinstance(outcome, ErrorCode):
                answers.append(_partition_error(part.partition_index, outcome))
                continue
            change, answer = outcome
            if change is not None:
                records.append(change)
            answers.append(answer)
        topics.append(ap_resp.TopicData(topic_id=data.topic_id, partitions=tuple(answers)))
    return ControllerResult(tuple(records), ap_resp.AlterPartitionResponse(
        error_code=ErrorCode.NONE, topics=tuple(topics)))


def _alter_one(
    ctx: ControllerContext, leader_id: int, topic: TopicImage, part: ap_req.PartitionData,
) -> ErrorCode | tuple[PartitionChangeRecord | None, ap_resp.PartitionData]:
    partition = topic.partitions.get(part.partition_index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # v3 names each member's broker epoch; v0-2 name members only (Kafka's controller reads
    # their epochs as -1); a request carries only the field of its version
    members = (tuple((s.broker_id, s.broker_epoch) for s in part.new_isr_with_epochs)
               or tuple((broker_id, -1) for broker_id in part.new_isr))
    proposal = IsrProposal(part.leader_epoch, part.partition_epoch, members,
                           part.leader_recovery_state)
    brokers = ctx.image.cluster.brokers

    def eligible(broker_id: int, broker_epoch: int) -> bool:
        member = brokers.get(broker_id)
        return (ctx.usable(broker_id) and member is not None
                and broker_epoch in (-1, member.epoch))
    code = isr_change_error(
        PartitionAssignment(partition.leader_epoch, partition.partition_epoch,
                            partition.replicas, partition.isr,
                            partition.leader_recovery_state),
        leader_id=partition.leader, sender=leader_id, proposal=proposal, eligible=eligible)
    if code != ErrorCode.NONE:
        return code
    change = partition_change(
        topic, part.partition_index, partition, isr=proposal.isr, election=election(ctx),
        recovery=proposal.leader_recovery_state,
        default_dir=ctx.default_dir if ctx.metadata_version >= MV_3_7_IV2 else None)
    if change is not None and change.leader not in (NO_LEADER_CHANGE, leader_id):
        # the ISR change completed a reassignment that moved the leadership away: the old
        # leader must learn the new state from the metadata (Kafka answers v2+ this way)
        return change, _partition_error(part.partition_index, ErrorCode.NEW_LEADER_ELECTED)
    after = partition if change is None else partition.merge(change)
    return change, ap_resp.PartitionData(
        partition_index=part.partition_index, error_code=ErrorCode.NONE, leader_id=after.leader,
        leader_epoch=after.leader_epoch, isr=after.isr,
        leader_recovery_state=after.leader_recovery_state,
        partition_epoch=after.partition_epoch)
