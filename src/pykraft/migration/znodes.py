"""The znodes a migrating controller reads and writes, typed, with Kafka 3.9's exact bytes
(core:``kafka/zk/ZkData.scala``): compact JSON in the key order Jackson gives Kafka's Scala
maps (:mod:`pykraft.migration.map_order`), maps inside a znode in the order they were read.

Each znode class has ``decode(raw)`` and ``encode()``; :func:`decode_znode` picks the class
from the path. Bad data raises :class:`ZNodeDecodeError` naming the znode and the problem.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Self

from pykraft.errors import PyKraftError
from pykraft.ids import InvalidUuidError, uuid_from_str, uuid_to_str
from pykraft.migration.map_order import (
    immutable_map_order,
    mutable_map_order,
    properties_order,
)

Assignment = tuple[tuple[int, tuple[int, ...]], ...]
"""Partition -> replica ids, in the znode's order."""
Pairs = tuple[tuple[str, str], ...]
"""A string map in the znode's order."""


class ZNodeDecodeError(PyKraftError, ValueError):
    """Znode data that is not what Kafka writes at that path."""


_ESCAPES = re.compile(r"(\\\\)|\\u00([0-9a-f]{2})")


def _dumps(value: object) -> bytes:
    """Jackson's compact form: no spaces, non-ASCII written as UTF-8, and control characters
    without a short escape as ``\\u00XX`` in upper case (Python writes lower case)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    text = _ESCAPES.sub(lambda m: m.group(1) or "\\u00" + m.group(2).upper(), text)
    return text.encode("utf-8")


def _ordered(values: Mapping[str, object], order: Sequence[str]) -> dict[str, object]:
    return {key: values[key] for key in order}


def _object(raw: bytes, what: str) -> dict[str, object]:
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ZNodeDecodeError(f"{what}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ZNodeDecodeError(f"{what}: expected a JSON object, got {raw[:80]!r}")
    return value


def _int(obj: Mapping[str, object], key: str, what: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ZNodeDecodeError(f"{what}: {key!r} must be an integer, got {value!r}")
    return value


def _str(obj: Mapping[str, object], key: str, what: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise ZNodeDecodeError(f"{what}: {key!r} must be a string, got {value!r}")
    return value


def _long_text(obj: Mapping[str, object], key: str, what: str) -> int:
    """A long Kafka writes as a decimal string (timestamps, producer ids)."""
    text = _str(obj, key, what)
    try:
        return int(text)
    except ValueError:
        raise ZNodeDecodeError(f"{what}: {key!r} must be a decimal string, got {text!r}") from None


def _ints(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ZNodeDecodeError(f"{what}: expected a list of integers, got {value!r}")
    return tuple(value)


def _dict(obj: Mapping[str, object], key: str, what: str) -> dict[str, object]:
    value = obj.get(key)
    if not isinstance(value, dict):
        raise ZNodeDecodeError(f"{what}: {key!r} must be a JSON object, got {value!r}")
    return value


def _pairs(obj: Mapping[str, object], key: str, what: str) -> Pairs:
    found = _dict(obj, key, what)
    if not all(isinstance(v, str) for v in found.values()):
        raise ZNodeDecodeError(f"{what}: every value of {key!r} must be a string")
    return tuple((k, str(v)) for k, v in found.items())


def _assignment(obj: Mapping[str, object], key: str, what: str) -> Assignment:
    found = _dict(obj, key, what)
    try:
        return tuple((int(p), _ints(replicas, f"{what} {key}[{p}]"))
                     for p, replicas in found.items())
    except ValueError:
        raise ZNodeDecodeError(f"{what}: {key!r} has a non-numeric partition") from None


def _uuid(text: str, what: str) -> uuid.UUID:
    try:
        return uuid_from_str(text)
    except InvalidUuidError as exc:
        raise ZNodeDecodeError(f"{what}: {exc}") from None


def partition_order(partitions: Sequence[int]) -> list[int]:
    """The order Kafka writes a topic znode's partition maps (a ``mutable.HashMap``)."""
    by_text = {str(p): p for p in partitions}
    return [by_text[text] for text in mutable_map_order(list(by_text))]


