"""The load of a ZooKeeper cluster's metadata into KRaft records (migration-plan §6; Kafka's
``ZkMigrationClient.readAllMetadata`` and the driver's ``BufferingBatchConsumer``).

:func:`read_all_metadata` gives the record lists in Kafka's order (one per topic, broker
config entity, SCRAM credential, quota entity, producer block, ACL resource, and one for the
delegation tokens); :func:`buffer_batches` groups them into the controller writes, flushed
once a write holds ``zookeeper.metadata.migration.min.batch.size`` records. The records keep
the versions Kafka's load writes (all 0: PartitionRecord without directories), so the
controller must write them as given. ACL ids come from the injected ``rng``.
"""

from __future__ import annotations

import base64
import binascii
import random
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import TypeVar

from pykraft.config.kafka_broker_table import KAFKA_BROKER_CONFIGS
from pykraft.errors import PyKraftError
from pykraft.ids import random_uuid
from pykraft.image.acls import AclOperation, AclPermissionType
from pykraft.image.scram import ScramMechanism
from pykraft.java import java_hash_order
from pykraft.migration.zk_tree import (
    DEFAULT_ENTITY,
    AclResource,
    ConfigEntity,
    ZkTopic,
    ZkTree,
    desanitize,
)
from pykraft.migration.znodes import (
    DelegationTokenZNode,
    Pairs,
    PartitionStateZNode,
    zk_enum_name,
)
from pykraft.records.metadata import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    EntityData,
    MetadataRecord,
    PartitionRecord,
    ProducerIdsRecord,
    TopicRecord,
    UserScramCredentialRecord,
    api_key_of,
)

