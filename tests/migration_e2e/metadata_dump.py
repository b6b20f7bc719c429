"""A metadata log as ``kafka-dump-log.sh --cluster-metadata-decoder`` shows it (Kafka 3.9's
``kafka.tools.DumpLogSegments``), turned into records two runs, or two controllers, can be
compared on (migration-plan §6, §12).

:func:`parse_dump` reads the tool's output (each data record's line ``| offset: N ...
payload: {json}``; control records print no ``payload``); :func:`parse_records` reads the
condensed ``captured/*.records`` files (``N {json}``, NoOps already dropped). Then
:func:`comparable` drops what differs by writer and not by meaning, by Kafka's own rules:

* NoOp records (the leader's heartbeat into the log, as many as time passed);
* incarnation ids (random per process start) and ACL ids (``Uuid.randomUuid()`` per ACL);
* broker epochs, which are the offsets of the broker's registration record (but ``-1``);
* with ``across_runs``, what a second run of the same procedure makes anew: ports, topic ids
  (shown as the topic's name), directory ids (as ``<dir of broker N>``; Kafka's reserved ids
  kept), SCRAM salts and keys, the producer id block (which brokers allocated how many
  blocks depends on where the producers' InitProducerId went);
* with ``partition_states=False``, a partition's leader, ISR and epochs (a broker roll
  moves them at its own pace); with ``assignments=False``, its replicas and their
  directories too (a new topic's assignment starts at a random broker).

The records of a migration load (those of the load's types between
``BeginTransaction "ZK Migration"`` and the ``ZkMigrationStateRecord`` ending it: a broker's
unfence written meanwhile falls inside the transaction too) are compared as Kafka's orders
allow (§6): the topics (a topic's record, its configs, its partitions) as a set, the broker
config entities as a set, each resource's ACLs as a set, the rest in order
(:class:`LoadView`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]

_PAYLOAD = re.compile(r"^\| offset: (\d+) .* payload: (\{.*\})\s*$")
LOAD_NAME = "ZK Migration"
#: what the load writes (§6); the controller's other records of the same moments (a broker's
#: unfence from its heartbeat) fall inside the load's transaction too
LOAD_RECORD_TYPES = frozenset({
    "TOPIC_RECORD", "CONFIG_RECORD", "PARTITION_RECORD", "USER_SCRAM_CREDENTIAL_RECORD",
    "CLIENT_QUOTA_RECORD", "PRODUCER_IDS_RECORD", "ACCESS_CONTROL_ENTRY_RECORD",
    "DELEGATION_TOKEN_RECORD"})
#: DirectoryId's reserved ids (UNASSIGNED, LOST, MIGRATING): the same in every run
RESERVED_DIRECTORIES = frozenset({"AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ",
                                  "AAAAAAAAAAAAAAAAAAAAAg"})
_SCRAM_SECRETS = ("salt", "storedKey", "serverKey")
PARTITION_STATE = ("leader", "isr", "leaderEpoch", "partitionEpoch")
ASSIGNMENT = ("replicas", "addingReplicas", "removingReplicas", "directories")
#: what an operator's change writes (topics, partitions, configs, quotas, SCRAM users, ACLs,
#: tokens, features) and the migration's states; the other records (registrations, fencing,
#: leaders and ISRs, directory assignments, producer id blocks) come at the cluster's pace
CHANGE_RECORD_TYPES = LOAD_RECORD_TYPES - {"PRODUCER_IDS_RECORD"} | {
    "REMOVE_TOPIC_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD",
    "FEATURE_LEVEL_RECORD", "ZK_MIGRATION_STATE_RECORD"}
TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One data record of the metadata log: its offset and the decoder's JSON."""

    offset: int
    type: str
    version: int
    data: Json

    @classmethod
    def of(cls, offset: int, payload: Json) -> LogRecord:
        return cls(offset, payload["type"], payload["version"], payload["data"])


def parse_dump(text: str) -> list[LogRecord]:
    """Every data record of a ``DumpLogSegments --cluster-metadata-decoder`` output but
    NoOps, in offset order."""
    found = [LogRecord.of(int(match[1]), json.loads(match[2]))
             for match in map(_PAYLOAD.match, text.splitlines()) if match]
    return [record for record in found if record.type != "NO_OP_RECORD"]


def parse_records(text: str) -> list[LogRecord]:
    """A ``captured/*.records`` file: ``<offset> <json>`` per line."""
    found = []
    for line in text.splitlines():
        offset, _, payload = line.partition(" ")
        found.append(LogRecord.of(int(offset), json.loads(payload)))
    return [record for record in found if record.type != "NO_OP_RECORD"]


def load_span(records: list[LogRecord]) -> list[LogRecord]:
    """The records of the last completed load: those of the load's types after its
    BeginTransaction, before the ZkMigrationStateRecord that ends it (empty if the log has
    no completed load)."""
    bounds = _last_load(records)
    if bounds is None:
        return []
    begin, end = bounds
    return [r for r in records[begin + 1:end] if r.type in LOAD_RECORD_TYPES]


def changes_after_load(records: list[LogRecord]) -> list[str]:
    """The changes written after the last completed load (:data:`CHANGE_RECORD_TYPES`), in
    order, as another run of the same procedure writes them too: across runs, without
    partition states and assignments (a new topic's placement starts at a random broker)."""
    bounds = _last_load(records)
    names = Names.of(records)
    return [normalised(r, names=names, partition_states=False, assignments=False)
            for r in records[(bounds[1] + 1 if bounds else 0):]
            if r.type in CHANGE_RECORD_TYPES]


