"""The data source's record-to-row logic and planning, without Spark."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cluster_history import (
    EXPECTED,
    STALE_NODE,
    USER_PARTITIONS,
    build,
    write_node,
    write_stale_cluster,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.errors import CorruptRecordError, StorageError
from pykraft.records.batch import iter_batches
from pykraft.spark import files, rows

KAFKA37 = Path(__file__).parents[1] / "fixtures" / "kafka-3.7-kraft"


def read_all(path: Path, options: rows.ReadOptions | None = None,
             max_bytes: int = files.DEFAULT_MAX_BYTES) -> list[dict[str, Any]]:
    ranges = files.plan(files.discover(path), max_bytes)
    return [dict(zip(rows.COLUMNS, row, strict=True)) for part in ranges
            for row in rows.read_range(part, options or rows.ReadOptions())]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("node") / "data"
    write_node(directory, build())
    return directory


def test_kafka_bootstrap_checkpoint() -> None:
    out = read_all(KAFKA37 / "bootstrap.checkpoint")
    assert [r["control_type_name"] or r["record_type"] for r in out] == [
        "SNAPSHOT_HEADER", "FEATURE_LEVEL_RECORD", "SNAPSHOT_FOOTER"]
    assert all(r["crc_ok"] and r["error"] is None and r["file_kind"] == "bootstrap" for r in out)
    feature = out[1]
    assert (feature["api_key"], feature["record_version"]) == (12, 0)
    assert feature["feature_name"] == "metadata.version"
    payload = json.loads(feature["record_json"])
    assert payload["data"]["featureLevel"] == feature["feature_level"]


def test_rows_match_pykraft_reader(node: Path) -> None:
    out = read_all(node / "__cluster_metadata-0", rows.ReadOptions(raw_bytes=True))
    segments = sorted((node / "__cluster_metadata-0").glob("*.log"))
    expected = [(b.base_offset, r.offset, r.value) for s in segments
                for b in iter_batches(s.read_bytes()) for r in b.records()]
    from_segments = [(r["batch_base_offset"], r["offset"], r["value"])
                     for r in out if r["file_kind"] == "segment"]
    assert from_segments == expected
    assert len(segments) > 1  # the plan really spans several files


def test_typed_columns(node: Path) -> None:
    out = [r for r in read_all(node) if r["file_kind"] == "segment"]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in out:
        by_type.setdefault(r["record_type"] or r["control_type_name"], []).append(r)
    assert [r["topic_name"] for r in by_type["TOPIC_RECORD"]] == list(EXPECTED.topics)
    # partition records learn the topic name from the TopicRecord before them
    assert {r["topic_name"] for r in by_type["PARTITION_RECORD"]} == set(EXPECTED.topics)
    first = by_type["PARTITION_RECORD"][0]
    assert (first["partition_id"], first["leader"], first["isr"]) == (0, 101, [101, 102, 103])
    changes = by_type["PARTITION_CHANGE_RECORD"]
    assert [c["leader"] for c in changes if c["leader"] is not None] == [102, 101, 103]
    fence = by_type["FENCE_BROKER_RECORD"][0]
    assert (fence["broker_id"], fence["fenced"]) == (101, True)
    config = by_type["CONFIG_RECORD"][0]
    assert (config["config_resource_name"], config["config_name"], config["config_value"]) == (
        "orders", "retention.ms", "86400000")
    leaders = [(r["leader_epoch"], r["leader"]) for r in by_type["LEADER_CHANGE"]]
    assert leaders[0] == EXPECTED.controller_leaders[0]
    voters = by_type["KRAFT_VOTERS"]
    assert [tuple(v["voter_ids"]) for v in voters] == list(EXPECTED.voter_sets)
    assert all(len(v["voter_directory_ids"][0]) == 22 for v in voters)


def test_snapshot_rows_carry_the_snapshot_id(node: Path) -> None:
    snapshot = [r for r in read_all(node) if r["file_kind"] == "snapshot"]
    end_offset = snapshot[0]["snapshot_end_offset"]
    assert snapshot[0]["control_type_name"] == "SNAPSHOT_HEADER"
    assert snapshot[-1]["control_type_name"] == "SNAPSHOT_FOOTER"
    assert [r["offset"] for r in snapshot] == list(range(len(snapshot)))  # file positions
    assert end_offset == max(r["offset"] for r in read_all(node)
                             if r["file_kind"] == "segment") + 1


def test_split_ranges_read_the_same_rows(node: Path) -> None:
    whole = read_all(node)
    split = read_all(node, max_bytes=200)
    assert len(files.plan(files.discover(node), 200)) > len(files.discover(node))
    assert [(r["file"], r["offset"]) for r in split] == [(r["file"], r["offset"]) for r in whole]


@settings(max_examples=40, deadline=None)
@given(low=st.none() | st.integers(-2, 50), high=st.none() | st.integers(-2, 50))
def test_offset_bounds_are_exact(node: Path, low: int | None, high: int | None) -> None:
    bounds = rows.OffsetBounds(low, high)
    whole = read_all(node)
    bounded = read_all(node, rows.ReadOptions(bounds=bounds))
    assert bounded == [r for r in whole if bounds.admits(r["offset"])]


def corrupt_copy(node: Path, tmp_path: Path, position: int, *, truncate: bool = False) -> Path:
    target = tmp_path / "data"
    shutil.copytree(node, target)
    segment = target / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    if truncate:
        data = data[:position]
    else:
        data[position] ^= 0xFF
    segment.write_bytes(bytes(data))
    return segment


def test_bad_crc_permissive_and_failfast(node: Path, tmp_path: Path) -> None:
    segment = corrupt_copy(node, tmp_path, 70)  # inside the first batch's records
    out = read_all(segment)
    bad = [r for r in out if not r["crc_ok"]]
    assert bad and all("CRC mismatch" in r["error"] for r in bad)
    assert any(r["crc_ok"] for r in out)  # later batches still read
    with pytest.raises(CorruptRecordError, match="CRC mismatch") as caught:
        read_all(segment, rows.ReadOptions(mode=rows.FAILFAST))
    assert str(segment) in str(caught.value)


def test_truncated_segment_permissive_and_failfast(node: Path, tmp_path: Path) -> None:
    segment = corrupt_copy(node, tmp_path, 130, truncate=True)
    out = read_all(segment)
    assert out[-1]["error"] is not None and "truncated" in out[-1]["error"]
    assert out[-1]["offset"] is None and out[-1]["batch_position"] == 106
    with pytest.raises(CorruptRecordError):
        read_all(segment, rows.ReadOptions(mode=rows.FAILFAST))


def test_bad_mode_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mode"):
        rows.ReadOptions(mode="DROPMALFORMED")
    with pytest.raises(StorageError, match="no such"):
        files.discover(tmp_path / "absent")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(StorageError, match="not a KRaft"):
        files.discover(tmp_path / "notes.txt")


def test_discovery_reads_only_the_metadata_log(tmp_path: Path) -> None:
    """A broker-like log dir: its user and __consumer_offsets partitions are never read,
    named alone they are refused, and a dir with no metadata log is an error."""
    base = write_stale_cluster(tmp_path / "stale")
    stale = base / f"node-{STALE_NODE}" / "data"
    found = files.discover(base)
    assert found and all(f.kind == files.BOOTSTRAP or Path(f.path).parent.name ==
                         "__cluster_metadata-0" for f in found)
    assert {f.log_dir for f in found} == {str(base / f"node-{n}" / "data") for n in (1, 2, 3)}
    assert files.discover(stale) == [f for f in found if f.log_dir == str(stale)]
    for name in USER_PARTITIONS:
        with pytest.raises(StorageError, match="kafka-segments"):
            files.discover(stale / name)
        (segment,) = (stale / name).iterdir()
        assert [f.kind for f in files.discover(segment)] == [files.SEGMENT]  # named: read
    (tmp_path / "empty").mkdir()
    with pytest.raises(StorageError, match="no metadata log"):
        files.discover(tmp_path / "empty")
