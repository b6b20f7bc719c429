"""``pykraft topics``: Kafka's ``kafka-topics.sh`` (TopicCommand) against the brokers.

Interface (the CLI in :mod:`pykraft.cli.topics` is a thin shell over it)::

    options = TopicOptions(action="describe", topic="orders.*", ...)
    check_options(options)                      # Kafka's argument rules, or UsageError
    async with AdminClient(admin_settings(options.bootstrap_server, config)) as admin:
        await run(admin, options, print)        # each line kafka-topics.sh prints
        # or the pieces: create_topic, list_topics, describe_topics, alter_topic, delete_topics

Errors, as TopicCommand reports them: :class:`UsageError` (Kafka's IllegalArgumentException
and usage errors: the bare message on stderr) and
:class:`~pykraft.tools.admin_client.AdminError` (printed as ``Error while executing topic
command : <message>`` on stdout); both exit 1.

Facts kept from Kafka: ``--topic`` is a regular expression (commas mean ``|``, quotes and
spaces dropped) matched against the whole name, except for ``--create``; topics are listed
sorted; a describe prints a topic line (``Configs:`` lists the entries whose source is not
the default) and a line per partition, with the report options printing only matching
partitions. Partitions come from DescribeTopicPartitions (API 75) in pages of
``--partition-size-limit-per-response`` (2000), as Kafka's admin client reads them, with
their ELR; from Metadata when the broker does not serve it or for ``--topic-id`` (Kafka's
admin describes ids with Metadata), ELR then printing ``N/A`` as Kafka's does. A leader
that is not a live broker prints ``none``. Partition reassignments are not listed
(ListPartitionReassignments is not served).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pykraft.config.topic_keys import TOPIC_KEYS
from pykraft.errors import UsageError
from pykraft.ids import INTERNAL_TOPICS, ZERO_UUID, InvalidUuidError, uuid_from_str, uuid_to_str
from pykraft.java import java_hash_order, java_string_hash
from pykraft.messages.kafka.create_partitions_request import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from pykraft.messages.kafka.create_partitions_response import CreatePartitionsResponse
from pykraft.messages.kafka.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from pykraft.messages.kafka.delete_topics_response import DeleteTopicsResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import (
    AdminClient,
    AdminError,
    ClusterMetadata,
    ConfigEntry,
    PartitionMetadata,
    raise_for,
)

ACTIONS = ("create", "list", "describe", "alter", "delete")
MAX_REPLICATION_FACTOR = 32767
DEFAULT_MIN_ISR = 1
#: TopicCommand's default ``--partition-size-limit-per-response``.
DEFAULT_PARTITION_LIMIT = 2000
_CONFIGS_TOOL = " (To alter topic configurations, the kafka-configs tool can be used.)"
_REPORTS = ("under-replicated-partitions", "under-min-isr-partitions",
            "at-min-isr-partitions", "unavailable-partitions")



# -- the command line -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TopicOptions:
    """kafka-topics.sh's options; ``action`` is the one of :data:`ACTIONS` given, or None
    when none or several were (``actions`` counts them for the check)."""

    action: str | None
    actions: int = 1
    bootstrap_server: str | None = None
    topic: str | None = None
    topic_id: str | None = None
    partitions: int | None = None
    replication_factor: int | None = None
    replica_assignment: str | None = None
    configs: tuple[str, ...] = ()
    if_exists: bool = False
    if_not_exists: bool = False
    exclude_internal: bool = False
    reports: frozenset[str] = field(default_factory=frozenset)  # names in _REPORTS
    topics_with_overrides: bool = False
    partition_size_limit_per_response: int | None = None

    def present(self) -> set[str]:
        """The names of the options given, as Kafka's option parser knows them."""
        given = {self.action} if self.action else set()
        given |= set(self.reports)
        for name, value in (
            ("bootstrap-server", self.bootstrap_server), ("topic", self.topic),
            ("topic-id", self.topic_id), ("partitions", self.partitions),
            ("replication-factor", self.replication_factor),
            ("replica-assignment", self.replica_assignment), ("config", self.configs or None),
            ("if-exists", self.if_exists or None), ("if-not-exists", self.if_not_exists or None),
            ("exclude-internal", self.exclude_internal or None),
            ("topics-with-overrides", self.topics_with_overrides or None),
            ("partition-size-limit-per-response", self.partition_size_limit_per_response),
        ):
            if value is not None:
                given.add(name)
        return given


