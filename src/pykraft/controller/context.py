"""What every controller operation sees and returns.

An operation is a pure function of a :class:`ControllerContext` (the current image, which
includes records appended but not yet committed, plus the controller's soft state) and a
request; it returns a :class:`ControllerResult`: the records to append and the response to
release once they commit. Nothing is written or answered by the operation itself.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pykraft.config.authorizer import authorizer_config
from pykraft.config.delegation_tokens import TokenConfig, token_config
from pykraft.errors import ConfigError
from pykraft.ids import ZERO_UUID
from pykraft.image.client_quotas import literal_ip
from pykraft.image.cluster_image import BrokerRegistration
from pykraft.image.image import MetadataImage
from pykraft.image.snapshot import (
    DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS,
    DEFAULT_MAX_SNAPSHOT_INTERVAL_MS,
    SnapshotPolicy,
)
from pykraft.quota.mutation import UNBOUNDED, MutationQuota

PRODUCER_ID_BLOCK_SIZE = 1000
MAX_RECORDS_PER_USER_OP = 10_000  # Kafka's QuorumController.MAX_RECORDS_PER_USER_OP
#: Kafka's answer to an operation whose records would pass MAX_RECORDS_PER_USER_OP (its
#: BoundedListTooLongException, a POLICY_VIOLATION for every part of the request).
TOO_LARGE_MESSAGE = "Unable to perform excessively large batch operation."
UNCLEAN_ELECTION_INTERVAL_MS = 300_000  # unclean.leader.election.interval.ms (internal)
LEADER_IMBALANCE_CHECK_INTERVAL_S = 300  # leader.imbalance.check.interval.seconds
NO_OFFSET_BOUND = 2**63 - 1
#: Kafka's DirectoryId.UNASSIGNED: the broker picks the directory, then says which.
UNASSIGNED_DIR = uuid.UUID(int=1)


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """The controller's settings (Kafka config keys in the field docs)."""

    node_id: int
    cluster_id: str | None = None
    session_timeout_ms: int = 9000  # broker.session.timeout.ms
    max_idle_interval_ms: int = 500  # metadata.max.idle.interval.ms (0 disables NoOps)
    default_num_partitions: int = 1  # num.partitions
    default_replication_factor: int = 1  # default.replication.factor
    # metadata.log.max.record.bytes.between.snapshots and metadata.log.max.snapshot.interval.ms:
    # they apply to the node's one snapshot generator (a broker-only node's too, as in Kafka's
    # SharedServer), which is why a broker reads them here.
    max_bytes_between_snapshots: int = DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS
    max_snapshot_interval_ms: int = DEFAULT_MAX_SNAPSHOT_INTERVAL_MS
    # pykraft.broker.fence.on.refused.connection.enable (pykraft's own): a broker whose
    # listeners refuse connections is fenced at once instead of at its session's expiry
    fence_on_refused_connection: bool = True
    broker_heartbeat_interval_ms: int = 2000  # broker.heartbeat.interval.ms
    mutation_quota_samples: int = 11  # controller.quota.window.num
    mutation_quota_window_s: int = 1  # controller.quota.window.size.seconds
    zk_migration_enabled: bool = False  # zookeeper.metadata.migration.enable (KIP-866)
    zk_migration_min_batch_size: int = 200  # zookeeper.metadata.migration.min.batch.size
    # inter.broker.listener.name (else security.inter.broker.protocol's name): the listener a
    # migrating ZooKeeper broker must register, which the legacy RPCs go to
    inter_broker_listener_name: str = "PLAINTEXT"
    # the static properties the node started from: DescribeConfigs' STATIC_BROKER_CONFIG
    properties: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.session_timeout_ms < 1:
            raise ConfigError("broker.session.timeout.ms must be >= 1")
        if self.broker_heartbeat_interval_ms < 1:
            raise ConfigError("broker.heartbeat.interval.ms must be >= 1")
        if self.max_idle_interval_ms < 0:
            raise ConfigError("metadata.max.idle.interval.ms must be >= 0")
        if self.default_num_partitions < 1:
            raise ConfigError("num.partitions must be >= 1")
        if self.default_replication_factor < 1:
            raise ConfigError("default.replication.factor must be >= 1")
        if self.mutation_quota_samples < 1 or self.mutation_quota_window_s < 1:
            raise ConfigError("controller.quota.window.num and "
                              "controller.quota.window.size.seconds must be >= 1")
        if self.zk_migration_min_batch_size < 1:
            raise ConfigError("zookeeper.metadata.migration.min.batch.size must be >= 1")
        self.snapshot_policy()  # refuse bad thresholds now, not at the first commit
        authorizer_config(self.properties)  # and an authorizer pykraft does not have
        token_config(self.properties)  # and token durations Kafka would refuse
        try:
            interval = self.unclean_election_interval_ms
        except ValueError:
            interval = 0
        if interval < 1:
            raise ConfigError("unclean.leader.election.interval.ms must be an integer >= 1")
        try:
            check = self.leader_imbalance_check_interval_ms
        except ValueError:
            check = 0
        if check < 1:
            raise ConfigError("leader.imbalance.check.interval.seconds must be an integer >= 1")

    @property
    def unclean_election_interval_ms(self) -> int:
        """How often leaderless partitions of topics allowing unclean elections get one."""
        return int(self.properties.get("unclean.leader.election.interval.ms",
                                       UNCLEAN_ELECTION_INTERVAL_MS))

    @property
    def auto_leader_rebalance(self) -> bool:
        """``auto.leader.rebalance.enable``: leadership moves back to preferred replicas."""
        return self.properties.get("auto.leader.rebalance.enable",
                                   "true").strip().lower() == "true"

    @property
    def delete_topic_enable(self) -> bool:
        """``delete.topic.enable``: DeleteTopics refused when false (a read-only config)."""
        return self.properties.get("delete.topic.enable", "true").strip().lower() == "true"

    @property
    def leader_imbalance_check_interval_ms(self) -> int:
        """``leader.imbalance.check.interval.seconds``, in ms: how long an imbalance waits
        for the rebalance."""
        return 1000 * int(self.properties.get("leader.imbalance.check.interval.seconds",
                                              LEADER_IMBALANCE_CHECK_INTERVAL_S))

    @property
    def tokens(self) -> TokenConfig:
        """The ``delegation.token.*`` settings (tokens are off without a secret key)."""
        return token_config(self.properties)

    def snapshot_policy(self) -> SnapshotPolicy:
        """A fresh policy with this node's snapshot thresholds."""
        return SnapshotPolicy(self.max_bytes_between_snapshots, self.max_snapshot_interval_ms)


