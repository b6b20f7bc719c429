"""The metadata image as the file tree Kafka's metadata shell shows (``image/node/*``).

Directories map names to children; files hold text. The tree is built once per image:
shell sessions are read-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pykraft import __version__
from pykraft.features import METADATA_VERSION_FEATURE, metadata_version_for_level
from pykraft.ids import uuid_to_str
from pykraft.image.client_quotas import ClientQuotasImage, QuotaEntity
from pykraft.image.cluster_image import BrokerRegistration, ControllerRegistration
from pykraft.image.configs import ConfigResourceType
from pykraft.image.features import ZkMigrationState
from pykraft.image.image import MetadataImage
from pykraft.image.scram import ScramCredential, ScramImage, ScramMechanism
from pykraft.image.topics import PartitionRegistration, TopicImage
from pykraft.java import java_double_text
from pykraft.records.metadata import DelegationTokenRecord


@dataclass(frozen=True, slots=True)
class FileNode:
    text: str


@dataclass(frozen=True, slots=True)
class DirNode:
    children: Mapping[str, Node] = field(default_factory=dict)


Node = FileNode | DirNode

_RECOVERY = {0: "RECOVERED", 1: "RECOVERING"}


def _ints(values: Iterable[int] | None) -> str:
    return "[" + ", ".join(str(v) for v in values or ()) + "]"


def _broker_text(b: BrokerRegistration) -> str:
    listeners = ", ".join(
        f"Endpoint(listenerName='{e.name}', securityProtocol={e.security_protocol}, "
        f"host='{e.host}', port={e.port})" for e in b.listeners)
    features = ", ".join(f"{f.name}: {f.min_supported_version}-{f.max_supported_version}"
                         for f in b.features)
    rack = "Optional.empty" if b.rack is None else f"Optional[{b.rack}]"
    dirs = ", ".join(uuid_to_str(d) for d in b.log_dirs)
    return (f"BrokerRegistration(id={b.broker_id}, epoch={b.epoch}, "
            f"incarnationId={uuid_to_str(b.incarnation_id)}, listeners=[{listeners}], "
            f"supportedFeatures={{{features}}}, rack={rack}, fenced={str(b.fenced).lower()}, "
            f"inControlledShutdown={str(b.in_controlled_shutdown).lower()}, "
            f"isMigratingZkBroker={str(b.is_migrating_zk_broker).lower()}, "
            f"directories=[{dirs}])")


def _controller_text(c: ControllerRegistration) -> str:
    listeners = ", ".join(f"Endpoint(listenerName='{e.name}', host='{e.host}', port={e.port})"
                          for e in c.listeners)
    features = ", ".join(f"{f.name}: {f.min_supported_version}-{f.max_supported_version}"
                         for f in c.features)
    return (f"ControllerRegistration(id={c.controller_id}, "
            f"incarnationId={uuid_to_str(c.incarnation_id)}, "
            f"zkMigrationReady={str(c.zk_migration_ready).lower()}, "
            f"listeners=[{listeners}], supportedFeatures={{{features}}})")


def _partition_text(p: PartitionRegistration) -> str:
    dirs = ", ".join(uuid_to_str(d) for d in p.directories)
    return (f"PartitionRegistration(replicas={_ints(p.replicas)}, directories=[{dirs}], "
            f"isr={_ints(p.isr)}, removingReplicas={_ints(p.removing_replicas)}, "
            f"addingReplicas={_ints(p.adding_replicas)}, "
            f"elr={_ints(p.eligible_leader_replicas)}, lastKnownElr={_ints(p.last_known_elr)}, "
            f"leader={p.leader}, "
            f"leaderRecoveryState={_RECOVERY.get(p.leader_recovery_state, 'UNKNOWN')}, "
            f"leaderEpoch={p.leader_epoch}, partitionEpoch={p.partition_epoch})")


def _topic_dir(topic: TopicImage) -> DirNode:
    children: dict[str, Node] = {"name": FileNode(topic.name),
                                 "id": FileNode(uuid_to_str(topic.topic_id))}
    for partition_id, partition in topic.partitions.items():
        children[str(partition_id)] = FileNode(_partition_text(partition))
    return DirNode(children)


def _features_dir(image: MetadataImage) -> DirNode:
    children: dict[str, Node] = {}
    for name, level in image.features.finalized.items():
        if name == METADATA_VERSION_FEATURE:
            mv = metadata_version_for_level(level)
            children["metadataVersion"] = FileNode(f"{mv.name} (level {level})")
        else:
            children[f"finalized_{name}"] = FileNode(str(level))
    state = image.features.zk_migration_state
    if state != ZkMigrationState.NONE:  # Kafka 3.9's node; Kafka 4 (never migrating) has none
        children["zkMigrationState"] = FileNode(state.name)
    return DirNode(children)


def _configs_dir(image: MetadataImage) -> DirNode:
    children: dict[str, Node] = {}
    for (resource_type, name), configs in image.configs.resources.items():
        try:
            type_name = ConfigResourceType(resource_type).name
        except ValueError:
            type_name = str(resource_type)
        children[f"{type_name}:{name}"] = DirNode(
            {key: FileNode(value) for key, value in configs.items()})
    return DirNode(children)


def _scram_text(c: ScramCredential) -> str:
    """Kafka's ScramCredentialDataNode: the shell does not redact, bytes in hex."""
    return (f"ScramCredentialData(salt={c.salt.hex()}, storedKey={c.stored_key.hex()}, "
            f"serverKey={c.server_key.hex()}, iterations={c.iterations})")


