"""Records a controller writes when it becomes active (Kafka's ActivationRecordsGenerator).

On an empty log: the bootstrap records (metadata.version first, then other features by
name, then anything else from ``bootstrap.checkpoint``), wrapped in Begin/EndTransaction
when that metadata.version has metadata transactions. A transaction left open by the
previous controller is aborted first; if it was the bootstrap, the bootstrap is re-appended.
"""

from __future__ import annotations

from collections.abc import Sequence

from pykraft.errors import ConfigError
from pykraft.features import DEFAULT_METADATA_VERSION, METADATA_VERSION_FEATURE
from pykraft.image.image import MetadataImage
from pykraft.image.versions import MV_3_6_IV1
from pykraft.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
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


def activation_records(committed: MetadataImage, *, in_transaction: bool,
                       bootstrap: Sequence[object]) -> list[object]:
    records: list[object] = []
    if in_transaction:
        records.append(AbortTransactionRecord(reason="Controller failover"))
    if committed.features.metadata_version is None:
        level, ordered = ordered_bootstrap(bootstrap)
        if level >= MV_3_6_IV1:
            ordered = [BeginTransactionRecord(name="Bootstrap records"), *ordered,
                       EndTransactionRecord()]
        records += ordered
    return records
