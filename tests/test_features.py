import pytest

from pykraft.errors import ConfigError
from pykraft.features import (
    DEFAULT_METADATA_VERSION,
    METADATA_VERSION_FEATURE,
    SUPPORTED_FEATURES,
    metadata_version_for_level,
    parse_release_version,
)


def test_levels_match_kafka() -> None:
    assert metadata_version_for_level(19).name == "3.7-IV4"  # what Kafka 3.7 formats with
    assert metadata_version_for_level(21).name == "3.9-IV0"
    assert metadata_version_for_level(25).name == "4.0-IV3"
    assert DEFAULT_METADATA_VERSION.level == 21


def test_kafka_4_4s_newer_levels_are_named_but_not_supported() -> None:
    """A log Kafka 4.4 wrote finalizes 4.4-IV2 (33): pykraft's tools name it; pykraft's nodes
    still support up to 4.2-IV1 and format no newer release."""
    assert metadata_version_for_level(33).name == "4.4-IV2"
    assert metadata_version_for_level(30).name == "4.3-IV0"
    assert SUPPORTED_FEATURES[METADATA_VERSION_FEATURE] == (7, 29)
    with pytest.raises(ConfigError, match="unknown release version"):
        parse_release_version("4.4")
    with pytest.raises(ConfigError, match=r"unknown metadata\.version feature level 35"):
        metadata_version_for_level(35)


def test_release_names() -> None:
    assert parse_release_version("3.7").name == "3.7-IV4"
    assert parse_release_version("3.6-IV1").level == 13
    with pytest.raises(ConfigError, match="unknown release version"):
        parse_release_version("9.9")
    with pytest.raises(ConfigError, match="older than the minimum"):
        parse_release_version("3.0-IV1")


def test_features_epoch_is_the_offset_of_the_image_that_changed_them() -> None:
    """A controller's ApiVersions finalized_features_epoch (Kafka's FeaturesPublisher)."""
    from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
    from pykraft.records.metadata import FeatureLevelRecord, NoOpRecord

    delta = MetadataDelta(MetadataImage())
    delta.replay(FeatureLevelRecord(name="metadata.version", feature_level=21))
    first = delta.apply(Provenance(4, 1, 0))
    assert first.features.epoch == 4
    later = MetadataDelta(first)
    later.replay(NoOpRecord())
    assert later.apply(Provenance(9, 1, 0)).features.epoch == 4