def zk_enum_name(camel: str) -> str:
    """A Kafka enum's name from the camel case ZooKeeper stores (``TransactionalId`` ->
    ``TRANSACTIONAL_ID``, ``ClusterAction`` -> ``CLUSTER_ACTION``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).upper()


# --- topics and partitions ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TopicZNode:
    """``/brokers/topics/<t>``: the replica assignment and the topic id (version 3)."""

    topic_id: uuid.UUID | None
    partitions: Assignment
    adding_replicas: Assignment = ()
    removing_replicas: Assignment = ()

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "topic znode"
        obj = _object(raw, what)
        topic_id = obj.get("topic_id")
        if topic_id is not None and not isinstance(topic_id, str):
            raise ZNodeDecodeError(f"{what}: 'topic_id' must be a string, got {topic_id!r}")
        optional = {key: _assignment(obj, key, what) if key in obj else ()
                    for key in ("adding_replicas", "removing_replicas")}
        return cls(None if topic_id is None else _uuid(topic_id, what),
                   _assignment(obj, "partitions", what), **optional)

    def encode(self) -> bytes:
        values: dict[str, object] = {
            "version": 3, "partitions": _assignment_json(self.partitions),
            "adding_replicas": _assignment_json(self.adding_replicas),
            "removing_replicas": _assignment_json(self.removing_replicas)}
        if self.topic_id is not None:
            values["topic_id"] = uuid_to_str(self.topic_id)
        return _dumps(_ordered(values, mutable_map_order(list(values), built_with=4)))

    @classmethod
    def of(cls, topic_id: uuid.UUID, replicas: Mapping[int, Sequence[int]],
           adding: Mapping[int, Sequence[int]] | None = None,
           removing: Mapping[int, Sequence[int]] | None = None) -> Self:
        """The znode Kafka writes for an assignment: its partition maps in Kafka's order,
        adding and removing replicas only for the partitions that have some."""
        def ordered(assignment: Mapping[int, Sequence[int]] | None) -> Assignment:
            found = {p: tuple(r) for p, r in (assignment or {}).items() if r}
            return tuple((p, found[p]) for p in partition_order(list(found)))

        return cls(topic_id, ordered(replicas), ordered(adding), ordered(removing))


def _assignment_json(assignment: Assignment) -> dict[str, list[int]]:
    return {str(p): list(replicas) for p, replicas in assignment}


RECOVERED = 0


@dataclass(frozen=True, slots=True)
class PartitionStateZNode:
    """``/brokers/topics/<t>/partitions/<p>/state``: leader, ISR and epochs (version 1);
    ``leader_recovery_state`` is written only when not RECOVERED."""

    leader: int
    leader_epoch: int
    controller_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int = RECOVERED

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "partition state znode"
        obj = _object(raw, what)
        recovery = _int(obj, "leader_recovery_state", what) \
            if "leader_recovery_state" in obj else RECOVERED
        return cls(_int(obj, "leader", what), _int(obj, "leader_epoch", what),
                   _int(obj, "controller_epoch", what), _ints(obj.get("isr"), f"{what} isr"),
                   recovery)

    def encode(self) -> bytes:
        values: dict[str, object] = {
            "version": 1, "leader": self.leader, "leader_epoch": self.leader_epoch,
            "controller_epoch": self.controller_epoch, "isr": list(self.isr)}
        if self.leader_recovery_state != RECOVERED:
            values["leader_recovery_state"] = self.leader_recovery_state
        return _dumps(_ordered(values, immutable_map_order(list(values))))


# --- configs --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ConfigEntityZNode:
    """``/config/<type>/<name>`` (topics, brokers, users, clients, ips, and
    ``users/<u>/clients/<c>``): ``{"version":1,"config":{...}}``; SCRAM credentials are
    config keys of a user (``SCRAM-SHA-256``)."""

    config: Pairs

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        return cls(_pairs(_object(raw, "config znode"), "config", "config znode"))

    @classmethod
    def of(cls, configs: Mapping[str, str]) -> Self:
        """The znode Kafka writes for ``configs`` (put in this order into a ``Properties``)."""
        return cls(tuple((key, configs[key]) for key in properties_order(list(configs))))

    def encode(self) -> bytes:
        return _dumps({"version": 1, "config": dict(self.config)})


@dataclass(frozen=True, slots=True)
class ConfigChangeZNode:
    """``/config/changes/config_change_<seq>``: which entity's config changed (version 2)."""

    entity_path: str

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "config change znode"
        return cls(_str(_object(raw, what), "entity_path", what))

    def encode(self) -> bytes:
        return _dumps({"version": 2, "entity_path": self.entity_path})


