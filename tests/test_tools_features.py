"""``pykraft features``: option parsing and Kafka's output lines (the round trip against real
controllers is tests/integration/test_dynamic_quorum.py's static-to-dynamic runbook)."""

from __future__ import annotations

import pytest

from pykraft.tools.features_tool import (
    FeatureLevels,
    describe_line,
    parse_feature,
    upgraded_line,
)
from pykraft.tools.quorum_tool import QuorumToolError


def test_parse_feature() -> None:
    assert parse_feature("kraft.version=1") == ("kraft.version", 1)
    assert parse_feature(" metadata.version = 21 ") == ("metadata.version", 21)
    for bad in ("kraft.version", "=1", "kraft.version=one", "kraft.version="):
        with pytest.raises(QuorumToolError, match="expected name=level"):
            parse_feature(bad)


def test_describe_line_is_kafka_feature_commands() -> None:
    assert describe_line(FeatureLevels("metadata.version", 7, 29, 21, 12)) == (
        "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: "
        "4.2-IV1\tFinalizedVersionLevel: 3.9-IV0\tEpoch: 12")
    assert describe_line(FeatureLevels("kraft.version", 0, 1, 0, 12)) == (
        "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
        "FinalizedVersionLevel: 0\tEpoch: 12")
    # no epoch from the node: "-"; a level Kafka does not know: "UNKNOWN <level>"
    assert describe_line(FeatureLevels("metadata.version", 7, 999, 0)).endswith(
        "SupportedMaxVersion: UNKNOWN 999\tFinalizedVersionLevel: UNKNOWN 0\tEpoch: -")


def test_describe_line_names_kafka_levels_pykraft_does_not_support() -> None:
    """A Kafka 4.4 node supports up to 4.5-IV0 (34) and finalizes 4.4-IV2 (33): named as
    kafka-features.sh names them, not ``UNKNOWN 33``."""
    assert describe_line(FeatureLevels("metadata.version", 7, 34, 33, 9)) == (
        "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: "
        "4.5-IV0\tFinalizedVersionLevel: 4.4-IV2\tEpoch: 9")
    assert upgraded_line("metadata.version", 30, dry_run=True) == (
        "metadata.version can be upgraded to 4.3-IV0.")


def test_upgraded_line() -> None:
    assert upgraded_line("kraft.version", 1, dry_run=False) == "kraft.version was upgraded to 1."
    assert upgraded_line("kraft.version", 1, dry_run=True) == (
        "kraft.version can be upgraded to 1.")