def _invalid(given: set[str], used: str, invalid: Sequence[str]) -> None:
    if used in given:
        for other in invalid:
            if other in given:
                raise UsageError(f'Option "[{used}]" can\'t be used with option "[{other}]"')


def _actions_but(*kept: str) -> list[str]:
    return [a for a in ("alter", "create", "describe", "list", "delete") if a not in kept]


def check_options(options: TopicOptions) -> None:
    """TopicCommand's checkArgs, in Kafka's order and with its messages."""
    if options.actions != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, "
                         "--create, --alter or --delete")
    given = options.present()
    if options.bootstrap_server is None:
        raise UsageError("--bootstrap-server must be specified")
    if options.action == "describe" and options.if_exists and options.topic is None \
            and options.topic_id is None:
        raise UsageError("--topic or --topic-id is required to describe a topic")
    if options.action not in ("list", "describe") and options.topic is None:
        raise UsageError('Missing required argument "[topic]"')
    if options.action == "alter":
        if options.configs:
            raise UsageError('Option combination "[[bootstrap-server], [config]]" can\'t be '
                             f'used with option "[alter]"{_CONFIGS_TOOL}')
        if options.partitions is None:
            raise UsageError('Missing required argument "[partitions]"')
    _invalid(given, "config", _actions_but("alter", "create"))
    _invalid(given, "partitions", _actions_but("alter", "create"))
    _invalid(given, "replication-factor", _actions_but("create"))
    _invalid(given, "replica-assignment", _actions_but("alter", "create"))
    if options.action == "create":
        _invalid(given, "replica-assignment", ["partitions", "replication-factor"])
    for report in _REPORTS:
        _invalid(given, report, [*_actions_but("describe"), "topics-with-overrides"])
    _invalid(given, "topics-with-overrides", [*_actions_but("describe"), *_REPORTS])
    _invalid(given, "if-exists", _actions_but("alter", "delete", "describe"))
    _invalid(given, "if-not-exists", _actions_but("create"))
    _invalid(given, "exclude-internal", _actions_but("list", "describe"))


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """``--replica-assignment 1:2,2:3``: partition index to broker ids, Kafka's checks."""
    assignment: dict[int, list[int]] = {}
    for index, part in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in part.split(":")]
        except ValueError:
            raise UsageError(f'For input string: "{part}"') from None
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise UsageError("Partition replica lists may not contain duplicate entries: "
                             + ",".join(map(str, duplicates)))
        assignment[index] = brokers
        if len(brokers) != len(assignment[0]):
            raise UsageError(f"Partition {index} has different replication factor: "
                             f"[{', '.join(map(str, brokers))}]")
    return assignment


def parse_configs(texts: Sequence[str]) -> dict[str, str]:
    """``--config k=v`` (repeatable); spaces around ``=`` are dropped, and an unknown name
    fails before any request, as Kafka's ``LogConfig.validate`` does."""
    pairs = [re.split(r"\s*=\s*", text) for text in texts]
    if not all(len(pair) == 2 for pair in pairs):
        raise UsageError('requirement failed: Invalid topic config: all configs to be added '
                         'must be in the format "key=val".')
    configs = {key.strip(): value.strip() for key, value in pairs}
    unknown = next((name for name in configs if name not in TOPIC_KEYS), None)
    if unknown is not None:
        raise AdminError(f"Unknown topic config name: {unknown}")
    return configs


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS


def topic_filter(pattern: str | None, exclude_internal: bool) -> Callable[[str], bool]:
    """Kafka's ``TopicFilter.IncludeList``: the whole name matches the regular expression."""
    if pattern is None:
        return lambda name: not (exclude_internal and is_internal(name))
    regex = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "",
                                          pattern.strip().replace(",", "|").replace(" ", "")))
    try:
        compiled = re.compile(regex)
    except re.error:  # Kafka's RuntimeException: reported like a failed call
        raise AdminError(f"{regex} is an invalid regex.") from None
    return lambda name: (compiled.fullmatch(name) is not None
                         and not (exclude_internal and is_internal(name)))


