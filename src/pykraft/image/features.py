"""Finalized feature levels (FeatureLevelRecord); level 0 removes a feature."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pykraft.features import METADATA_VERSION_FEATURE
from pykraft.records.metadata import FeatureLevelRecord


@dataclass(frozen=True, slots=True)
class FeaturesImage:
    finalized: Mapping[str, int] = dataclasses.field(default_factory=dict)
    epoch: int = dataclasses.field(default=-1, compare=False)
    """The last offset of the image that last changed them: ApiVersions'
    finalized_features_epoch on a controller (Kafka's FeaturesPublisher)."""

    @property
    def metadata_version(self) -> int | None:
        return self.finalized.get(METADATA_VERSION_FEATURE)

    def records(self) -> Iterator[tuple[object, int]]:
        """metadata.version first (a reader needs it to read the rest), then by name."""
        names = sorted(self.finalized, key=lambda name: (name != METADATA_VERSION_FEATURE, name))
        for name in names:
            yield FeatureLevelRecord(name=name, feature_level=self.finalized[name]), 0


class FeaturesDelta:
    def __init__(self, image: FeaturesImage) -> None:
        self._finalized = dict(image.finalized)

    def replay(self, record: FeatureLevelRecord) -> None:
        if record.feature_level == 0:
            self._finalized.pop(record.name, None)
        else:
            self._finalized[record.name] = record.feature_level

    def apply(self, epoch: int = -1) -> FeaturesImage:
        return FeaturesImage(dict(self._finalized), epoch)
