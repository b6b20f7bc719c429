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

Each activation also gives Kafka's one log line saying what it did ("Performing controller
activation. ..."), which Kafka's QuorumController logs at WARN: Kafka 3.9's texts, but on an
empty log without migration Kafka 4's (pykraft writes no NONE state there, so it does not say
it sets one). A log without a metadata.version record is an empty log here (Kafka reads it as
3.0-IV1, older than pykraft supports), so Kafka's "No metadata.version feature level record
was found in the log" has no case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
DEFAULT_BOOTSTRAP_SOURCE = "the default bootstrap"
"""Kafka's name of the bootstrap without a ``bootstrap.checkpoint`` (the activation line
names its source)."""


def bootstrap_file_source(path: object) -> str:
    """Kafka's name of a bootstrap read from ``bootstrap.checkpoint`` at ``path``."""
    return f"the binary bootstrap metadata file: {path}"


@dataclass(frozen=True, slots=True)
class Activation:
    """What a controller writes when it becomes active, and the line it logs."""

    records: list[object]
    message: str


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


def activation(committed: MetadataImage, *, transaction_start_offset: int,
               bootstrap: Sequence[object], min_insync_replicas: int,
               bootstrap_source: str = DEFAULT_BOOTSTRAP_SOURCE,
               zk_migration_enabled: bool = False) -> Activation:
    """``transaction_start_offset``: the offset of the committed log's open
    BeginTransactionRecord, -1 without one; ``min_insync_replicas``: the controller's static
    value (the cluster default written with ELR on). Raises :class:`ControllerError` where
    Kafka's controller cannot activate."""
    said = ["Performing controller activation."]
    records: list[object] = []
    if transaction_start_offset >= 0:
        records.append(AbortTransactionRecord(reason="Controller failover"))
    if committed.features.metadata_version is None:
        records += _bootstrap(transaction_start_offset, bootstrap, bootstrap_source,
                              min_insync_replicas, zk_migration_enabled, said)
    else:
        if transaction_start_offset >= 0:
            said.append("Aborting in-progress metadata transaction at offset "
                        f"{transaction_start_offset}.")
        records += _migration_state_change(committed, zk_migration_enabled, said)
    return Activation(records, " ".join(said))


def _bootstrap(transaction_start_offset: int, bootstrap: Sequence[object], source: str,
               min_insync_replicas: int, zk_migration_enabled: bool,
               said: list[str]) -> list[object]:
    """Kafka's recordsForEmptyLog: the bootstrap records (re-appended after a partial
    bootstrap transaction, which the caller aborts)."""
    level, ordered = ordered_bootstrap(bootstrap)
    transactional = level >= MV_3_6_IV1
    version = f"at metadata.version {metadata_version_for_level(level).name} from bootstrap " \
              f"source '{source}'."
    if transaction_start_offset >= 0:
        said.append(f"Aborting partial bootstrap records transaction at offset "
                    f"{transaction_start_offset}. Re-appending {len(bootstrap)} bootstrap "
                    f"record(s) in new metadata transaction {version}")
    else:
        said.append(f"The metadata log appears to be empty. Appending {len(bootstrap)} "
                    f"bootstrap record(s) {'in metadata transaction ' if transactional else ''}"
                    f"{version}")
    if _elr_enabled(bootstrap):
        ordered.append(ConfigRecord(
            resource_type=ConfigResourceType.BROKER, resource_name="",
            name=MIN_INSYNC_REPLICAS, value=str(min_insync_replicas),
        ))
    if zk_migration_enabled:
        if not transactional:
            raise ControllerError(
                f"The bootstrap metadata.version {metadata_version_for_level(level).name} "
                "does not support ZK migrations. Cannot continue with ZK migrations "
                "enabled.")
        said.append("Putting the controller into pre-migration mode. No metadata updates "
                    "will be allowed until the ZK metadata has been migrated.")
        ordered.append(ZkMigrationStateRecord(
            zk_migration_state=ZkMigrationState.PRE_MIGRATION))
    if transactional:
        ordered = [BeginTransactionRecord(name="Bootstrap records"), *ordered,
                   EndTransactionRecord()]
    return ordered


def _migration_state_change(committed: MetadataImage, zk_migration_enabled: bool,
                            said: list[str]) -> list[object]:
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
    said.append(f"Loaded ZK migration state of {state.name}.")
    if state == ZkMigrationState.NONE:
        if zk_migration_enabled:
            raise ControllerError("Should not have ZK migrations enabled on a cluster that was "
                                  "created in KRaft mode.")
        said.append("This is expected because this is a de-novo KRaft cluster.")
    elif state == ZkMigrationState.PRE_MIGRATION:
        if mv < MV_3_6_IV1:
            said.append("Activating pre-migration controller without empty log. There may be "
                        "a partial migration.")
    elif state == ZkMigrationState.MIGRATION:
        if not zk_migration_enabled:
            said.append("Completing the ZK migration since this controller was configured "
                        "with 'zookeeper.metadata.migration.enable' set to 'false'.")
            return [ZkMigrationStateRecord(zk_migration_state=ZkMigrationState.POST_MIGRATION)]
        said.append("Staying in ZK migration mode since 'zookeeper.metadata.migration.enable' "
                    "is still 'true'.")
    elif zk_migration_enabled:  # POST_MIGRATION
        said.append("Ignoring 'zookeeper.metadata.migration.enable' value of 'true' since the "
                    "ZK migration has been completed.")
    return []
