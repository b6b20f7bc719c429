"""The APIs pykraft speaks: key, accepted version range, first flexible version, listeners.

Ranges are Kafka 4.x's latest (after the KIP-896 version floors of 4.0, e.g. Fetch 4+,
CreateTopics 2+, DeleteTopics 1+, DescribeConfigs 1+, AlterPartition 2+). Every API here is
coded with pykraft's generated classes (:mod:`pykraft.messages.kafka`), which know every
version Kafka defines; this table says which of them pykraft serves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82


class Listener(StrEnum):
    """Kafka's two listener kinds; each API schema names the ones that serve it."""

    CONTROLLER = "controller"
    BROKER = "broker"


@dataclass(frozen=True, slots=True)
class ApiSpec:
    key: ApiKey
    min_version: int
    max_version: int
    #: First version using compact encodings and tagged fields; None = never flexible.
    first_flexible: int | None
    listeners: frozenset[Listener]
    #: The minimum ApiVersions advertises when it is lower than what is served (Kafka 4's
    #: Produce: 0, though v0-v2 are refused, because librdkafka only compresses when
    #: Produce v0 is listed: KAFKA-18659).
    advertised_min_version: int | None = None

    @property
    def advertised_range(self) -> tuple[int, int]:
        low = self.min_version if self.advertised_min_version is None else (
            self.advertised_min_version)
        return low, self.max_version

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def is_flexible(self, version: int) -> bool:
        return self.first_flexible is not None and version >= self.first_flexible

    @property
    def versions(self) -> range:
        return range(self.min_version, self.max_version + 1)


_BOTH = frozenset(Listener)
_CONTROLLER = frozenset({Listener.CONTROLLER})
_BROKER = frozenset({Listener.BROKER})


def _spec(
    key: ApiKey,
    versions: tuple[int, int],
    first_flexible: int | None,
    listeners: frozenset[Listener],
    advertised_min_version: int | None = None,
) -> ApiSpec:
    return ApiSpec(key, versions[0], versions[1], first_flexible, listeners,
                   advertised_min_version)