DEFAULT_MIN_BATCH_SIZE = 200
"""``zookeeper.metadata.migration.min.batch.size``'s default (an internal config)."""
MAX_ACL_BATCH_SIZE = 100
"""``ZkMigrationClient.MaxBatchSize``: a resource's ACLs go in lists of at most this many."""
TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER
_SCRAM_MECHANISMS = (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
DYNAMIC_PASSWORD_CONFIGS = frozenset(
    name for name, config_type, _, update_mode, _ in KAFKA_BROKER_CONFIGS
    if config_type == "PASSWORD" and update_mode != "read-only")
"""``DynamicBrokerConfig.DynamicPasswordConfigs``: a broker config key ending with one of
these (``listener.name.<l>.ssl.key.password`` too) is stored encoded in ZooKeeper."""
_LOAD_RECORD_VERSION = 0

RecordList = list[MetadataRecord]
BrokersSeen = dict[int, None]
"""The broker ids the load named, in the order first seen (an ordered set)."""
_JAVA_DOUBLE = re.compile(r"([+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))[fFdD]?")
"""Java's ``Double.valueOf`` text (Python's ``float`` also takes ``1_000`` and ``inf``);
hexadecimal floats are not accepted."""
_JAVA_TRIMMED = "".join(map(chr, range(33)))  # String.trim: every char <= ' '
T = TypeVar("T")


class MigrationLoadError(PyKraftError, ValueError):
    """ZooKeeper data the load cannot turn into records (Kafka's load fails on it too)."""


@dataclass(frozen=True, slots=True)
class MigrationLoad:
    """The load's controller writes, in order, and the broker ids it saw (replicas, adding
    replicas and numeric broker config entities)."""

    batches: tuple[tuple[MetadataRecord, ...], ...]
    brokers_seen: tuple[int, ...]
    """In the order first seen (Kafka keeps them in a ``HashSet``)."""

    @property
    def records(self) -> list[MetadataRecord]:
        return [record for batch in self.batches for record in batch]


PasswordDecoder = Callable[[str], str]
"""Decodes a password broker config as stored in ZooKeeper (``password.encoder.secret``)."""


def migration_load(tree: ZkTree, rng: random.Random, *,
                   min_batch_size: int = DEFAULT_MIN_BATCH_SIZE,
                   password_decoder: PasswordDecoder | None = None) -> MigrationLoad:
    """The whole load of ``tree``: its record lists batched as Kafka's driver batches them."""
    brokers: BrokersSeen = {}
    lists = read_all_metadata(tree, rng, brokers, password_decoder)
    return MigrationLoad(tuple(buffer_batches(lists, min_batch_size)), tuple(brokers))


def completion_message(load: MigrationLoad, *, duration_ms: int, batch_wait_ms: int,
                       offset: int, epoch: int) -> str:
    """The driver's log line once the load committed (``MigrationManifest.toString``):
    ``batch_wait_ms`` is the time spent waiting for the batches to commit, in total."""
    counts = Counter((r.api_key, r.type_name) for r in load.records)
    types = ", ".join(f"{name}={count}" for (_, name), count in sorted(counts.items()))
    average = batch_wait_ms / len(load.batches) if load.batches else -1.0
    brokers = java_hash_order(list(load.brokers_seen), lambda broker: broker)
    return (f"Completed migration of metadata from ZooKeeper to KRaft. {len(load.records)} "
            f"records were generated in {duration_ms} ms across {len(load.batches)} batches. "
            f"The average time spent waiting on a batch was {_two_places(average)} ms. The "
            f"record types were {{{types}}}. The current metadata offset is now {offset} with "
            f"an epoch of {epoch}. Saw {len(brokers)} brokers in the migrated metadata "
            f"[{', '.join(map(str, brokers))}].")


def _two_places(value: float) -> str:
    """Java's ``%.2f`` (half up, from the shortest decimal of the double)."""
    return str(Decimal(repr(value)).quantize(Decimal("0.01"), ROUND_HALF_UP))


def buffer_batches(lists: Iterable[Sequence[T]], min_batch_size: int) -> Iterator[tuple[T, ...]]:
    """Kafka's ``BufferingBatchConsumer``: append each list to a buffer, flush it once it holds
    at least ``min_batch_size`` records, and flush what is left at the end."""
    if min_batch_size < 1:
        raise MigrationLoadError(f"min batch size must be at least 1, got {min_batch_size}")
    buffer: list[T] = []
    for records in lists:
        buffer.extend(records)
        if len(buffer) >= min_batch_size:
            yield tuple(buffer)
            buffer = []
    if buffer:
        yield tuple(buffer)


def read_all_metadata(tree: ZkTree, rng: random.Random, brokers_seen: BrokersSeen,
                      password_decoder: PasswordDecoder | None = None) -> Iterator[RecordList]:
    """The record lists of ``readAllMetadata`` in Kafka's order; ``brokers_seen`` collects
    the broker ids named along the way. Without ``password_decoder`` a password broker
    config is an error (Kafka decodes it with ``password.encoder.secret``)."""
    deleting = set(tree.pending_deletions)
    for topic in tree.topics:
        if topic.name not in deleting:  # Kafka logs "Not migrating pending deleted topic"
            yield _topic_records(topic, brokers_seen)
    for entity in tree.broker_configs:
        records = _broker_config_records(entity, brokers_seen, password_decoder)
        if records:
            yield records
    yield from _quota_and_scram_records(tree)
    if tree.producer_id_block is not None:
        block = tree.producer_id_block
        yield [_record(ProducerIdsRecord(broker_id=block.broker, broker_epoch=-1,
                                         next_producer_id=block.block_end + 1))]
    yield from _acl_records(tree.acls, rng)
    tokens = [_record(_token_record(token)) for token in tree.delegation_tokens]
    if tokens:
        yield tokens


def _record(message: object) -> MetadataRecord:
    return MetadataRecord(api_key_of(type(message)), _LOAD_RECORD_VERSION, message)


def _topic_records(topic: ZkTopic, brokers_seen: BrokersSeen) -> RecordList:
    assignment = topic.assignment
    if assignment.topic_id is None:
        raise MigrationLoadError(f"topic {topic.name!r} has no topic id in ZooKeeper (written "
                                 "by Kafka 2.8 and later): it cannot be migrated")
    records = [_record(TopicRecord(name=topic.name, topic_id=assignment.topic_id))]
    if topic.config is not None:
        records += [_record(ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name=topic.name,
                                         name=key, value=value))
                    for key, value in topic.config.config]
    adding = dict(assignment.adding_replicas)
    removing = dict(assignment.removing_replicas)
    for partition, replicas in assignment.partitions:  # Kafka's order up to 4 partitions
        if not replicas:
            raise MigrationLoadError(f"{topic.name}-{partition} has no replicas in ZooKeeper")
        brokers_seen.update(dict.fromkeys((*replicas, *adding.get(partition, ()))))
        found = topic.states.get(partition)
        if found is None:  # Kafka warns "Could not find partition state in ZK"
            state, partition_epoch = PartitionStateZNode(replicas[0], 0, 0, replicas), 0
        else:
            state, partition_epoch = found.value, found.zk_version
        records.append(_record(PartitionRecord(
            partition_id=partition, topic_id=assignment.topic_id, replicas=replicas,
            isr=state.isr, removing_replicas=removing.get(partition, ()),
            adding_replicas=adding.get(partition, ()), leader=state.leader,
            leader_recovery_state=state.leader_recovery_state, leader_epoch=state.leader_epoch,
            partition_epoch=partition_epoch)))
    return records


