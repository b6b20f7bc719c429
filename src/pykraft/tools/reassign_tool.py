"""``pykraft reassign-partitions``: Kafka 4.4's ``kafka-reassign-partitions.sh``
(ReassignPartitionsCommand) over the admin requests (the pure half is
:mod:`pykraft.tools.reassign_plan`).

Interface (the CLI in :mod:`pykraft.cli.reassign_partitions` is a thin shell over it)::

    async with BrokerClients(admin_settings(bootstrap, client_id=CLIENT_ID)) as clients:
        lines = await list_reassignments(clients)
        lines = await verify(clients, text, preserve_throttles=False)
        lines = await execute(clients, text, throttle=-1, log_dir_throttle=-1,
                              additional=False, allow_replication_factor_change=True,
                              timeout_ms=10_000)
        lines = await cancel(clients, text, preserve_throttles=False, timeout_ms=10_000)
        lines = await generate(clients, topics_text, "1,2,3", rack_aware=True)

Each returns what Kafka's tool prints (``cancel``'s "None of the specified partition moves
are active." has no line end, as Kafka ``print``s it: the next line follows on the same
line); refusals raise :class:`~pykraft.tools.reassign_plan.ReassignError` (printed
``Error: <message>``) or :class:`~pykraft.tools.reassign_plan.TerseError` (the message
alone), with what was printed before in ``output``.

What it asks: ListPartitionReassignments and AlterPartitionReassignments (v1's
``allow_replication_factor_change``) of the bootstrap broker (forwarded to the controller),
Metadata for topics and live brokers (with racks), DescribeLogDirs of each replica's broker
(``--execute``'s rollback JSON names the log dirs the replicas are in, as Kafka 4.4's
does), and IncrementalAlterConfigs: topic throttles to the bootstrap broker, a broker's
rates to that broker (Kafka's admin client sends a BROKER resource to its broker).
``--generate`` proposes with pykraft's striped placement (Kafka 4.4's tool uses its
StripedReplicaPlacer with a random seed: proposals are random on both). Log dirs other
than ``any`` are moves between a broker's log dirs (AlterReplicaLogDirs, started after the
partition reassignment, reported by ``--verify`` and undone by ``--cancel``:
:mod:`pykraft.tools.reassign_moves`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from pykraft.config.broker_configs import (
    FOLLOWER_REPLICATION_THROTTLED_RATE,
    LEADER_REPLICATION_THROTTLED_RATE,
    REPLICA_ALTER_LOG_DIRS_RATE,
)
from pykraft.controller.placement import UsableBroker, place_replicas
from pykraft.ids import TopicPartition
from pykraft.image.configs import ConfigResourceType
from pykraft.java import java_hash_order, java_string_hash
from pykraft.messages.kafka import alter_partition_reassignments_request as alter_req
from pykraft.messages.kafka import incremental_alter_configs_request as configs_req
from pykraft.messages.kafka import list_partition_reassignments_request as list_req
from pykraft.messages.kafka.alter_partition_reassignments_response import (
    AlterPartitionReassignmentsResponse,
)
from pykraft.messages.kafka.incremental_alter_configs_response import (
    IncrementalAlterConfigsResponse,
)
from pykraft.messages.kafka.list_partition_reassignments_response import (
    ListPartitionReassignmentsResponse,
)
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.messages.kafka.metadata_response import MetadataResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import ApiError, raise_for
from pykraft.tools.broker_clients import BrokerClients, java_exception, tp_name
from pykraft.tools.reassign_moves import (
    LogDirs,
    active_moves,
    execute_moves,
    move_lines,
    replica_dirs,
)
from pykraft.tools.reassign_plan import (
    Ongoing,
    PartitionState,
    ReassignError,
    Replica,
    TerseError,
    follower_throttles,
    leader_throttles,
    ongoing_lines,
    parse_broker_list,
    parse_execute,
    parse_reassignment,
    parse_topics,
    plural,
    proposed_moves,
    reassigning_brokers,
    reassignment_json,
    status_lines,
)

CLIENT_ID = "reassign-partitions-tool"
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
BROKER_THROTTLES = (LEADER_REPLICATION_THROTTLED_RATE, FOLLOWER_REPLICATION_THROTTLED_RATE,
                    REPLICA_ALTER_LOG_DIRS_RATE)
CANNOT_EXECUTE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. "
    "The --additional flag can also be used to change the throttle by resubmitting the "
    "current reassignment.")
RUN_VERIFY = ("Warning: You must run --verify periodically, until the reassignment "
              "completes, to ensure the throttle is removed.")
_SET, _DELETE = 0, 1
_UNKNOWN = java_exception(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


# -- what the cluster says -----------------------------------------------------------------

async def _ongoing(clients: BrokerClients, partitions: Iterable[TopicPartition] | None = None
                   ) -> dict[TopicPartition, Ongoing]:
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(partitions):
            by_topic.setdefault(topic, []).append(index)
        topics = tuple(list_req.ListPartitionReassignmentsTopics(name=t, partition_indexes=tuple(i))
                       for t, i in by_topic.items())
    answer = await clients.bootstrap.request(
        list_req.ListPartitionReassignmentsRequest(topics=topics))
    assert isinstance(answer, ListPartitionReassignmentsResponse)
    raise_for(answer.error_code, answer.error_message)
    return {TopicPartition(t.name, p.partition_index):
            Ongoing(p.replicas, p.adding_replicas, p.removing_replicas)
            for t in answer.topics for p in t.partitions}


async def _nodes(clients: BrokerClients) -> dict[int, str | None]:
    """The live brokers with their racks (Kafka's describeCluster)."""
    answer = await clients.bootstrap.request(MetadataRequest(topics=()))
    assert isinstance(answer, MetadataResponse)
    await clients.metadata([])  # their addresses, for requests to each
    return {b.node_id: b.rack for b in answer.brokers}


async def _replicas(clients: BrokerClients, topics: Iterable[str]
                    ) -> dict[str, list[tuple[int, ...]]]:
    """Each topic's partitions' replicas; a missing topic fails as Kafka's describeTopics."""
    names = sorted(set(topics))
    cluster = await clients.metadata(names)
    for name in java_hash_order(names, java_string_hash):
        if name not in cluster.topics:
            raise ReassignError(f"{_UNKNOWN}: Topic {name} not found.")
    return {name: [p.replicas for p in cluster.topics[name].partitions] for name in names}


async def _current(clients: BrokerClients, partitions: Iterable[TopicPartition]
                   ) -> dict[TopicPartition, tuple[int, ...]]:
    wanted = set(partitions)
    replicas = await _replicas(clients, (t for t, _ in wanted))
    found = {tp: replicas[tp[0]][tp[1]] for tp in wanted if tp[1] < len(replicas[tp[0]])}
    missing = wanted - set(found)
    if missing:
        raise ReassignError(f"{_UNKNOWN}: Unable to find partition: "
                            + ", ".join(tp_name(tp) for tp in sorted(missing)))
    return found


async def _log_dirs(clients: BrokerClients, replicas: Mapping[TopicPartition, Sequence[int]],
                    live: Iterable[int]) -> dict[Replica, str]:
    """The log dir each replica on a live broker is in (Kafka's describeReplicaLogDirs)."""
    found = await replica_dirs(clients, replicas, list(live))
    return {replica: dirs.current for replica, dirs in found.items() if dirs.current}


async def _alter_configs(clients: BrokerClients, broker: int | None,
                         resources: Sequence[configs_req.AlterConfigsResource]) -> None:
    if not resources:
        return
    request = configs_req.IncrementalAlterConfigsRequest(resources=tuple(resources))
    answer = await (clients.bootstrap.request(request) if broker is None
                    else clients.request_to(broker, request))
    assert isinstance(answer, IncrementalAlterConfigsResponse)
    for response in answer.responses:
        if response.error_code != ErrorCode.NONE:
            error = ApiError(ErrorCode(response.error_code), response.error_message)
            raise ReassignError(f"{java_exception(response.error_code)}: {error}")


def _resource(kind: ConfigResourceType, name: str, configs: Mapping[str, str | None]
              ) -> configs_req.AlterConfigsResource:
    return configs_req.AlterConfigsResource(
        resource_type=kind, resource_name=name, configs=tuple(
            configs_req.AlterableConfig(name=key, config_operation=_DELETE if value is None
                                        else _SET, value=value)
            for key, value in configs.items()))


async def _set_broker_configs(clients: BrokerClients, brokers: Iterable[int],
                              configs: Mapping[str, str | None]) -> None:
    for broker in brokers:
        await _alter_configs(clients, broker, [_resource(ConfigResourceType.BROKER, str(broker),
                                                         configs)])


async def _reassign(clients: BrokerClients,
                    targets: Mapping[TopicPartition, Sequence[int] | None], *,
                    allow_replication_factor_change: bool = True
                    ) -> dict[TopicPartition, str]:
    """AlterPartitionReassignments (None cancels); the failures' messages."""
    by_topic: dict[str, list[alter_req.ReassignablePartition]] = {}
    for (topic, index), replicas in sorted(targets.items()):
        by_topic.setdefault(topic, []).append(alter_req.ReassignablePartition(
            partition_index=index, replicas=None if replicas is None else tuple(replicas)))
    answer = await clients.bootstrap.request(alter_req.AlterPartitionReassignmentsRequest(
        allow_replication_factor_change=allow_replication_factor_change,
        topics=tuple(alter_req.ReassignableTopic(name=t, partitions=tuple(ps))
                     for t, ps in by_topic.items())))
    assert isinstance(answer, AlterPartitionReassignmentsResponse)
    failed = {}
    for answered in answer.responses:
        for part in answered.partitions:
            code = answer.error_code or part.error_code
            if code != ErrorCode.NONE:
                failed[TopicPartition(answered.name, part.partition_index)] = str(ApiError(
                    ErrorCode(code), answer.error_message or part.error_message))
    return failed


# -- the actions ---------------------------------------------------------------------------

def _text(lines: Iterable[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


async def list_reassignments(clients: BrokerClients) -> str:
    return _text(ongoing_lines(await _ongoing(clients)))


async def verify(clients: BrokerClients, text: str, *, preserve_throttles: bool) -> str:
    """Kafka's ``verifyAssignment``: each partition's state, the log dir moves', then the
    throttles cleared once no reassignment at all is in progress."""
    parts, dirs = parse_reassignment(text)
    ongoing = await _ongoing(clients)
    states = {tp: PartitionState(ongoing[tp].replicas, tuple(target), False)
              for tp, target in parts if tp in ongoing}
    others = [(tp, target) for tp, target in parts if tp not in ongoing]
    cluster = await clients.metadata(sorted({tp[0] for tp, _ in others}))
    for tp, target in others:
        topic = cluster.topics.get(tp[0])
        count = len(topic.partitions) if topic else -1
        if 0 <= count == tp[1]:  # Kafka checks size < partition, then reads it
            raise ReassignError(f"Index {count} out of bounds for length {count}")
        current = topic.partitions[tp[1]].replicas if topic and tp[1] < count else ()
        states[tp] = PartitionState(current, tuple(target), True)
    lines = status_lines(states)
    move_lines, moves_ongoing = await _move_lines(clients, dirs)
    lines.append("\n".join(move_lines))
    if not ongoing and not moves_ongoing and not preserve_throttles:
        lines += await _clear_throttles(clients, parts)
    return _text(lines)


async def _move_lines(clients: BrokerClients, dirs: Mapping[Replica, str]
                      ) -> tuple[list[str], bool]:
    """Kafka's ``verifyReplicaMoves``: each named replica's move, and whether one is
    still going on."""
    if not dirs:
        return [], False
    return move_lines(dirs, await _replica_dirs(clients, dirs))


async def _replica_dirs(clients: BrokerClients, dirs: Mapping[Replica, str]
                        ) -> dict[Replica, LogDirs]:
    replicas: dict[TopicPartition, list[int]] = {}
    for topic, index, broker in dirs:
        replicas.setdefault(TopicPartition(topic, index), []).append(broker)
    return await replica_dirs(clients, replicas, list(await _nodes(clients)))


async def _clear_throttles(clients: BrokerClients,
                           parts: Sequence[tuple[TopicPartition, Sequence[int]]]) -> list[str]:
    """Kafka's ``clearAllThrottles``: every live broker's and target replica's rates, every
    named topic's throttled replicas (HashSet order, as Kafka prints them)."""
    brokers = list(await _nodes(clients))
    brokers += [b for _, replicas in parts for b in replicas if b not in brokers]
    brokers = java_hash_order(brokers, lambda b: b)
    topics = java_hash_order(list(dict.fromkeys(tp[0] for tp, _ in parts)), java_string_hash)
    await _set_broker_configs(clients, brokers, dict.fromkeys(BROKER_THROTTLES))
    await _alter_configs(clients, None, [
        _resource(ConfigResourceType.TOPIC, topic, dict.fromkeys(
            (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS))) for topic in topics])
    return [f"Clearing broker-level throttles on broker{plural(brokers)} "
            + ",".join(map(str, brokers)),
            f"Clearing topic-level throttles on topic{plural(topics)} " + ",".join(topics)]


async def execute(clients: BrokerClients, text: str, *, throttle: int, log_dir_throttle: int,
                  additional: bool, allow_replication_factor_change: bool,
                  timeout_ms: int) -> str:
    """Kafka's ``executeAssignment``."""
    proposed, dirs = parse_execute(text)
    ongoing = await _ongoing(clients)
    if not additional and ongoing:
        raise TerseError(CANNOT_EXECUTE)
    live = await _nodes(clients)
    named = java_hash_order(list(dict.fromkeys(b for rs in proposed.values() for b in rs)),
                            lambda b: b)
    unknown = next((b for b in named if b not in live), None)
    if unknown is not None:
        raise ReassignError(f"Unknown broker id {unknown}")
    current = await _current(clients, proposed)
    rollback = reassignment_json(current, await _log_dirs(clients, current, live))
    lines = ["Current partition replica assignment", "", rollback, "",
             "Save this to use as the --reassignment-json-file option during rollback"]
    if throttle >= 0 or log_dir_throttle >= 0:
        lines.append(RUN_VERIFY)
        if throttle >= 0:
            moves = proposed_moves(ongoing, proposed, current)
            await _alter_configs(clients, None, [
                _resource(ConfigResourceType.TOPIC, topic, {
                    LEADER_THROTTLED_REPLICAS: leader_throttles(moves)[topic],
                    FOLLOWER_THROTTLED_REPLICAS: follower_throttles(moves)[topic]})
                for topic in sorted(moves)])
            await _set_broker_configs(clients, reassigning_brokers(moves), dict.fromkeys(
                (LEADER_REPLICATION_THROTTLED_RATE, FOLLOWER_REPLICATION_THROTTLED_RATE),
                str(throttle)))
            lines.append(f"The inter-broker throttle limit was set to {throttle} B/s")
        if log_dir_throttle >= 0:
            await _set_broker_configs(clients, sorted({b for _, _, b in dirs}),
                                      {REPLICA_ALTER_LOG_DIRS_RATE: str(log_dir_throttle)})
            lines.append(f"The replica-alter-dir throttle limit was set to {log_dir_throttle} "
                         "B/s")
    failed = await _reassign(clients, proposed,
                             allow_replication_factor_change=allow_replication_factor_change)
    if failed:
        raise TerseError("Error reassigning partition(s):\n" + "\n".join(
            f"{tp_name(tp)}: {failed[tp]}" for tp in sorted(failed)), _text(lines))
    lines.append(f"Successfully started partition reassignment{plural(proposed)} for "
                 + ",".join(tp_name(tp) for tp in sorted(proposed)))
    if dirs:
        lines += await execute_moves(clients, dirs, timeout_ms=timeout_ms,
                                     printed=_text(lines))
    return _text(lines)


async def cancel(clients: BrokerClients, text: str, *, preserve_throttles: bool,
                 timeout_ms: int) -> str:
    """Kafka's ``cancelAssignment``: the named partitions still reassigning (not those
    only adding replicas, which completing would finish) go back to where they were."""
    parts, dirs = parse_reassignment(text)
    ongoing = await _ongoing(clients, [tp for tp, _ in parts])
    active = sorted(tp for tp, now in ongoing.items() if not now.adding or now.removing)
    lines = []
    if active:
        failed = await _reassign(clients, dict.fromkeys(active))
        if failed:
            raise TerseError(f"Error cancelling partition reassignment{plural(failed)} for:\n"
                             + "\n".join(f"{tp_name(tp)}: {failed[tp]}"
                                         for tp in sorted(failed)))
        lines.append(f"Successfully cancelled partition reassignment{plural(active)} for: "
                     + ",".join(tp_name(tp) for tp in active))
    else:
        lines.append("None of the specified partition reassignments are active.")
    moving = active_moves(dirs, await _replica_dirs(clients, dirs)) if dirs else {}
    if moving:  # back to where they are
        lines += await execute_moves(clients, moving, timeout_ms=timeout_ms,
                                     printed=_text(lines))
        output = _text(lines)
    else:  # Kafka prints this one without a line end
        output = _text(lines) + "None of the specified partition moves are active."
    if not preserve_throttles:
        output += _text(await _clear_throttles(clients, parts))
    return output


async def generate(clients: BrokerClients, text: str, broker_list: str, *,
                   rack_aware: bool) -> str:
    """Kafka's ``generateAssignment``: each topic's partitions placed anew over the listed
    live brokers, at the replication factor of its first partition; the current assignment
    names its replicas' log dirs (as Kafka 4.4's does), the proposal ``any``."""
    brokers = parse_broker_list(broker_list)
    topics = parse_topics(text)
    twice = sorted({t for t in topics if topics.count(t) > 1})
    if twice:
        raise ReassignError("List of topics to reassign contains duplicate entries: ["
                            + ", ".join(twice) + "]")
    replicas = await _replicas(clients, topics)
    live = await _nodes(clients)
    usable = [UsableBroker(b, live[b] if rack_aware else None) for b in live if b in brokers]
    racked = sum(1 for b in usable if b.rack is not None)
    if rack_aware and racked not in (0, len(usable)):
        raise ReassignError("Not all brokers have rack information. Add --disable-rack-aware in "
                            "command line to make replica assignment without rack information.")
    current = {TopicPartition(t, i): r for t, rs in replicas.items() for i, r in enumerate(rs)}
    proposed: dict[TopicPartition, tuple[int, ...]] = {}
    rng = random.Random()
    for topic, partitions in replicas.items():
        factor = len(partitions[0]) if partitions else 0
        if factor > len(usable):
            raise ReassignError(
                f"The target replication factor of {factor} cannot be reached because only "
                f"{len(usable)} broker(s) are registered.")
        placed = place_replicas(usable, num_partitions=len(partitions),
                                replication_factor=factor, rng=rng) if partitions else []
        proposed.update((TopicPartition(topic, i), r) for i, r in enumerate(placed))
    current_dirs = await _log_dirs(clients, current, live)
    return _text(["Current partition replica assignment", reassignment_json(current, current_dirs),
                  "",
                  "Proposed partition reassignment configuration",
                  reassignment_json(proposed, {})])
