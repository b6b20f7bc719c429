"""meta.properties, quorum-state, leader-epoch-checkpoint and partition.metadata.

Each format is checked against the files a real Kafka 3.7 wrote (parse exactly, rewrite
byte for byte), then for round-trips and for specific errors on damaged input.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.errors import StorageError
from pykraft.ids import METADATA_TOPIC_ID, ZERO_UUID, uuid_from_str
from pykraft.storage.file_error import StateFileError
from pykraft.storage.fsutil import atomic_write
from pykraft.storage.leader_epoch import (
    decode_epoch_checkpoint,
    encode_epoch_checkpoint,
    read_epoch_checkpoint,
    write_epoch_checkpoint,
)
from pykraft.storage.meta_properties import (
    MetaProperties,
    parse_meta_properties,
    read_meta_properties,
    write_meta_properties,
)
from pykraft.storage.partition_metadata import (
    decode_partition_metadata,
    read_partition_metadata,
    write_partition_metadata,
)
from pykraft.storage.quorum_state_file import (
    FRESH_STATE,
    QuorumStateData,
    decode_quorum_state,
    encode_quorum_state,
    read_quorum_state,
    write_quorum_state,
)

FIXTURE_DATE = datetime(2026, 1, 30, 16, 43, 51, tzinfo=UTC)


# ------------------------------------------------------------------ meta.properties


def test_meta_properties_fixture_parses(kafka37_dir: Path) -> None:
    meta = read_meta_properties(kafka37_dir / "meta.properties")
    assert meta == MetaProperties(
        version=1,
        node_id=1,
        cluster_id="q1w2e3r4t5y6u7i8o9p0",
        directory_id=uuid_from_str("XHhkr4tkSsD900pOQ8pPfg"),
    )


def test_meta_properties_fixture_rewrites_byte_for_byte(kafka37_dir: Path, tmp_path: Path) -> None:
    fixture = kafka37_dir / "meta.properties"
    target = tmp_path / "meta.properties"
    write_meta_properties(target, read_meta_properties(fixture), clock=lambda: FIXTURE_DATE)
    assert target.read_bytes() == fixture.read_bytes()
    assert not (tmp_path / "meta.properties.tmp").exists()


def test_meta_properties_date_uses_the_clock_zone(tmp_path: Path) -> None:
    meta = MetaProperties(1, 3, "abc", None)
    zone = timezone(timedelta(hours=1), "CET")
    moment = datetime(2024, 3, 5, 7, 8, 9, tzinfo=zone)
    write_meta_properties(tmp_path / "m", meta, clock=lambda: moment)
    head = (tmp_path / "m").read_bytes().split(b"\n")[:2]
    assert head == [b"#", b"#Tue Mar 05 07:08:09 CET 2024"]


def test_meta_properties_v0_and_extra_keys_round_trip(tmp_path: Path) -> None:
    meta = MetaProperties(0, 7, None, None, {"weird key=": "a:b\\c é\t"})
    write_meta_properties(tmp_path / "m", meta, clock=lambda: FIXTURE_DATE)
    text = (tmp_path / "m").read_bytes().decode("ascii")
    assert "broker.id=7" in text and "node.id" not in text
    assert "weird\\ key\\==a\\:b\\\\c \\u00E9\\t" in text
    assert read_meta_properties(tmp_path / "m") == meta


def test_meta_properties_v0_with_optional_ids() -> None:
    meta = parse_meta_properties("broker.id=4\ncluster.id=c\ndirectory.id=XHhkr4tkSsD900pOQ8pPfg\n",
                                 "m")
    assert (meta.version, meta.node_id, meta.cluster_id) == (0, 4, "c")
    assert meta.directory_id == uuid_from_str("XHhkr4tkSsD900pOQ8pPfg")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("version=1\ncluster.id=c\n", "required property node.id is missing"),
        ("version=1\nnode.id=1\n", "cluster.id is required"),
        ("version=0\ncluster.id=c\n", "required property broker.id is missing"),
        ("version=2\nnode.id=1\ncluster.id=c\n", "unsupported version '2'"),
        ("version=1\nnode.id=x1\ncluster.id=c\n", "node.id 'x1' is not an integer"),
        ("version=1\nnode.id=-1\ncluster.id=c\n", "node.id -1 is outside"),
        ("version=1\nnode.id=2147483648\ncluster.id=c\n", "node.id 2147483648 is outside"),
        ("version=1\nnode.id=1\ncluster.id=c\ndirectory.id=nope\n", "directory.id: invalid"),
        ("version=1\nnode.id=1\ncluster.id=c\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n",
         "reserved directory id"),
        ("version=1\nnode.id=1\ncluster.id=c\\u12\n", "malformed \\uxxxx escape"),
    ],
)
def test_meta_properties_errors_name_file_and_key(text: str, expected: str) -> None:
    with pytest.raises(StorageError, match=r"the/meta\.properties") as info:
        parse_meta_properties(text, "the/meta.properties")
    assert expected in str(info.value)


def test_meta_properties_missing_file(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="cannot read"):
        read_meta_properties(tmp_path / "meta.properties")


# ------------------------------------------------------------------ quorum-state


def test_quorum_state_fixture_parses_and_rewrites(kafka37_dir: Path, tmp_path: Path) -> None:
    fixture = kafka37_dir / "__cluster_metadata-0" / "quorum-state"
    state = read_quorum_state(fixture)
    assert state == QuorumStateData(
        leader_id=1, leader_epoch=1, voted_id=-1, cluster_id="", applied_offset=0,
        current_voters=(1,), data_version=0,
    )
    write_quorum_state(tmp_path / "quorum-state", state)
    assert (tmp_path / "quorum-state").read_bytes() == fixture.read_bytes()


def test_quorum_state_examples_from_kafka() -> None:
    v0 = (b'{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
          b'"currentVoters":[],"data_version":0}')
    v1 = (b'{"leaderId":-1,"leaderEpoch":2,"votedId":1,'
          b'"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}')
    for raw in (v0, v1):
        assert encode_quorum_state(decode_quorum_state(raw, "qs")) == raw
    assert decode_quorum_state(v1, "qs").voted_directory_id == uuid_from_str(
        "J8aAPcfLQt2bqs1JT_rMgQ")


ids = st.integers(-1, 2**31 - 1)


v0_states = st.builds(
    QuorumStateData, leader_id=ids, leader_epoch=ids, voted_id=ids,
    cluster_id=st.text("abcXYZ-_019", max_size=10), applied_offset=st.integers(0, 2**63 - 1),
    current_voters=st.none() | st.lists(ids, max_size=5).map(tuple), data_version=st.just(0),
)


@given(v0_states)
def test_quorum_state_v0_round_trip(state: QuorumStateData) -> None:
    raw = encode_quorum_state(state)
    assert b" " not in raw.replace(state.cluster_id.encode(), b"")
    assert not raw.endswith(b"\n")
    assert raw.endswith(b',"data_version":0}')
    assert decode_quorum_state(raw, "qs") == state


@given(leader=ids, epoch=ids, voted=ids, directory=st.uuids())
def test_quorum_state_v1_round_trip(leader: int, epoch: int, voted: int,
                                    directory: uuid.UUID) -> None:
    state = QuorumStateData(leader, epoch, voted, directory, data_version=1)
    raw = encode_quorum_state(state)
    assert raw.endswith(b',"data_version":1}') and b"clusterId" not in raw
    assert decode_quorum_state(raw, "qs") == state


def test_quorum_state_missing_file_is_a_fresh_node(tmp_path: Path) -> None:
    state = read_quorum_state(tmp_path / "quorum-state")
    assert state == FRESH_STATE
    assert (state.leader_epoch, state.leader_id, state.voted_id) == (0, -1, -1)
    assert state.voted_directory_id == ZERO_UUID


def test_quorum_state_stale_tmp_is_ignored_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    (tmp_path / "quorum-state.tmp").write_bytes(b"{garbage from a crash")
    assert read_quorum_state(path) == FRESH_STATE
    write_quorum_state(path, QuorumStateData(2, 5, 2, data_version=0))
    (tmp_path / "quorum-state.tmp").write_bytes(b"{another crash")
    assert read_quorum_state(path) == QuorumStateData(2, 5, 2, data_version=0)
    write_quorum_state(path, QuorumStateData(3, 6, -1, data_version=1))
    assert read_quorum_state(path) == QuorumStateData(3, 6, -1, data_version=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quorum-state"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", "not JSON"),
        (b'{"leaderId":1', "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1]", "expected a JSON object"),
        (b"[" * 100000, "not JSON"),
        (b'{"leaderId":1,"leaderEpoch":1,"votedId":1,"data_version":7}', "data_version 7"),
        (b'{"leaderId":1,"leaderEpoch":1,"votedId":1}', "'data_version' is missing"),
        (b'{"leaderId":1,"votedId":1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
         b'"data_version":1}', "'leaderEpoch' is missing"),
        (b'{"leaderId":1.5,"leaderEpoch":1,"votedId":1,"data_version":1}', "'leaderId' is 1.5"),
        (b'{"leaderId":true,"leaderEpoch":1,"votedId":1,"data_version":1}', "'leaderId' is True"),
        (b'{"leaderId":1,"leaderEpoch":4294967296,"votedId":1,"data_version":1}',
         "'leaderEpoch' is 4294967296"),
        (b'{"leaderId":1,"leaderEpoch":1,"votedId":1,"votedDirectoryId":"xx","data_version":1}',
         "'votedDirectoryId': invalid"),
        (b'{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":1,"appliedOffset":0,'
         b'"currentVoters":[{"id":1}],"data_version":0}', "'currentVoters'"),
        (b'{"clusterId":3,"leaderId":1,"leaderEpoch":1,"votedId":1,"appliedOffset":0,'
         b'"currentVoters":[],"data_version":0}', "'clusterId' is 3"),
    ],
)
def test_quorum_state_corruption_names_the_file(raw: bytes, expected: str) -> None:
    with pytest.raises(StateFileError, match="dir/quorum-state") as info:
        decode_quorum_state(raw, "dir/quorum-state")
    assert info.value.path == "dir/quorum-state"
    assert expected in info.value.problem


# ------------------------------------------------------------------ leader-epoch-checkpoint


def test_epoch_checkpoint_fixture(kafka37_dir: Path, tmp_path: Path) -> None:
    fixture = kafka37_dir / "__cluster_metadata-0" / "leader-epoch-checkpoint"
    entries = read_epoch_checkpoint(fixture)
    assert entries == [(1, 0)]
    write_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint", entries)
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == fixture.read_bytes()


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 10**6)), max_size=20))
def test_epoch_checkpoint_round_trip(pairs: list[tuple[int, int]]) -> None:
    epochs = sorted({epoch for epoch, _ in pairs})
    offsets = sorted({offset for _, offset in pairs})
    entries = list(zip(epochs, offsets, strict=False))
    raw = encode_epoch_checkpoint(entries)
    assert raw.startswith(f"0\n{len(entries)}\n".encode())
    assert decode_epoch_checkpoint(raw, "c") == entries


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"1\n0\n", "version line '1'"),
        (b"0\n2\n1 0\n", "entry count line '2'"),
        (b"0\n1\n1 0", "does not end with a newline"),
        (b"0\n1\n1,0\n", "line 3 '1,0'"),
        (b"0\n2\n1 5\n2 5\n", "not after the previous entry"),
        (b"0\n1\n-1 0\n", "negative"),
        (b"\n", "version line ''"),
    ],
)
def test_epoch_checkpoint_errors(raw: bytes, expected: str) -> None:
    with pytest.raises(StorageError, match="epochs-file") as info:
        decode_epoch_checkpoint(raw, "epochs-file")
    assert expected in str(info.value)


@pytest.mark.parametrize("raw", [b"", b"0\n"])
def test_epoch_checkpoint_without_a_count_has_no_entries(raw: bytes) -> None:
    """Kafka's CheckpointFile creates the file empty with the partition and reads a file
    ending before its count line as no entries: a ZooKeeper-era broker leaves such files on
    its idle partitions (``__consumer_offsets-0``), and a broker rolled to KRaft starts on
    them."""
    assert decode_epoch_checkpoint(raw, "epochs-file") == []


# ------------------------------------------------------------------ partition.metadata


def test_partition_metadata_fixture(kafka37_dir: Path, tmp_path: Path) -> None:
    fixture = kafka37_dir / "__cluster_metadata-0" / "partition.metadata"
    assert read_partition_metadata(fixture) == METADATA_TOPIC_ID
    write_partition_metadata(tmp_path / "partition.metadata", METADATA_TOPIC_ID)
    assert (tmp_path / "partition.metadata").read_bytes() == fixture.read_bytes()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", "expected 'version: 0'"),
        (b"version: 0\ntopicid: AAAAAAAAAAAAAAAAAAAAAQ", "is not 'topic_id: <uuid>'"),
        (b"version: 0\ntopic_id: AAAA", "invalid Kafka UUID"),
        (b"version: 0", "expected 'version: 0'"),
        (b"\x80", "not ASCII"),
    ],
)
def test_partition_metadata_errors(raw: bytes, expected: str) -> None:
    with pytest.raises(StorageError, match="pm-file") as info:
        decode_partition_metadata(raw, "pm-file")
    assert expected in str(info.value)


# ------------------------------------------------------------------ atomic replace


def test_atomic_write_replaces_and_leaves_no_tmp(tmp_path: Path) -> None:
    target = tmp_path / "state"
    (tmp_path / "state.tmp").write_bytes(b"stale")
    atomic_write(target, b"one")
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["state"]