def _ensure_found(found: Sequence[object], options: TopicOptions) -> None:
    if options.topic and not found and not options.if_exists:
        raise UsageError(f"Topic '{options.topic}' does not exist as expected")


# -- the operations -------------------------------------------------------------------------

def _timeout_ms(admin: AdminClient) -> int:
    return int(admin.settings.request_timeout_s * 1000)


def matching(cluster: ClusterMetadata, pattern: str | None, exclude_internal: bool) -> (
        list[str]):
    """Topic names, sorted, that match ``pattern`` (every topic when None); internal ones
    are those Metadata flags or Kafka names so."""
    allowed = topic_filter(pattern, exclude_internal)
    return sorted(name for name, topic in cluster.topics.items()
                  if allowed(name) and not (exclude_internal and topic.internal))


async def list_topics(admin: AdminClient, pattern: str | None = None, *,
                      exclude_internal: bool = False) -> list[str]:
    return matching(await admin.metadata(None), pattern, exclude_internal)


async def create_topic(admin: AdminClient, name: str, *, partitions: int | None = None,
                       replication_factor: int | None = None,
                       assignment: Mapping[int, Sequence[int]] | None = None,
                       configs: Mapping[str, str] | None = None,
                       if_not_exists: bool = False) -> bool:
    """CreateTopics for one topic; False if it existed and ``if_not_exists`` was given.
    Omitted counts are -1: the cluster's ``num.partitions``/``default.replication.factor``."""
    if replication_factor is not None and not 1 <= replication_factor <= MAX_REPLICATION_FACTOR:
        raise UsageError("The replication factor must be between 1 and "
                         f"{MAX_REPLICATION_FACTOR} inclusive")
    if partitions is not None and partitions < 1:
        raise UsageError("The partitions must be greater than 0")
    manual = bool(assignment)
    topic = CreatableTopic(
        name=name,
        num_partitions=-1 if manual or partitions is None else partitions,
        replication_factor=-1 if manual or replication_factor is None else replication_factor,
        assignments=tuple(CreatableReplicaAssignment(partition_index=index,
                                                     broker_ids=tuple(brokers))
                          for index, brokers in (assignment or {}).items()),
        configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()))
    answer = await admin.request(CreateTopicsRequest(
        topics=(topic,), timeout_ms=_timeout_ms(admin), validate_only=False))
    assert isinstance(answer, CreateTopicsResponse)
    for result in answer.topics:
        if result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and if_not_exists:
            return False
        raise_for(result.error_code, result.error_message)
    return True


async def alter_topic(admin: AdminClient, options: TopicOptions) -> None:
    """CreatePartitions up to ``--partitions`` for every matching topic; with a replica
    assignment, the entries past each topic's current count place the new partitions."""
    cluster = await admin.metadata(None)
    topics = matching(cluster, options.topic, options.exclude_internal)
    _ensure_found(topics, options)
    if not topics or options.partitions is None:
        return
    assignment = (parse_replica_assignment(options.replica_assignment)
                  if options.replica_assignment else None)

    def new_partitions(name: str) -> CreatePartitionsTopic:
        placed = None
        if assignment is not None:
            start = len(cluster.topics[name].partitions)
            placed = tuple(CreatePartitionsAssignment(broker_ids=tuple(v))
                           for k, v in assignment.items() if k >= start)
        return CreatePartitionsTopic(name=name, count=options.partitions or 0,
                                     assignments=placed)

    answer = await admin.request(CreatePartitionsRequest(
        topics=tuple(new_partitions(name) for name in topics), timeout_ms=_timeout_ms(admin),
        validate_only=False))
    assert isinstance(answer, CreatePartitionsResponse)
    for result in answer.results:
        raise_for(result.error_code, result.error_message)


async def delete_topics(admin: AdminClient, pattern: str, *, if_exists: bool = False) -> list[str]:
    """DeleteTopics of every topic matching ``pattern``; the names deleted."""
    topics = await list_topics(admin, pattern)
    if not topics and not if_exists:
        raise UsageError(f"Topic '{pattern}' does not exist as expected")
    if topics:
        answer = await admin.request(DeleteTopicsRequest(
            topics=tuple(DeleteTopicState(name=t, topic_id=ZERO_UUID) for t in topics),
            timeout_ms=_timeout_ms(admin)))
        assert isinstance(answer, DeleteTopicsResponse)
        for result in answer.responses:
            raise_for(result.error_code, result.error_message)
    return topics


