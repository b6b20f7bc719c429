"""Kafka's finalized features: ``metadata.version`` levels and ``kraft.version``.

``metadata.version`` is stored in the log as a FeatureLevelRecord; it decides which record
versions a controller may write. ``kraft.version`` is not a FeatureLevelRecord but a control
record (KRaftVersionRecord): level 1 enables dynamic quorums (KIP-853) and needs
metadata.version 3.9-IV0 or later.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pykraft.errors import ConfigError

METADATA_VERSION_FEATURE = "metadata.version"
KRAFT_VERSION_FEATURE = "kraft.version"
ELIGIBLE_LEADER_REPLICAS_FEATURE = "eligible.leader.replicas.version"
TRANSACTION_VERSION_FEATURE = "transaction.version"


@dataclass(frozen=True, slots=True, order=True)
class MetadataVersion:
    """One ``metadata.version``: its feature level and Kafka's release name (e.g. 3.7-IV4)."""

    level: int
    name: str

    @property
    def release(self) -> str:
        return self.name.partition("-")[0]


# Feature levels of Kafka's MetadataVersion enum, 3.0-IV1 (1) to 4.2-IV1 (29).
METADATA_VERSIONS: tuple[MetadataVersion, ...] = tuple(
    MetadataVersion(level, name)
    for level, name in enumerate(
        (
            "3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3",
            "3.4-IV0", "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
            "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0",
            "4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1", "4.2-IV0",
            "4.2-IV1",
        ),
        start=1,
    )
)
# Levels Kafka 4.4 defines past pykraft's newest (IBP_4_3_IV0 .. IBP_4_5_IV0, 4.5-IV0 not yet
# for production): named only, so that a metadata log Kafka 4.4 wrote (metadata.version
# 4.4-IV2 by default) can be read and the tools name a Kafka node's levels as Kafka's own do
# (``kafka-features.sh describe`` prints 4.4-IV2); pykraft neither supports nor finalizes them.
_NEWER_KAFKA_LEVELS = ("4.3-IV0", "4.4-IV0", "4.4-IV1", "4.4-IV2", "4.5-IV0")
_BY_LEVEL = {
    mv.level: mv
    for mv in (*METADATA_VERSIONS,
               *(MetadataVersion(level, name) for level, name in
                 enumerate(_NEWER_KAFKA_LEVELS, start=METADATA_VERSIONS[-1].level + 1)))
}

MINIMUM_METADATA_VERSION = _BY_LEVEL[7]  # 3.3-IV3, the oldest Kafka 4.x still accepts
DYNAMIC_QUORUM_METADATA_VERSION = _BY_LEVEL[21]  # 3.9-IV0: KIP-853 needs it
# The default for new clusters: the first level with dynamic quorums, which every Kafka from
# 3.9 on understands.
DEFAULT_METADATA_VERSION = DYNAMIC_QUORUM_METADATA_VERSION

#: The features this software implements, name -> (min, max) level: what every node
#: registers and ApiVersions advertises, and the levels UpdateFeatures may set.
#: transaction.version 1 and 2 (KIP-890): the partition leaders verify transactions with
#: their coordinator, and at 2 clients let the leaders add partitions and the coordinator
#: bumps the producer epoch at each transaction's end; the finalized level picks the
#: coordinator's record format and its own aborts' markers, each request's version the
#: client's protocol (Kafka's TransactionVersion). group.version stays out: its
#: coordinator serves KIP-848 (ConsumerGroupHeartbeat) at every level, where Kafka answers
#: UNSUPPORTED_VERSION below group.version 1. A cluster can only remove it (level 0 is in
#: every range, as in Kafka).
#: eligible.leader.replicas.version 1 (KIP-966): the controller keeps eligible leader
#: replicas and elects from them when the ISR is empty.
SUPPORTED_FEATURES: Mapping[str, tuple[int, int]] = {
    ELIGIBLE_LEADER_REPLICAS_FEATURE: (0, 1),
    KRAFT_VERSION_FEATURE: (0, 1),
    METADATA_VERSION_FEATURE: (MINIMUM_METADATA_VERSION.level, METADATA_VERSIONS[-1].level),
    TRANSACTION_VERSION_FEATURE: (0, 2),
}
#: Per feature finalized at format besides metadata.version and kraft.version: the level
#: Kafka's formatter gives it by default, from the first metadata.version with each level
#: (Kafka's ``FeatureVersion.bootstrapMetadataVersion``; transaction.version 1 and 2 both
#: from 4.0-IV2).
def _level_of(name: str) -> int:
    return next(mv.level for mv in METADATA_VERSIONS if mv.name == name)


FORMAT_DEFAULTS: Mapping[str, tuple[tuple[int, int], ...]] = {
    ELIGIBLE_LEADER_REPLICAS_FEATURE: ((_level_of("4.1-IV0"), 1),),
    TRANSACTION_VERSION_FEATURE: ((_level_of("4.0-IV2"), 2),),
}
#: Per feature level, the metadata.version it needs (Kafka's ``FeatureVersion
#: .dependencies``): eligible leader replicas need 4.0-IV1's records (their fields).
METADATA_VERSION_NEEDED: Mapping[tuple[str, int], int] = {
    (ELIGIBLE_LEADER_REPLICAS_FEATURE, 1): _level_of("4.0-IV1"),
}


def dependency_problem(name: str, level: int, metadata_version: int) -> str | None:
    """Why ``name`` may not be at ``level`` with that metadata.version level, in Kafka's
    words (``Feature.validateVersion``); None if it may."""
    needed = METADATA_VERSION_NEEDED.get((name, level))
    if needed is None or metadata_version >= needed:
        return None
    return (f"{name} could not be set to {level} because it depends on "
            f"{METADATA_VERSION_FEATURE} level {needed}")


def default_feature_level(name: str, release: MetadataVersion) -> int:
    """The level ``name`` is formatted at when not given (0: not finalized)."""
    return max((level for since, level in FORMAT_DEFAULTS.get(name, ())
                if release.level >= since), default=0)


def metadata_version_for_level(level: int) -> MetadataVersion:
    try:
        return _BY_LEVEL[level]
    except KeyError:
        raise ConfigError(f"unknown metadata.version feature level {level}") from None


def kafka_metadata_version_name(level: int) -> str | None:
    """Kafka's release name of a ``metadata.version`` level, whether this software supports
    it or not; None for a level Kafka 4.4 does not know either."""
    found = _BY_LEVEL.get(level)
    return None if found is None else found.name


def parse_release_version(text: str) -> MetadataVersion:
    """Accept ``3.7-IV4``, or a release ``3.7`` meaning its latest level (Kafka's rule)."""
    wanted = text.strip()
    matches = [mv for mv in METADATA_VERSIONS if wanted in (mv.name, mv.release)]
    if not matches:
        known = ", ".join(mv.name for mv in METADATA_VERSIONS)
        raise ConfigError(f"unknown release version {text!r}; known versions: {known}")
    chosen = max(matches)
    if chosen < MINIMUM_METADATA_VERSION:
        raise ConfigError(
            f"release version {chosen.name} is older than the minimum "
            f"{MINIMUM_METADATA_VERSION.name}"
        )
    return chosen