def _broker_config_records(entity: ConfigEntity, brokers_seen: BrokersSeen,
                           password_decoder: PasswordDecoder | None) -> RecordList:
    if entity.name == DEFAULT_ENTITY:
        resource_name = ""
    elif entity.name.isdigit():
        resource_name = entity.name
        brokers_seen[int(entity.name)] = None
    else:
        raise MigrationLoadError(f"broker config entity {entity.name!r} is neither "
                                 f"{DEFAULT_ENTITY} nor a broker id")
    return [_record(ConfigRecord(resource_type=BROKER_RESOURCE, resource_name=resource_name,
                                 name=key, value=_plain(entity.name, key, value, password_decoder)))
            for key, value in entity.config.config]


def _plain(entity: str, key: str, value: str, password_decoder: PasswordDecoder | None) -> str:
    if not any(key.endswith(name) for name in DYNAMIC_PASSWORD_CONFIGS):
        return value
    if password_decoder is None:
        raise MigrationLoadError(f"broker config {key} of {entity} is a password stored "
                                 "encoded: loading it needs password.encoder.secret")
    return password_decoder(value)


def _quota_and_scram_records(tree: ZkTree) -> Iterator[RecordList]:
    """``iterateClientQuotas``: users (SCRAM credentials first), clients, users' clients,
    ips."""
    for entity in tree.user_configs:
        yield from _entity_records(entity, "user")
    for entity in tree.client_configs:
        yield from _entity_records(entity, "client-id")
    for entity in tree.user_client_configs:
        user, _, client = entity.name.partition("/clients/")
        quotas = _quota_records([_entity_data("user", user), _entity_data("client-id", client)],
                                entity.config.config, entity.name)
        if quotas:
            yield quotas
    for entity in tree.ip_configs:
        yield from _entity_records(entity, "ip")


def _entity_records(entity: ConfigEntity, entity_type: str) -> Iterator[RecordList]:
    """An entity's SCRAM credentials (Kafka looks for them in every entity type, not only
    users), each its own list, then its quotas as one list."""
    config = dict(entity.config.config)
    for mechanism in _SCRAM_MECHANISMS:
        text = config.pop(mechanism.mechanism_name, None)
        if text is not None:
            yield [_record(_scram_record(desanitize(entity.name), mechanism, text))]
    quotas = _quota_records([_entity_data(entity_type, entity.name)],
                            tuple((k, v) for k, v in entity.config.config if k in config),
                            entity.name)
    if quotas:
        yield quotas