# -- describe -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TopicDescription:
    """A topic as ``--describe`` shows it; ``elr``/``last_known_elr`` of its partitions are
    unknown (None) when read from Metadata."""

    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionMetadata, ...]
    configs: tuple[ConfigEntry, ...]

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0

    @property
    def overrides(self) -> list[ConfigEntry]:
        """The entries not at their default, in the order TopicCommand prints them: its admin
        client keeps the answer's entries in a Java ``HashMap`` (``Config``), so in the
        buckets of their names' hashes, whatever order the broker answered in."""
        in_map = java_hash_order(self.configs, lambda entry: java_string_hash(entry.name))
        return [c for c in in_map if not c.is_default]

    @property
    def min_isr(self) -> int:
        value = next((c.value for c in self.configs if c.name == "min.insync.replicas"), None)
        return int(value) if value is not None else DEFAULT_MIN_ISR


@dataclass(frozen=True, slots=True)
class Description:
    topics: tuple[TopicDescription, ...]
    live_brokers: frozenset[int]


def _topic_id(text: str) -> uuid.UUID:
    try:
        return uuid_from_str(text)
    except InvalidUuidError as exc:
        raise UsageError(str(exc)) from None


async def describe_topics(admin: AdminClient, options: TopicOptions) -> Description:
    """The partitions (see the module's docstring) and DescribeConfigs of the topics
    ``--topic`` (or ``--topic-id``) selects; the live brokers are those Metadata lists
    (unfenced ones, as DescribeCluster's)."""
    topic_id = _topic_id(options.topic_id) if options.topic_id else ZERO_UUID
    cluster = await admin.metadata(None)
    if topic_id != ZERO_UUID:
        names = [t.name for t in cluster.topics.values() if t.topic_id == topic_id
                 and not (options.exclude_internal and (t.internal or is_internal(t.name)))]
        if not names and not options.if_exists:
            raise UsageError(f"TopicId '{options.topic_id}' does not exist as expected")
    else:
        names = matching(cluster, options.topic, options.exclude_internal)
        _ensure_found(names, options)
    described = None if topic_id != ZERO_UUID else await admin.topic_partitions(
        names, DEFAULT_PARTITION_LIMIT if options.partition_size_limit_per_response is None
        else options.partition_size_limit_per_response)
    partitions = described or {name: cluster.topics[name].partitions for name in names}
    configs = await admin.topic_configs(names)
    live = frozenset(cluster.brokers)
    return Description(
        topics=tuple(TopicDescription(name, cluster.topics[name].topic_id, tuple(
            p if p.leader in live else replace(p, leader=None) for p in partitions[name]),
            configs.get(name, ())) for name in names),
        live_brokers=live)


def _ids(ids: Sequence[int] | None) -> str:
    """TopicCommand's list of node ids; ``N/A`` for a list the answer did not have."""
    return "N/A" if ids is None else ",".join(map(str, ids))


def partition_matches(topic: TopicDescription, part: PartitionMetadata,
                      reports: frozenset[str], live_brokers: frozenset[int]) -> bool:
    """Does any of the report options select this partition (TopicCommand's tests)?"""
    checks = {
        "under-replicated-partitions": len(part.replicas) - len(part.isr) > 0,
        "unavailable-partitions": part.leader is None or part.leader not in live_brokers,
        "under-min-isr-partitions": part.leader is None or len(part.isr) < topic.min_isr,
        "at-min-isr-partitions": len(part.isr) == topic.min_isr,
    }
    return any(checks[r] for r in reports)


def selected(description: Description, options: TopicOptions) -> list[
        tuple[TopicDescription, bool, list[PartitionMetadata]]]:
    """Per topic: whether its topic line prints, and the partitions whose lines print."""
    show_configs = not options.reports
    rows = []
    for topic in description.topics:
        topic_line = show_configs and (not options.topics_with_overrides or
                                       bool(topic.overrides))
        parts = [] if options.topics_with_overrides else [
            p for p in topic.partitions if show_configs or partition_matches(
                topic, p, options.reports, description.live_brokers)]
        rows.append((topic, topic_line, parts))
    return rows