# --- ACLs -----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ZkAclEntry:
    """One ACL of a resource znode, with AclAuthorizer's names (``Allow``, ``Describe``)."""

    principal: str
    permission_type: str
    host: str
    operation: str


_ACL_KEYS = ("principal", "permissionType", "host", "operation")


@dataclass(frozen=True, slots=True)
class AclResourceZNode:
    """``/kafka-acl/<Type>/<name>`` or ``/kafka-acl-extended/<pattern>/<Type>/<name>``."""

    acls: tuple[ZkAclEntry, ...]

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "ACL znode"
        entries = _object(raw, what).get("acls")
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ZNodeDecodeError(f"{what}: 'acls' must be a list of objects")
        return cls(tuple(ZkAclEntry(*(_str(e, key, what) for key in _ACL_KEYS))
                         for e in entries))

    def encode(self) -> bytes:
        return _dumps({"acls": [dict(zip(_ACL_KEYS, (a.principal, a.permission_type, a.host,
                                                     a.operation), strict=True))
                                for a in self.acls], "version": 1})


@dataclass(frozen=True, slots=True)
class LiteralAclChangeZNode:
    """``/kafka-acl-changes/acl_changes_<seq>``: ``TOPIC:t-rf3`` (not JSON)."""

    resource_type: str
    name: str

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        text = raw.decode("utf-8", errors="strict")
        resource_type, sep, name = text.partition(":")
        if not sep:
            raise ZNodeDecodeError(f"ACL change znode: expected <TYPE>:<name>, got {text!r}")
        return cls(resource_type, name)

    def encode(self) -> bytes:
        return f"{self.resource_type}:{self.name}".encode()


@dataclass(frozen=True, slots=True)
class ExtendedAclChangeZNode:
    """``/kafka-acl-extended-changes/acl_changes_<seq>`` (version 1)."""

    resource_type: str
    name: str
    pattern_type: str

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "extended ACL change znode"
        obj = _object(raw, what)
        return cls(_str(obj, "resourceType", what), _str(obj, "name", what),
                   _str(obj, "patternType", what))

    def encode(self) -> bytes:
        return _dumps({"version": 1, "resourceType": self.resource_type, "name": self.name,
                       "patternType": self.pattern_type})


# --- cluster-wide znodes --------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ProducerIdBlockZNode:
    """``/latest_producer_id_block``: the last block handed out (version 1)."""

    broker: int
    block_start: int
    block_end: int

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "producer id block znode"
        obj = _object(raw, what)
        return cls(_int(obj, "broker", what), _long_text(obj, "block_start", what),
                   _long_text(obj, "block_end", what))

    def encode(self) -> bytes:
        return _dumps({"version": 1, "broker": self.broker,
                       "block_start": str(self.block_start), "block_end": str(self.block_end)})


@dataclass(frozen=True, slots=True)
class ClusterIdZNode:
    """``/cluster/id`` (its version is the string ``"1"``)."""

    id: str

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        return cls(_str(_object(raw, "cluster id znode"), "id", "cluster id znode"))

    def encode(self) -> bytes:
        return _dumps({"version": "1", "id": self.id})


@dataclass(frozen=True, slots=True)
class ControllerZNode:
    """``/controller`` (version 2): a ZK broker's (ephemeral, ``kraftControllerEpoch`` -1) or
    a KRaft controller's claim (persistent, its KRaft epoch)."""

    broker_id: int
    timestamp: int
    kraft_controller_epoch: int = -1

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "controller znode"
        obj = _object(raw, what)
        epoch = _int(obj, "kraftControllerEpoch", what) if "kraftControllerEpoch" in obj else -1
        return cls(_int(obj, "brokerid", what), _long_text(obj, "timestamp", what), epoch)

    def encode(self) -> bytes:
        return _dumps({"version": 2, "brokerid": self.broker_id,
                       "timestamp": str(self.timestamp),
                       "kraftControllerEpoch": self.kraft_controller_epoch})