def _entity_data(entity_type: str, znode_name: str) -> EntityData:
    """A quota entity: the default's name is null (a default *config*'s is "")."""
    name = None if znode_name == DEFAULT_ENTITY else desanitize(znode_name)
    return EntityData(entity_type=entity_type, entity_name=name)


def _quota_records(entity: list[EntityData], pairs: Pairs, where: str) -> RecordList:
    records = []
    for key, text in pairs:
        match = _JAVA_DOUBLE.fullmatch(text.strip(_JAVA_TRIMMED))
        if match is None:
            raise MigrationLoadError(
                f"unexpected client quota configuration value of {where}: {key} -> {text}")
        value = float(match.group(1))
        records.append(_record(ClientQuotaRecord(entity=tuple(entity), key=key, value=value,
                                                 remove=False)))
    return records


def _scram_record(user: str, mechanism: ScramMechanism, text: str) -> UserScramCredentialRecord:
    """``ScramCredentialUtils.credentialFromString``:
    ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``."""
    fields = dict(part.partition("=")[::2] for part in text.split(","))
    try:
        return UserScramCredentialRecord(
            name=user, mechanism=int(mechanism),
            salt=base64.b64decode(fields["salt"], validate=True),
            stored_key=base64.b64decode(fields["stored_key"], validate=True),
            server_key=base64.b64decode(fields["server_key"], validate=True),
            iterations=int(fields["iterations"]))
    except (KeyError, ValueError, binascii.Error) as exc:
        raise MigrationLoadError(f"user {user!r}: bad {mechanism.mechanism_name} credential "
                                 f"({exc!r})") from None


def _acl_records(resources: Sequence[AclResource], rng: random.Random) -> Iterator[RecordList]:
    """Per resource pattern, sorted as AclAuthorizer's ``ResourceOrdering`` (type, pattern
    type, then name descending), lists of at most :data:`MAX_ACL_BATCH_SIZE` entries."""
    ordered = sorted(sorted(resources, key=lambda r: r.name, reverse=True),
                     key=lambda r: (r.resource_type, r.pattern_type))
    taken: set[uuid.UUID] = set()
    for resource in ordered:
        batch: RecordList = []
        for acl in resource.acls.value.acls:
            operation = AclOperation.parse(zk_enum_name(acl.operation))
            permission = AclPermissionType.parse(acl.permission_type)
            if operation is AclOperation.UNKNOWN or permission is AclPermissionType.UNKNOWN:
                raise MigrationLoadError(f"ACL of {resource.name!r}: unknown operation or "
                                         f"permission {acl.operation!r}/{acl.permission_type!r}")
            acl_id = _fresh_id(rng, taken)
            batch.append(_record(AccessControlEntryRecord(
                id=acl_id, resource_type=int(resource.resource_type),
                resource_name=resource.name, pattern_type=int(resource.pattern_type),
                principal=acl.principal, host=acl.host, operation=int(operation),
                permission_type=int(permission))))
            if len(batch) == MAX_ACL_BATCH_SIZE:
                yield batch
                batch = []
        if batch:
            yield batch


def _fresh_id(rng: random.Random, taken: set[uuid.UUID]) -> uuid.UUID:
    acl_id = random_uuid(lambda: uuid.UUID(int=rng.getrandbits(128)))
    while acl_id in taken:
        acl_id = random_uuid(lambda: uuid.UUID(int=rng.getrandbits(128)))
    taken.add(acl_id)
    return acl_id


def _token_record(token: DelegationTokenZNode) -> DelegationTokenRecord:
    """``DelegationTokenData.toRecord`` of the token as ``DelegationTokenManagerZk`` reads it
    (principals desanitized)."""
    return DelegationTokenRecord(
        owner=desanitize(token.owner), requester=desanitize(token.token_requester),
        renewers=tuple(desanitize(r) for r in token.renewers),
        issue_timestamp=token.issue_timestamp, max_timestamp=token.max_timestamp,
        expiration_timestamp=token.expiry_timestamp, token_id=token.token_id)