_SPECS = (
    # Kafka 4.1 accepts Produce v3-v13 (KIP-896 removed v0-v2; v13 names topics by id,
    # KIP-516) and advertises v0-v13 all the same (KAFKA-18659).
    _spec(ApiKey.PRODUCE, (3, 13), 9, _BROKER, advertised_min_version=0),
    _spec(ApiKey.FETCH, (4, 18), 12, _BOTH),
    # ListOffsets v1-11 (v0 removed by KIP-896); v11 (Kafka 4.2, KIP-1023) adds tiered
    # storage's earliest pending upload offset (-6), -1 here as on Kafka without it.
    _spec(ApiKey.LIST_OFFSETS, (1, 11), 6, _BROKER),
    _spec(ApiKey.METADATA, (0, 13), 9, _BROKER),
    # The group coordinator's APIs at Kafka 4.4's ranges (KIP-896 floors: OffsetCommit 2+,
    # OffsetFetch 1+; JoinGroup keeps v0-1); OffsetCommit/OffsetFetch v10 (topics by id,
    # 4.1) are resolved to names at the broker's edge: the group shards see v9.
    _spec(ApiKey.OFFSET_COMMIT, (2, 10), 8, _BROKER),
    _spec(ApiKey.OFFSET_FETCH, (1, 10), 6, _BROKER),
    _spec(ApiKey.FIND_COORDINATOR, (0, 6), 3, _BROKER),
    _spec(ApiKey.JOIN_GROUP, (0, 9), 6, _BROKER),
    _spec(ApiKey.HEARTBEAT, (0, 4), 4, _BROKER),
    _spec(ApiKey.LEAVE_GROUP, (0, 5), 4, _BROKER),
    _spec(ApiKey.SYNC_GROUP, (0, 5), 4, _BROKER),
    _spec(ApiKey.DESCRIBE_GROUPS, (0, 6), 5, _BROKER),
    _spec(ApiKey.LIST_GROUPS, (0, 5), 3, _BROKER),
    _spec(ApiKey.SASL_HANDSHAKE, (0, 1), None, _BOTH),
    # v5 (KIP-1242) names the cluster and node the client means to reach.
    _spec(ApiKey.API_VERSIONS, (0, 5), 3, _BOTH),
    _spec(ApiKey.CREATE_TOPICS, (2, 7), 5, _BOTH),
    _spec(ApiKey.DELETE_TOPICS, (1, 6), 4, _BOTH),
    _spec(ApiKey.DELETE_RECORDS, (0, 2), 2, _BROKER),
    # v6 (KIP-939 two-phase commit) is still latestVersionUnstable in Kafka 4.x: not advertised.
    _spec(ApiKey.INIT_PRODUCER_ID, (0, 5), 2, _BROKER),
    _spec(ApiKey.OFFSET_FOR_LEADER_EPOCH, (2, 4), 4, _BROKER),
    # The transaction coordinator (v4+ of AddPartitionsToTxn: brokers verifying, KIP-890;
    # EndTxn v5: a transaction version 2 client).
    _spec(ApiKey.ADD_PARTITIONS_TO_TXN, (0, 5), 3, _BROKER),
    _spec(ApiKey.ADD_OFFSETS_TO_TXN, (0, 4), 3, _BROKER),
    _spec(ApiKey.END_TXN, (0, 5), 3, _BROKER),
    # The transaction coordinator's markers (v0 removed by KIP-896; v2, KIP-1228, carries
    # the coordinator's transaction version).
    _spec(ApiKey.WRITE_TXN_MARKERS, (1, 2), 1, _BROKER),
    # A transaction's offsets, to the group coordinator (v6, KIP-1319: topics by id).
    _spec(ApiKey.TXN_OFFSET_COMMIT, (0, 6), 3, _BROKER),
    # The ACL APIs from v1 (KIP-896 removed v0 in Kafka 4); v3 adds the USER resource type.
    _spec(ApiKey.DESCRIBE_ACLS, (1, 3), 2, _BOTH),
    _spec(ApiKey.CREATE_ACLS, (1, 3), 2, _BOTH),
    _spec(ApiKey.DELETE_ACLS, (1, 3), 2, _BOTH),
    _spec(ApiKey.DESCRIBE_CONFIGS, (1, 4), 4, _BOTH),
    _spec(ApiKey.ALTER_CONFIGS, (0, 2), 2, _BOTH),
    # Moves between a broker's log directories (v0 removed by KIP-896).
    _spec(ApiKey.ALTER_REPLICA_LOG_DIRS, (1, 2), 2, _BROKER),
    # v5 (KIP-1066, Kafka 4.3) says whether each directory is cordoned.
    _spec(ApiKey.DESCRIBE_LOG_DIRS, (1, 5), 2, _BROKER),
    _spec(ApiKey.SASL_AUTHENTICATE, (0, 2), 2, _BOTH),
    _spec(ApiKey.CREATE_PARTITIONS, (0, 3), 2, _BOTH),
    # Delegation tokens (KIP-48; v0 removed by KIP-896): the controller writes them
    # (brokers forward), brokers describe them from their image; Kafka's schema lists the
    # controller for Describe too, but its controller has no handler.
    _spec(ApiKey.CREATE_DELEGATION_TOKEN, (1, 3), 2, _BOTH),
    _spec(ApiKey.RENEW_DELEGATION_TOKEN, (1, 2), 2, _BOTH),
    _spec(ApiKey.EXPIRE_DELEGATION_TOKEN, (1, 2), 2, _BOTH),
    _spec(ApiKey.DESCRIBE_DELEGATION_TOKEN, (1, 3), 2, _BROKER),
    # v3 adds each result's error message (Kafka sets one only when its streams topology
    # plugin fails to delete a group's topology, GROUP_DELETION_FAILED; pykraft has none)
    _spec(ApiKey.DELETE_GROUPS, (0, 3), 2, _BROKER),
    # Preferred and unclean elections (KIP-460), forwarded by brokers to the controller.
    _spec(ApiKey.ELECT_LEADERS, (0, 2), 2, _BOTH),
    _spec(ApiKey.INCREMENTAL_ALTER_CONFIGS, (0, 1), 1, _BOTH),
    # Reassignment (KIP-455; v1, KIP-860: whether the replication factor may change),
    # forwarded by brokers to the controller.
    _spec(ApiKey.ALTER_PARTITION_REASSIGNMENTS, (0, 1), 0, _BOTH),
    _spec(ApiKey.LIST_PARTITION_REASSIGNMENTS, (0, 0), 0, _BOTH),
    _spec(ApiKey.OFFSET_DELETE, (0, 0), None, _BROKER),
    # Client quotas (KIP-546): Kafka's controller has no DescribeClientQuotas handler, its
    # brokers answer it from their image; AlterClientQuotas is the controller's, forwarded.
    _spec(ApiKey.DESCRIBE_CLIENT_QUOTAS, (0, 1), 1, _BROKER),
    _spec(ApiKey.ALTER_CLIENT_QUOTAS, (0, 1), 1, _BOTH),
    # Kafka's schema lists the controller for Describe too, but its controller has no
    # handler ("Unsupported ApiKey"): brokers answer it from their image.
    _spec(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, (0, 0), 0, _BROKER),
    _spec(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, (0, 0), 0, _BOTH),
    _spec(ApiKey.VOTE, (0, 2), 0, _CONTROLLER),
    _spec(ApiKey.BEGIN_QUORUM_EPOCH, (0, 1), 1, _CONTROLLER),
    _spec(ApiKey.END_QUORUM_EPOCH, (0, 1), 1, _CONTROLLER),
    _spec(ApiKey.DESCRIBE_QUORUM, (0, 2), 0, _BOTH),
    _spec(ApiKey.ALTER_PARTITION, (2, 3), 0, _CONTROLLER),
    _spec(ApiKey.UPDATE_FEATURES, (0, 2), 0, _BOTH),
    # A broker's forwarded admin request with its client's principal (KIP-590).
    _spec(ApiKey.ENVELOPE, (0, 0), 0, _CONTROLLER),
    _spec(ApiKey.FETCH_SNAPSHOT, (0, 1), 0, _CONTROLLER),
    _spec(ApiKey.DESCRIBE_CLUSTER, (0, 2), 0, _BOTH),
    _spec(ApiKey.DESCRIBE_PRODUCERS, (0, 0), 0, _BROKER),
    _spec(ApiKey.BROKER_REGISTRATION, (0, 4), 0, _CONTROLLER),
    _spec(ApiKey.BROKER_HEARTBEAT, (0, 2), 0, _CONTROLLER),
    _spec(ApiKey.UNREGISTER_BROKER, (0, 0), 0, _BOTH),
    _spec(ApiKey.DESCRIBE_TRANSACTIONS, (0, 0), 0, _BROKER),
    # v1 filters by duration, v2 by a transactional id pattern (KIP-1152)
    _spec(ApiKey.LIST_TRANSACTIONS, (0, 2), 0, _BROKER),
    _spec(ApiKey.ALLOCATE_PRODUCER_IDS, (0, 0), 0, _CONTROLLER),
    _spec(ApiKey.CONTROLLER_REGISTRATION, (0, 0), 0, _CONTROLLER),
    _spec(ApiKey.ASSIGN_REPLICAS_TO_DIRS, (0, 0), 0, _CONTROLLER),
    # ListClientMetricsResources at v0; every resource type with configs from v1 (KIP-1142)
    _spec(ApiKey.LIST_CONFIG_RESOURCES, (0, 1), 0, _BROKER),
    # KIP-966: topics' partitions (with ELR) a page at a time, answered from the image
    _spec(ApiKey.DESCRIBE_TOPIC_PARTITIONS, (0, 0), 0, _BROKER),
    _spec(ApiKey.CONSUMER_GROUP_HEARTBEAT, (0, 1), 0, _BROKER),
    _spec(ApiKey.CONSUMER_GROUP_DESCRIBE, (0, 1), 0, _BROKER),
    # Brokers serve the voter-change APIs too and forward them to the controller quorum.
    _spec(ApiKey.ADD_RAFT_VOTER, (0, 1), 0, _BOTH),
    _spec(ApiKey.REMOVE_RAFT_VOTER, (0, 0), 0, _BOTH),
    _spec(ApiKey.UPDATE_RAFT_VOTER, (0, 0), 0, _CONTROLLER),
)

API_SPECS: Mapping[int, ApiSpec] = {spec.key: spec for spec in _SPECS}

def api_spec(api_key: int) -> ApiSpec | None:
    """The spec for ``api_key``, or None if pykraft does not speak that API at all."""
    return API_SPECS.get(api_key)


def specs_for_listener(listener: Listener) -> list[ApiSpec]:
    """APIs a listener serves, ordered by key (the order Kafka advertises them in)."""
    return sorted((s for s in API_SPECS.values() if listener in s.listeners), key=lambda s: s.key)


def all_versions(specs: Iterable[ApiSpec] = API_SPECS.values()) -> list[tuple[ApiKey, int]]:
    """Every (api, version) pair of ``specs``; convenient for exhaustive tests."""
    return [(spec.key, version) for spec in specs for version in spec.versions]