@dataclass(frozen=True, slots=True)
class ControllerEpochZNode:
    """``/controller_epoch``: the ZK controller epoch as a decimal string."""

    epoch: int

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        text = raw.decode("ascii", errors="replace")
        if not re.fullmatch(r"-?\d+", text):
            raise ZNodeDecodeError(f"controller epoch znode: not a number: {text!r}")
        return cls(int(text))

    def encode(self) -> bytes:
        return str(self.epoch).encode("ascii")


@dataclass(frozen=True, slots=True)
class MigrationZNode:
    """``/migration`` (version 0): the last KRaft offset/epoch written to ZooKeeper and the
    controller that wrote it (Kafka's ``ZkMigrationLeadershipState``); -1 everywhere when
    created."""

    kraft_metadata_offset: int = -1
    kraft_controller_id: int = -1
    kraft_metadata_epoch: int = -1
    kraft_controller_epoch: int = -1

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "migration znode"
        obj = _object(raw, what)
        return cls(*(_int(obj, key, what) for key in (
            "kraft_metadata_offset", "kraft_controller_id", "kraft_metadata_epoch",
            "kraft_controller_epoch")))

    def encode(self) -> bytes:
        values: dict[str, object] = {
            "version": 0, "kraft_controller_id": self.kraft_controller_id,
            "kraft_controller_epoch": self.kraft_controller_epoch,
            "kraft_metadata_offset": self.kraft_metadata_offset,
            "kraft_metadata_epoch": self.kraft_metadata_epoch}
        return _dumps(_ordered(values, immutable_map_order(list(values))))

    @property
    def initial_migration_complete(self) -> bool:
        """Kafka's ``initialZkMigrationComplete``: the load's offset was written."""
        return self.kraft_metadata_offset > 0


@dataclass(frozen=True, slots=True)
class BrokerIdZNode:
    """``/brokers/ids/<id>``: a ZK broker's ephemeral registration (``BrokerIdZNode``);
    ``rack`` from version 3, the listener map from 4, ``features`` from 5."""

    version: int
    host: str
    port: int
    endpoints: tuple[str, ...]
    jmx_port: int
    timestamp: int
    rack: str | None = None
    listener_security_protocol_map: Pairs | None = None
    features: dict[str, object] | None = None

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "broker registration znode"
        obj = _object(raw, what)
        endpoints = obj.get("endpoints")
        if not isinstance(endpoints, list) or not all(isinstance(e, str) for e in endpoints):
            raise ZNodeDecodeError(f"{what}: 'endpoints' must be a list of strings")
        rack = obj.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise ZNodeDecodeError(f"{what}: 'rack' must be a string, got {rack!r}")
        listeners = _pairs(obj, "listener_security_protocol_map", what) \
            if "listener_security_protocol_map" in obj else None
        features = _dict(obj, "features", what) if "features" in obj else None
        return cls(_int(obj, "version", what), _str(obj, "host", what), _int(obj, "port", what),
                   tuple(endpoints), _int(obj, "jmx_port", what),
                   _long_text(obj, "timestamp", what), rack, listeners, features)

    def encode(self) -> bytes:
        values: dict[str, object] = {
            "version": self.version, "host": self.host, "port": self.port,
            "endpoints": list(self.endpoints), "jmx_port": self.jmx_port,
            "timestamp": str(self.timestamp)}
        if self.rack is not None:
            values["rack"] = self.rack
        if self.listener_security_protocol_map is not None:
            values["listener_security_protocol_map"] = dict(self.listener_security_protocol_map)
        if self.features is not None:
            values["features"] = self.features
        return _dumps(_ordered(values, mutable_map_order(list(values), built_with=6)))


@dataclass(frozen=True, slots=True)
class FeatureZNode:
    """``/feature`` (KIP-584; version 2): read by nothing in the migration, decoded so a dump
    round-trips."""

    status: int
    features: dict[str, object]

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "feature znode"
        obj = _object(raw, what)
        return cls(_int(obj, "status", what), _dict(obj, "features", what))

    def encode(self) -> bytes:
        values: dict[str, object] = {"version": 2, "status": self.status,
                                     "features": self.features}
        return _dumps(_ordered(values, mutable_map_order(list(values), built_with=3)))


_TOKEN_KEYS = ("version", "owner", "tokenRequester", "renewers", "issueTimestamp",
               "maxTimestamp", "expiryTimestamp", "tokenId")


