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
    # no epoch from the node: "-"; a level this release does not know: "UNKNOWN <level>"
    assert describe_line(FeatureLevels("metadata.version", 7, 999, 0)).endswith(
        "SupportedMaxVersion: UNKNOWN 999\tFinalizedVersionLevel: UNKNOWN 0\tEpoch: -")


def test_upgraded_line() -> None:
    assert upgraded_line("kraft.version", 1, dry_run=False) == "kraft.version was upgraded to 1."
    assert upgraded_line("kraft.version", 1, dry_run=True) == (
        "kraft.version can be upgraded to 1.")