def _token_text(t: DelegationTokenRecord) -> str:
    """Kafka's DelegationTokenDataNode, unredacted as the shell prints it: its parentheses
    and its renewers joined with no separator are Kafka's."""
    return (f"DelegationTokenDatatokenId={t.token_id}(owner={t.owner}"
            f"(tokenRequester={t.requester}(renewers={''.join(t.renewers)}, "
            f"issueTimestamp={t.issue_timestamp}, maxTimestamp={t.max_timestamp}), "
            f"expiryTimestamp={t.expiration_timestamp}")


_QUOTA_NAME_PREFIXES = (("client-id", "clientId"), ("ip", "ip"), ("user", "user"))


def _quota_entity_name(entity: QuotaEntity) -> str:
    """Kafka's ClientQuotasImageNode.clientQuotaEntityToString: clientId, ip then user,
    each escaped, joined by "_"; like Kafka's, it leaves out a default (null) name."""
    names = dict(entity)
    return "_".join(
        f"{prefix}({_escape_quota_name(name)})"
        for kind, prefix in _QUOTA_NAME_PREFIXES if (name := names.get(kind)) is not None)


def _escape_quota_name(name: str) -> str:
    return name.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _quotas_dir(quotas: ClientQuotasImage) -> DirNode:
    return DirNode({
        _quota_entity_name(entity): DirNode({key: FileNode(java_double_text(value))
                                             for key, value in values.items()})
        for entity, values in quotas.entities.items()})


def _scram_dir(scram: ScramImage) -> DirNode:
    """One directory per known mechanism, listed even when it has no users."""
    return DirNode({
        mechanism.mechanism_name: DirNode({
            user: FileNode(_scram_text(c))
            for user, c in scram.mechanisms.get(mechanism, {}).items()})
        for mechanism in ScramMechanism if mechanism is not ScramMechanism.UNKNOWN})


def image_tree(image: MetadataImage, *, source: str) -> DirNode:
    """The root ``/`` with ``/image`` for ``image`` and ``/local`` for this tool."""
    p = image.provenance
    topics = image.topics
    cluster = image.cluster
    image_dir = DirNode({
        "provenance": FileNode(f"MetadataProvenance(lastContainedOffset={p.last_offset}, "
                               f"lastContainedEpoch={p.last_epoch}, "
                               f"lastContainedLogTimeMs={p.last_timestamp_ms})"),
        "features": _features_dir(image),
        "cluster": DirNode({
            "brokers": DirNode({str(i): FileNode(_broker_text(b))
                                for i, b in cluster.brokers.items()}),
            "controllers": DirNode({str(i): FileNode(_controller_text(c))
                                    for i, c in cluster.controllers.items()}),
        }),
        "topics": DirNode({
            "byName": DirNode({name: _topic_dir(t) for name, t in topics.by_name.items()}),
            "byId": DirNode({uuid_to_str(i): _topic_dir(t) for i, t in topics.by_id.items()}),
        }),
        "configs": _configs_dir(image),
        "clientQuotas": _quotas_dir(image.client_quotas),
        "producerIds": DirNode({"nextProducerId": FileNode(
            str(image.producer_ids.next_producer_id))}),
        "acls": DirNode({"byId": DirNode({uuid_to_str(acl_id): FileNode(str(acl))
                                          for acl_id, acl in image.acls.acls.items()})}),
        "scram": _scram_dir(image.scram),
        "delegationToken": DirNode({
            token_id: FileNode(_token_text(token))
            for token_id, token in image.delegation_tokens.tokens.items()}),
    })
    local = DirNode({"version": FileNode(__version__), "commitId": FileNode("unknown"),
                     "source": FileNode(source)})
    return DirNode({"image": image_dir, "local": local})