@dataclass(frozen=True, slots=True)
class DelegationTokenZNode:
    """``/delegation_token/tokens/<id>`` (version 3, ``DelegationTokenManagerZk``; before 3
    the owner was also the requester): owner, requester and renewers sanitized as stored.
    Not captured (the reference run had no SASL listener): the key order is Scala's, checked
    with Scala itself, not against a token Kafka wrote."""

    owner: str
    token_requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int
    token_id: str

    @classmethod
    def decode(cls, raw: bytes) -> Self:
        what = "delegation token znode"
        obj = _object(raw, what)
        renewers = obj.get("renewers")
        if not isinstance(renewers, list) or not all(isinstance(r, str) for r in renewers):
            raise ZNodeDecodeError(f"{what}: 'renewers' must be a list of strings")
        owner = _str(obj, "owner", what)
        requester = _str(obj, "tokenRequester", what) if "tokenRequester" in obj else owner
        return cls(owner, requester, tuple(renewers), _int(obj, "issueTimestamp", what),
                   _int(obj, "maxTimestamp", what), _int(obj, "expiryTimestamp", what),
                   _str(obj, "tokenId", what))

    def encode(self) -> bytes:
        values: dict[str, object] = dict(zip(_TOKEN_KEYS, (
            3, self.owner, self.token_requester, list(self.renewers), self.issue_timestamp,
            self.max_timestamp, self.expiry_timestamp, self.token_id), strict=True))
        return _dumps(_ordered(values, immutable_map_order(list(values))))


# --- by path --------------------------------------------------------------------------------

ZNode = (TopicZNode | PartitionStateZNode | ConfigEntityZNode | ConfigChangeZNode
         | AclResourceZNode | LiteralAclChangeZNode | ExtendedAclChangeZNode
         | ProducerIdBlockZNode | ClusterIdZNode | ControllerZNode | ControllerEpochZNode
         | MigrationZNode | BrokerIdZNode | FeatureZNode | DelegationTokenZNode)

_SEGMENT = r"[^/]+"
_BY_PATH: tuple[tuple[re.Pattern[str], type[ZNode]], ...] = tuple(
    (re.compile(pattern), cls) for pattern, cls in (
        (rf"/brokers/topics/{_SEGMENT}", TopicZNode),
        (rf"/brokers/topics/{_SEGMENT}/partitions/\d+/state", PartitionStateZNode),
        (r"/brokers/ids/\d+", BrokerIdZNode),
        (rf"/config/(topics|brokers|users|clients|ips)/{_SEGMENT}", ConfigEntityZNode),
        (rf"/config/users/{_SEGMENT}/clients/{_SEGMENT}", ConfigEntityZNode),
        (r"/config/changes/config_change_\d+", ConfigChangeZNode),
        (rf"/kafka-acl/{_SEGMENT}/{_SEGMENT}", AclResourceZNode),
        (rf"/kafka-acl-extended/{_SEGMENT}/{_SEGMENT}/{_SEGMENT}", AclResourceZNode),
        (r"/kafka-acl-changes/acl_changes_\d+", LiteralAclChangeZNode),
        (r"/kafka-acl-extended-changes/acl_changes_\d+", ExtendedAclChangeZNode),
        (r"/latest_producer_id_block", ProducerIdBlockZNode),
        (r"/cluster/id", ClusterIdZNode),
        (r"/controller", ControllerZNode),
        (r"/controller_epoch", ControllerEpochZNode),
        (r"/migration", MigrationZNode),
        (r"/feature", FeatureZNode),
        (rf"/delegation_token/tokens/{_SEGMENT}", DelegationTokenZNode),
    ))


def znode_class(path: str) -> type[ZNode] | None:
    """The class of the data Kafka keeps at ``path``, or None for a container znode."""
    for pattern, cls in _BY_PATH:
        if pattern.fullmatch(path):
            return cls
    return None


def decode_znode(path: str, raw: bytes) -> ZNode:
    """Decode the data of the znode at ``path``; an unknown path is an error."""
    cls = znode_class(path)
    if cls is None:
        raise ZNodeDecodeError(f"{path}: no znode data Kafka's migration reads or writes")
    try:
        return cls.decode(raw)
    except ZNodeDecodeError as exc:
        raise ZNodeDecodeError(f"{path}: {exc}") from None
