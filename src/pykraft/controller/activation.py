"""Records a controller writes when it becomes active (Kafka's ActivationRecordsGenerator).

On an empty log: the bootstrap records (metadata.version first, then other features by
name, then anything else from ``bootstrap.checkpoint``), wrapped in Begin/EndTransaction
when that metadata.version has metadata transactions. A transaction left open by the
previous controller is aborted first; if it was the bootstrap, the bootstrap is re-appended.

With eligible leader replicas on (KIP-966: the bootstrap's eligible.leader.replicas.version
above 0) the bootstrap ends with the cluster default ``min.insync.replicas``: a BROKER
ConfigRecord named "" holding the controller's static value, as Kafka's
ActivationRecordsGenerator.recordsForEmptyLog writes it, so that ELR's safety rule reads one
cluster-wide value (topics then show it as DYNAMIC_DEFAULT_BROKER_CONFIG).

ZooKeeper migration (KIP-866, Kafka 3.9's rules, migration-plan §2): a controller with
``zookeeper.metadata.migration.enable`` ends an empty log's bootstrap with the PRE_MIGRATION
state; without it nothing is written (Kafka 3.9 wrote NONE, Kafka 4 writes nothing, and NONE
is what a log without the record means). On a non-empty log, a controller without migration
finalises a log in MIGRATION (POST_MIGRATION).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pykraft.controller.config_control import MIN_INSYNC_REPLICAS
from pykraft.errors import ConfigError, ControllerError
from pykraft.features import (
    DEFAULT_METADATA_VERSION,
    ELIGIBLE_LEADER_REPLICAS_FEATURE,
    METADATA_VERSION_FEATURE,
    metadata_version_for_level,
)
from pykraft.image.configs import ConfigResourceType
from pykraft.image.features import ZkMigrationState
from pykraft.image.image import MetadataImage
from pykraft.image.versions import MV_3_4_IV0, MV_3_6_IV1
from pykraft.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    ConfigRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    ZkMigrationStateRecord,
)

DEFAULT_BOOTSTRAP: tuple[object, ...] = (
    FeatureLevelRecord(name=METADATA_VERSION_FEATURE,
                       feature_level=DEFAULT_METADATA_VERSION.level),
)


def ordered_bootstrap(records: Sequence[object]) -> tuple[int, list[object]]:
    """(metadata.version level, records in write order): metadata.version first, other
    features with a level > 0 by name, then the rest."""
    features = [r for r in records if isinstance(r, FeatureLevelRecord)]
    mv = [r for r in features if r.name == METADATA_VERSION_FEATURE]
    if len(mv) != 1:
        raise ConfigError("bootstrap records must hold exactly one metadata.version level")
    others = sorted((r for r in features if r is not mv[0] and r.feature_level > 0),
                    key=lambda r: r.name)
    rest = [r for r in records if not isinstance(r, FeatureLevelRecord)]
    return mv[0].feature_level, [mv[0], *others, *rest]


_MIN_INSYNC_REPLICAS_DEFAULT = "1"


def static_min_insync_replicas(properties: Mapping[str, str]) -> int:
    """The controller's own ``min.insync.replicas`` (its properties file, else Kafka's
    default 1), parsed as Kafka's ConfigDef parses an INT."""
    text = properties.get(MIN_INSYNC_REPLICAS, _MIN_INSYNC_REPLICAS_DEFAULT).strip()
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"Invalid value {text} for configuration {MIN_INSYNC_REPLICAS}: "
                          "Not a number of type INT") from None


def _elr_enabled(bootstrap: Sequence[object]) -> bool:
    return any(isinstance(r, FeatureLevelRecord) and r.name == ELIGIBLE_LEADER_REPLICAS_FEATURE
               and r.feature_level > 0 for r in bootstrap)


def activation_records(committed: MetadataImage, *, in_transaction: bool,
                       bootstrap: Sequence[object], min_insync_replicas: int,
                       zk_migration_enabled: bool = False) -> list[object]:
    """``min_insync_replicas``: the controller's static value (the cluster default written
    with ELR on). Raises :class:`ControllerError` where Kafka's controller cannot activate."""
    records: list[object] = []
    if in_transaction:
        records.append(AbortTransactionRecord(reason="Controller failover"))
    if committed.features.metadata_version is None:
        level, ordered = ordered_bootstrap(bootstrap)
        if _elr_enabled(bootstrap):
            ordered.append(ConfigRecord(
                resource_type=ConfigResourceType.BROKER, resource_name="",
                name=MIN_INSYNC_REPLICAS, value=str(min_insync_replicas),
            ))
        if zk_migration_enabled:
            if level < MV_3_6_IV1:
                raise ControllerError(
                    f"The bootstrap metadata.version {metadata_version_for_level(level).name} "
                    "does not support ZK migrations. Cannot continue with ZK migrations "
                    "enabled.")
            ordered.append(ZkMigrationStateRecord(
                zk_migration_state=ZkMigrationState.PRE_MIGRATION))
        if level >= MV_3_6_IV1:
            ordered = [BeginTransactionRecord(name="Bootstrap records"), *ordered,
                       EndTransactionRecord()]
        records += ordered
    else:
        records += _migration_state_change(committed, zk_migration_enabled)
    return records


def _migration_state_change(committed: MetadataImage, zk_migration_enabled: bool
                            ) -> list[object]:
    """Kafka 3.9's recordsForNonEmptyLog: a log in MIGRATION activated by a controller
    without migration is finalised (POST_MIGRATION); migration on a log created in KRaft
    mode, or at a metadata.version without migration, is refused."""
    mv = committed.metadata_version
    state = committed.features.zk_migration_state
    if mv < MV_3_4_IV0:
        if zk_migration_enabled:
            raise ControllerError("Should not have ZK migrations enabled on a cluster running "
                                  f"metadata.version {metadata_version_for_level(mv).name}")
        return []
    if state == ZkMigrationState.NONE and zk_migration_enabled:
        raise ControllerError("Should not have ZK migrations enabled on a cluster that was "
                              "created in KRaft mode.")
    if state == ZkMigrationState.MIGRATION and not zk_migration_enabled:
        return [ZkMigrationStateRecord(zk_migration_state=ZkMigrationState.POST_MIGRATION)]
    return []