@dataclass(frozen=True, slots=True)
class ControllerResult:
    records: tuple[object, ...]
    response: object


@dataclass(frozen=True, slots=True)
class ControllerContext:
    config: ControllerConfig
    image: MetadataImage
    next_offset: int
    now_ms: int
    rng: random.Random
    registration_offsets: Mapping[int, int] = field(default_factory=dict)
    """Broker id -> offset of its latest RegisterBrokerRecord (the unfence threshold)."""
    session_expired: frozenset[int] = frozenset()
    """Registered brokers whose heartbeat session has lapsed (or never started)."""
    shutdown_offsets: Mapping[int, int] = field(default_factory=dict)
    """Broker id -> controlled shutdown offset: the end of the records that began its
    controlled shutdown (Kafka's BrokerHeartbeatManager soft state, lost on failover)."""
    metadata_offsets: Mapping[int, int] = field(default_factory=dict)
    """Broker id -> the metadata offset its latest heartbeat reported."""
    ip_resolves: Callable[[str], bool] = literal_ip
    """Whether an ip quota entity's name is an address (a literal, or a host name the
    driver resolves: the controller itself does no I/O)."""
    mutation_quota: MutationQuota = UNBOUNDED
    """The controller mutation quota of the request being handled (KIP-599), which
    CreateTopics, CreatePartitions and DeleteTopics charge per topic."""

    def lowest_active_offset(self) -> int:
        """The lowest metadata offset of the active brokers (unfenced, not shutting down);
        one that has not heartbeated to this controller yet counts as -1."""
        return min((self.metadata_offsets.get(b.broker_id, -1)
                    for b in self.image.cluster.brokers.values()
                    if not b.fenced and b.broker_id not in self.shutdown_offsets),
                   default=NO_OFFSET_BOUND)

    @property
    def metadata_version(self) -> int:
        return self.image.metadata_version

    def default_dir(self, broker_id: int) -> uuid.UUID:
        """Kafka's ``ClusterControlManager.defaultDir``: a broker's only log directory, so a
        broker with one directory has nothing to send AssignReplicasToDirs about; UNASSIGNED
        when it has several (or is not registered), MIGRATING when it named none."""
        registration = self.image.cluster.brokers.get(broker_id)
        if registration is None:
            return UNASSIGNED_DIR
        if not registration.log_dirs:
            return ZERO_UUID  # DirectoryId.MIGRATING
        return registration.log_dirs[0] if len(registration.log_dirs) == 1 else UNASSIGNED_DIR

    def usable(self, broker_id: int) -> bool:
        """May lead or join an ISR: registered, unfenced, not in controlled shutdown."""
        broker = self.image.cluster.brokers.get(broker_id)
        return is_usable(broker)


def is_usable(broker: BrokerRegistration | None) -> bool:
    return broker is not None and not broker.fenced and not broker.in_controlled_shutdown