def _last_load(records: list[LogRecord]) -> tuple[int, int] | None:
    """The indexes of the last completed load's BeginTransaction and of the
    ZkMigrationStateRecord ending it."""
    begins = [i for i, r in enumerate(records)
              if r.type == "BEGIN_TRANSACTION_RECORD" and r.data.get("name") == LOAD_NAME]
    for begin in reversed(begins):
        end = next((i for i in range(begin + 1, len(records))
                    if records[i].type in ("ZK_MIGRATION_STATE_RECORD",
                                           "ABORT_TRANSACTION_RECORD")), None)
        if end is not None and records[end].type == "ZK_MIGRATION_STATE_RECORD":
            return begin, end
    return None


@dataclass(frozen=True, slots=True)
class Names:
    """What ``across_runs`` shows run-made ids as: topic ids by name, directory ids by
    broker (from the topic and broker registration records of the whole log)."""

    topics: Mapping[str, str]
    directories: Mapping[str, int]

    @classmethod
    def of(cls, records: Iterable[LogRecord]) -> Names:
        topics: dict[str, str] = {}
        directories: dict[str, int] = {}
        for record in records:
            if record.type == "TOPIC_RECORD":
                topics[record.data["topicId"]] = record.data["name"]
            elif record.type == "REGISTER_BROKER_RECORD":
                for directory in record.data.get("logDirs") or ():
                    directories[directory] = record.data["brokerId"]
        return cls(topics, directories)

    def directory(self, uuid: str) -> str:
        if uuid in RESERVED_DIRECTORIES:
            return uuid
        broker = self.directories.get(uuid)
        return f"<dir of broker {broker}>" if broker is not None else "<dir>"


def normalised(record: LogRecord, *, names: Names | None = None,
               partition_states: bool = True, assignments: bool = True) -> str:
    """One record as canonical JSON without what differs by writer (module docstring);
    ``names`` given: across runs."""
    data = dict(record.data)
    data.pop("incarnationId", None)
    if record.type in ("ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_ACCESS_CONTROL_ENTRY_RECORD"):
        data.pop("id", None)
    if data.get("brokerEpoch", -1) != -1:
        data["brokerEpoch"] = "<epoch>"
    if record.type in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
        dropped = (() if partition_states else PARTITION_STATE) + (
            () if assignments else ASSIGNMENT)
        for key in dropped:
            data.pop(key, None)
    if names is not None:
        _across_runs(record.type, data, names)
    return json.dumps({"type": record.type, "version": record.version, "data": data},
                      sort_keys=True)


def _across_runs(record_type: str, data: Json, names: Names) -> None:
    if "topicId" in data:
        data["topicId"] = f"<topic {names.topics.get(data['topicId'], '?')}>"
    for key in ("logDirs", "directories"):
        if data.get(key) is not None:
            data[key] = [names.directory(uuid) for uuid in data[key]]
    if "endPoints" in data:
        data["endPoints"] = [{**endpoint, "port": "<port>"} for endpoint in data["endPoints"]]
    for key in _SCRAM_SECRETS:
        if key in data:
            data[key] = f"<{key}>"
    if record_type == "PRODUCER_IDS_RECORD":
        data |= {"brokerId": "<broker>", "nextProducerId": "<next>"}


@dataclass(frozen=True, slots=True)
class LoadView:
    """A load's records in the orders Kafka keeps (module docstring)."""

    topics: frozenset[tuple[str, ...]]
    broker_configs: frozenset[tuple[str, ...]]
    rest: tuple[frozenset[str] | str, ...]
    """In order; a resource's ACL records as one set."""
    count: int


def load_view(records: list[LogRecord], *, names: Names | None = None,
              partition_states: bool = True, assignments: bool = True) -> LoadView:
    """The load's records (:func:`load_span`, or a load made by pykraft) as a
    :class:`LoadView`. A topic's group is its TopicRecord and the topic's ConfigRecords and
    PartitionRecords after it; a broker entity's group its ConfigRecords."""
    topics: list[list[str]] = []
    brokers: dict[str, list[str]] = {}
    rest: list[str | AclResource] = []
    acls: dict[AclResource, set[str]] = {}
    in_topic = False
    for record in records:
        text = normalised(record, names=names, partition_states=partition_states,
                          assignments=assignments)
        if record.type == "TOPIC_RECORD":
            topics.append([text])
            in_topic = True
            continue
        if in_topic and _of_topic(record):
            topics[-1].append(text)
            continue
        in_topic = False
        if record.type == "CONFIG_RECORD":
            brokers.setdefault(record.data["resourceName"], []).append(text)
        elif record.type == "ACCESS_CONTROL_ENTRY_RECORD":
            resource = AclResource(record.data["resourceType"], record.data["patternType"],
                                   record.data["resourceName"])
            if resource not in acls:
                rest.append(resource)
                acls[resource] = set()
            acls[resource].add(text)
        else:
            rest.append(text)
    return LoadView(frozenset(map(tuple, topics)), frozenset(map(tuple, brokers.values())),
                    tuple(frozenset(acls[item]) if isinstance(item, AclResource) else item
                          for item in rest), len(records))


@dataclass(frozen=True, slots=True)
class AclResource:
    resource_type: int
    pattern_type: int
    name: str


def _of_topic(record: LogRecord) -> bool:
    return record.type == "PARTITION_RECORD" or (
        record.type == "CONFIG_RECORD" and record.data["resourceType"] == TOPIC_RESOURCE)
