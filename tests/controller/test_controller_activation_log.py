"""The line a controller logs when it becomes active: Kafka 3.9.1's
``ActivationRecordsGenerator`` texts (at WARN, as Kafka's ``QuorumController`` logs them),
one per activation case, at the activation itself (migration-plan §2, §10)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from controller_harness import Cluster  # type: ignore[import-not-found]
from test_controller_zk_migration import (  # type: ignore[import-not-found]
    MV_3_3_IV3,
    MV_3_5_IV2,
    MV_3_9_IV0,
    migrated,
    migrating,
    register_zk_brokers,
    successor,
    written,
)

from pykraft.controller.activation import activation
from pykraft.controller.migration_ops import BeginMigration
from pykraft.features import METADATA_VERSION_FEATURE
from pykraft.image.features import FeaturesImage, ZkMigrationState
from pykraft.image.image import MetadataImage
from pykraft.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    FeatureLevelRecord,
)

DONE = "Performing controller activation."
EMPTY = f"{DONE} The metadata log appears to be empty. Appending 1 bootstrap record(s) "
SOURCE = "from bootstrap source 'the default bootstrap'."
PRE_MIGRATION = ("Putting the controller into pre-migration mode. No metadata updates will be "
                 "allowed until the ZK metadata has been migrated.")
COMPLETING = ("Completing the ZK migration since this controller was configured with "
              "'zookeeper.metadata.migration.enable' set to 'false'.")
STAYING = ("Staying in ZK migration mode since 'zookeeper.metadata.migration.enable' is still "
           "'true'.")
IGNORING = ("Ignoring 'zookeeper.metadata.migration.enable' value of 'true' since the ZK "
            "migration has been completed.")


def _fresh(mv: int) -> Cluster:
    cluster = Cluster(mv=mv)
    cluster.elect()
    return cluster


def _migrated() -> Cluster:
    cluster = migrating()
    migrated(cluster)
    return cluster


def _finalised() -> Cluster:
    return successor(_migrated(), zk_migration=False)


CASES: dict[str, tuple[Callable[[], object], str]] = {
    "empty log, migration": (
        migrating, f"{EMPTY}in metadata transaction at metadata.version 3.9-IV0 {SOURCE} "
        f"{PRE_MIGRATION}"),
    # pykraft writes no NONE state here (Kafka 4's records), so it logs Kafka 4's line
    "empty log, no migration": (
        lambda: _fresh(MV_3_9_IV0),
        f"{EMPTY}in metadata transaction at metadata.version 3.9-IV0 {SOURCE}"),
    "empty log before metadata transactions": (
        lambda: _fresh(MV_3_5_IV2), f"{EMPTY}at metadata.version 3.5-IV2 {SOURCE}"),
    "KRaft log": (
        lambda: successor(_fresh(MV_3_9_IV0), zk_migration=False),
        f"{DONE} Loaded ZK migration state of NONE. This is expected because this is a "
        "de-novo KRaft cluster."),
    "log before migration support": (
        lambda: successor(_fresh(MV_3_3_IV3), zk_migration=False, mv=MV_3_3_IV3), DONE),
    "pre-migration log": (
        lambda: successor(migrating(), zk_migration=True),
        f"{DONE} Loaded ZK migration state of PRE_MIGRATION."),
    "migrated log, no migration": (
        _finalised, f"{DONE} Loaded ZK migration state of MIGRATION. {COMPLETING}"),
    "migrated log, migration": (
        lambda: successor(_migrated(), zk_migration=True),
        f"{DONE} Loaded ZK migration state of MIGRATION. {STAYING}"),
    "finalised log, migration": (
        lambda: successor(_finalised(), zk_migration=True),
        f"{DONE} Loaded ZK migration state of POST_MIGRATION. {IGNORING}"),
    "finalised log, no migration": (
        lambda: successor(_finalised(), zk_migration=False),
        f"{DONE} Loaded ZK migration state of POST_MIGRATION."),
}


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.getMessage().startswith(DONE) and r.levelno == logging.WARNING]


@pytest.mark.parametrize("case", list(CASES))
def test_each_activation_logs_kafkas_line(case: str,
                                          caplog: pytest.LogCaptureFixture) -> None:
    make, expected = CASES[case]
    with caplog.at_level(logging.WARNING, logger="pykraft.controller.quorum_controller"):
        make()
    assert _lines(caplog)[-1] == expected  # the last controller made became active last


def test_a_load_left_open_is_named_by_the_offset_of_its_begin(
        caplog: pytest.LogCaptureFixture) -> None:
    first = migrating()
    register_zk_brokers(first)
    begin = written(first, BeginMigration()).offset
    with caplog.at_level(logging.WARNING, logger="pykraft.controller.quorum_controller"):
        successor(first, zk_migration=True)
    assert _lines(caplog)[-1] == (f"{DONE} Aborting in-progress metadata transaction at "
                                  f"offset {begin}. Loaded ZK migration state of PRE_MIGRATION.")


def test_a_partial_bootstrap_is_re_appended_and_an_old_pre_migration_log_is_flagged() -> None:
    mv = FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=MV_3_9_IV0)
    partial = activation(MetadataImage(), transaction_start_offset=3, bootstrap=(mv,),
                         min_insync_replicas=1, zk_migration_enabled=True)
    assert partial.records[:2] == [AbortTransactionRecord(reason="Controller failover"),
                                   BeginTransactionRecord(name="Bootstrap records")]
    assert partial.message == (
        f"{DONE} Aborting partial bootstrap records transaction at offset 3. Re-appending 1 "
        f"bootstrap record(s) in new metadata transaction at metadata.version 3.9-IV0 {SOURCE} "
        f"{PRE_MIGRATION}")
    old = MetadataImage(features=FeaturesImage(
        finalized={METADATA_VERSION_FEATURE: MV_3_5_IV2},
        zk_migration_state=ZkMigrationState.PRE_MIGRATION))
    flagged = activation(old, transaction_start_offset=-1, bootstrap=(mv,),
                         min_insync_replicas=1, zk_migration_enabled=True)
    assert flagged.records == []
    assert flagged.message == (
        f"{DONE} Loaded ZK migration state of PRE_MIGRATION. Activating pre-migration "
        "controller without empty log. There may be a partial migration.")
