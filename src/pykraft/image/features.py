"""Finalized feature levels (FeatureLevelRecord; level 0 removes a feature) and the ZooKeeper
migration state (ZkMigrationStateRecord, KIP-866), which Kafka keeps in the features image."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pykraft.errors import MetadataImageError
from pykraft.features import METADATA_VERSION_FEATURE, MINIMUM_METADATA_VERSION
from pykraft.image.versions import MV_3_4_IV0
from pykraft.records.metadata import FeatureLevelRecord, ZkMigrationStateRecord


class ZkMigrationState(enum.IntEnum):
    """Kafka's ``ZkMigrationState``: the byte of ZkMigrationStateRecord."""

    NONE = 0
    """A cluster created in KRaft mode (or an image without the record)."""
    MIGRATION = 1
    """The ZooKeeper metadata was loaded: the controllers dual-write to ZooKeeper."""
    PRE_MIGRATION = 2
    """Migration enabled, the load not yet committed: only the migration writes."""
    POST_MIGRATION = 3
    """Finalised: a controller without migration became active after MIGRATION."""
    ZK = 4
    """Never written: the state a ZooKeeper-mode broker reports."""

    @property
    def in_progress(self) -> bool:
        """Kafka's ``inProgress``: metadata.version changes are refused meanwhile."""
        return self in (ZkMigrationState.PRE_MIGRATION, ZkMigrationState.MIGRATION)


@dataclass(frozen=True, slots=True)
class FeaturesImage:
    finalized: Mapping[str, int] = dataclasses.field(default_factory=dict)
    epoch: int = dataclasses.field(default=-1, compare=False)
    """The last offset of the image that last changed them: ApiVersions'
    finalized_features_epoch on a controller (Kafka's FeaturesPublisher)."""
    zk_migration_state: ZkMigrationState = ZkMigrationState.NONE

    @property
    def metadata_version(self) -> int | None:
        return self.finalized.get(METADATA_VERSION_FEATURE)

    def records(self) -> Iterator[tuple[object, int]]:
        """metadata.version first (a reader needs it to read the rest), then by name; then
        the migration state, as Kafka 3.9's FeaturesImage writes it, but only when it is not
        NONE: Kafka 4 writes none, and NONE is what a reader assumes without one."""
        names = sorted(self.finalized, key=lambda name: (name != METADATA_VERSION_FEATURE, name))
        for name in names:
            yield FeatureLevelRecord(name=name, feature_level=self.finalized[name]), 0
        mv = self.metadata_version or MINIMUM_METADATA_VERSION.level
        if self.zk_migration_state != ZkMigrationState.NONE and mv >= MV_3_4_IV0:
            yield ZkMigrationStateRecord(zk_migration_state=self.zk_migration_state), 0


class FeaturesDelta:
    def __init__(self, image: FeaturesImage) -> None:
        self._finalized = dict(image.finalized)
        self._zk_migration_state = image.zk_migration_state

    def replay(self, record: FeatureLevelRecord | ZkMigrationStateRecord) -> None:
        if isinstance(record, ZkMigrationStateRecord):
            try:
                self._zk_migration_state = ZkMigrationState(record.zk_migration_state)
            except ValueError:
                raise MetadataImageError("Unsupported ZkMigrationState value "
                                         f"{record.zk_migration_state}") from None
        elif record.feature_level == 0:
            self._finalized.pop(record.name, None)
        else:
            self._finalized[record.name] = record.feature_level

    def apply(self, epoch: int = -1) -> FeaturesImage:
        return FeaturesImage(dict(self._finalized), epoch, self._zk_migration_state)