def topic_line(topic: TopicDescription) -> str:
    """TopicCommand's topic line (no TopicId field for the zero id)."""
    configs = ",".join(f"{c.name}={c.value}" for c in topic.overrides)
    topic_id = "" if topic.topic_id == ZERO_UUID else f"\tTopicId: {uuid_to_str(topic.topic_id)}"
    return (f"Topic: {topic.name}{topic_id}\tPartitionCount: {len(topic.partitions)}"
            f"\tReplicationFactor: {topic.replication_factor}\tConfigs: {configs}")


def partition_line(topic: str, part: PartitionMetadata) -> str:
    """TopicCommand's partition line (ELR ``N/A`` when read from Metadata)."""
    leader = "none" if part.leader is None else str(part.leader)
    return (f"\tTopic: {topic}\tPartition: {part.partition}\tLeader: {leader}"
            f"\tReplicas: {_ids(part.replicas)}\tIsr: {_ids(part.isr)}"
            f"\tElr: {_ids(part.elr)}\tLastKnownElr: {_ids(part.last_known_elr)}")


def describe_lines(description: Description, options: TopicOptions) -> list[str]:
    lines = []
    for topic, with_topic_line, parts in selected(description, options):
        if with_topic_line:
            lines.append(topic_line(topic))
        lines.extend(partition_line(topic.name, p) for p in parts)
    return lines


def _listed(ids: Sequence[int] | None) -> list[int] | None:
    return None if ids is None else list(ids)


def describe_json(description: Description, options: TopicOptions) -> list[dict[str, Any]]:
    """The same selection as the text, for machines (pykraft's ``--json``): a topic whose
    partitions all fail the report options is left out."""
    out = []
    for topic, with_topic_line, parts in selected(description, options):
        if not with_topic_line and not parts:
            continue
        out.append({
            "topic": topic.name,
            "topicId": None if topic.topic_id == ZERO_UUID else uuid_to_str(topic.topic_id),
            "partitionCount": len(topic.partitions),
            "replicationFactor": topic.replication_factor,
            "configs": {c.name: c.value for c in topic.overrides},
            "partitions": [{"partition": p.partition, "leader": p.leader,
                            "replicas": list(p.replicas), "isr": list(p.isr),
                            "elr": _listed(p.elr), "lastKnownElr": _listed(p.last_known_elr)}
                           for p in parts],
        })
    return out


TABLE_HEADERS = ("Topic", "Partition", "Leader", "Replicas", "Isr", "Elr", "LastKnownElr")


def describe_rows(description: Description, options: TopicOptions) -> list[tuple[str, ...]]:
    """One row per selected partition, for ``--table``."""
    return [(topic.name, str(p.partition), "none" if p.leader is None else str(p.leader),
             _ids(p.replicas), _ids(p.isr), _ids(p.elr), _ids(p.last_known_elr))
            for topic, _, parts in selected(description, options) for p in parts]


# -- one command ----------------------------------------------------------------------------

def collision_warning(name: str) -> str | None:
    if "." in name or "_" in name:
        return ("WARNING: Due to limitations in metric names, topics with a period ('.') or "
                "underscore ('_') could collide. To avoid issues it is best to use either, "
                "but not both.")
    return None


async def run(admin: AdminClient, options: TopicOptions, emit: Callable[[str], None]) -> None:
    """Run a checked command, handing each line kafka-topics.sh prints on stdout to
    ``emit`` as soon as Kafka would print it (the collision warning comes before a failure)."""
    if options.action == "create":
        name = options.topic or ""
        configs = parse_configs(options.configs)
        assignment = (parse_replica_assignment(options.replica_assignment)
                      if options.replica_assignment else None)
        warning = collision_warning(name)
        if warning is not None:
            emit(warning)
        if await create_topic(admin, name, partitions=options.partitions,
                              replication_factor=options.replication_factor,
                              assignment=assignment, configs=configs,
                              if_not_exists=options.if_not_exists):
            emit(f"Created topic {name}.")
    elif options.action == "list":
        emit("\n".join(await list_topics(admin, options.topic,
                                          exclude_internal=options.exclude_internal)))
    elif options.action == "describe":
        for line in describe_lines(await describe_topics(admin, options), options):
            emit(line)
    elif options.action == "alter":
        await alter_topic(admin, options)
    else:
        await delete_topics(admin, options.topic or "", if_exists=options.if_exists)
