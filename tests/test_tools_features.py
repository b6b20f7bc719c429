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


def test_describe_line_names_metadata_versions_by_release() -> None:
    assert describe_line(FeatureLevels("kraft.version", 0, 1, 0)) == (
        "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
        "FinalizedVersionLevel: 0\tEpoch: -1")
    line = describe_line(FeatureLevels("metadata.version", 7, 21, 21))
    assert "SupportedMinVersion: 3.3-IV3" in line and "FinalizedVersionLevel: 3.9-IV0" in line
    assert "FinalizedVersionLevel: -" in describe_line(FeatureLevels("group.version", 0, 1,
                                                                     None))
    assert "SupportedMaxVersion: 999" in describe_line(FeatureLevels("metadata.version", 7,
                                                                     999, None))


def test_upgraded_line() -> None:
    assert upgraded_line("kraft.version", 1, dry_run=False) == "kraft.version was upgraded to 1."
    assert upgraded_line("kraft.version", 1, dry_run=True) == (
        "kraft.version can be upgraded to 1.")
