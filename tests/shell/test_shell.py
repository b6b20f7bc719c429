"""The metadata shell, non-interactive: over a snapshot written here and over Kafka's
bootstrap.checkpoint."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.ids import uuid_to_str
from pykraft.image import MetadataDelta, MetadataImage, Provenance, write_image_snapshot
from pykraft.records.batch import encode_batch
from pykraft.records.control import (
    KRaftVersionFeature,
    KRaftVersionRecord,
    Voter,
    VoterEndpoint,
    VotersRecord,
    encode_control,
)
from pykraft.records.metadata import (
    BrokerEndpoint,
    ConfigRecord,
    FeatureLevelRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
    encode_metadata_record,
)
from pykraft.shell import MetadataShell, image_tree
from pykraft.shell.kraft import read_kraft_records

TOPIC_ID = uuid.UUID(int=0x1234)
RECORDS: list[object] = [
    FeatureLevelRecord(name="metadata.version", feature_level=19),
    FeatureLevelRecord(name="group.version", feature_level=1),
    *[RegisterBrokerRecord(
        broker_id=b, incarnation_id=uuid.UUID(int=b), broker_epoch=10 + b,
        end_points=(BrokerEndpoint(name="PLAINTEXT", host=f"host{b}", port=9092,
                                   security_protocol=0),),
        features=(), rack="r1", fenced=b == 2) for b in (1, 2)],
    TopicRecord(name="orders", topic_id=TOPIC_ID),
    *[PartitionRecord(partition_id=p, topic_id=TOPIC_ID, replicas=(1, 2), isr=(1, 2), leader=1,
                      leader_epoch=0, partition_epoch=0, directories=(uuid.UUID(int=0),) * 2)
      for p in range(11)],
    ConfigRecord(resource_type=2, resource_name="orders", name="retention.ms", value="1000"),
    ProducerIdsRecord(broker_id=1, broker_epoch=11, next_producer_id=5000),
]


def sample_image() -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    for record in RECORDS:
        delta.replay(record)
    return delta.apply(Provenance(41, 3, 1700000000000))


@pytest.fixture
def shell() -> MetadataShell:
    return MetadataShell(image_tree(sample_image(), source="test"))


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    return write_image_snapshot(tmp_path, sample_image(), clock=lambda: 0)


def run(shell: MetadataShell, line: str) -> list[str]:
    out = shell.execute(line)
    assert not out.failed, out.errors
    return out.lines


def test_tree_layout(shell: MetadataShell) -> None:
    assert run(shell, "ls /") == ["image", "local"]
    assert run(shell, "ls /image") == [
        "acls", "clientQuotas", "cluster", "configs", "delegationToken", "features",
        "producerIds", "provenance", "scram", "topics"]
    assert run(shell, "ls /image/cluster/brokers") == ["1", "2"]
    assert run(shell, "ls /image/topics/byName/orders")[:3] == ["0", "1", "2"]
    assert run(shell, "ls /image/topics/byName/orders")[-3:] == ["10", "id", "name"]
    assert run(shell, f"cat /image/topics/byId/{uuid_to_str(TOPIC_ID)}/name") == ["orders"]
    assert run(shell, "cat /image/topics/byName/orders/id") == [uuid_to_str(TOPIC_ID)]
    assert run(shell, "cat /image/configs/TOPIC:orders/retention.ms") == ["1000"]
    assert run(shell, "cat /image/features/metadataVersion") == ["3.7-IV4 (level 19)"]
    assert run(shell, "cat /image/features/finalized_group.version") == ["1"]
    assert run(shell, "cat /image/producerIds/nextProducerId") == ["5000"]
    broker = run(shell, "cat /image/cluster/brokers/2")[0]
    assert broker.startswith("BrokerRegistration(id=2, epoch=12, ") and "fenced=true" in broker
    partition = run(shell, "cat /image/topics/byName/orders/3")[0]
    assert "isr=[1, 2]" in partition and "leader=1" in partition
    assert "lastContainedOffset=41" in run(shell, "cat /image/provenance")[0]


def test_navigation_and_history(shell: MetadataShell) -> None:
    assert run(shell, "pwd") == ["/"]
    run(shell, "cd image/topics")
    assert run(shell, "pwd") == ["/image/topics"]
    assert run(shell, "ls") == ["byId", "byName"]
    run(shell, "cd ../cluster/./brokers")
    assert run(shell, "pwd") == ["/image/cluster/brokers"]
    run(shell, "cd")
    assert run(shell, "pwd") == ["/"]
    assert run(shell, "history 2") == ["    8  pwd", "    9  history 2"]
    assert shell.execute("exit").exit


def test_find_tree_and_globs(shell: MetadataShell) -> None:
    assert run(shell, "find /image/cluster") == [
        "/image/cluster", "/image/cluster/brokers", "/image/cluster/brokers/1",
        "/image/cluster/brokers/2", "/image/cluster/controllers"]
    assert run(shell, "tree /image/features") == [
        "features:", "  finalized_group.version: 1", "  metadataVersion: 3.7-IV4 (level 19)"]
    assert run(shell, "cat /image/cluster/brokers/*")[1].startswith("BrokerRegistration(id=2")
    assert run(shell, "ls /image/topics/byName/orders/1?") == ["10"]


@pytest.mark.parametrize(("line", "error"), [
    ("ls /nope", "ls: /nope: no such file or directory."),
    ("cd /image/provenance", "cd: /image/provenance: not a directory."),
    ("cat /image", "cat: /image: Is a directory"),
    ("frobnicate", "frobnicate: command not found. Type 'help' for the list of commands."),
    ("ls 'unclosed", "error: No closing quotation"),
    ("history x", "history: x: not a number."),
])
def test_errors(shell: MetadataShell, line: str, error: str) -> None:
    out = shell.execute(line)
    assert out.failed and out.errors == [error]


def test_help_and_man(shell: MetadataShell) -> None:
    names = [line.split()[0] for line in run(shell, "help")[1:]]
    assert names == ["cat", "cd", "exit", "find", "help", "history", "ls", "man", "pwd", "tree"]
    assert run(shell, "man ls")[0] == "usage: ls [targets...]"


def test_cli_over_written_snapshot(snapshot: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["metadata-shell", "--snapshot", str(snapshot), "--",
                                 "ls", "/image/topics/byName"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["orders"]
    result = runner.invoke(app, ["metadata-shell", "--snapshot", str(snapshot), "--",
                                 "cat", "/image/cluster/brokers/9"])
    assert result.exit_code == 1


def test_cli_over_kafka_bootstrap_checkpoint(kafka37_dir: Path) -> None:
    result = CliRunner().invoke(app, ["metadata-shell", "--snapshot",
                                      str(kafka37_dir / "bootstrap.checkpoint"), "--",
                                      "tree", "/image/features"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["features:", "  metadataVersion: 3.7-IV4 (level 19)"]


def test_cli_over_log_directory(tmp_path: Path) -> None:
    partition = tmp_path / "__cluster_metadata-0"
    partition.mkdir()
    values = [encode_metadata_record(r) for r in RECORDS[:5]]
    (partition / "00000000000000000000.log").write_bytes(
        encode_batch(0, [(None, v) for v in values], partition_leader_epoch=1, timestamp=0))
    result = CliRunner().invoke(app, ["metadata-shell", "--directory", str(tmp_path), "--",
                                      "ls", "/image/topics/byName", "/image/cluster/brokers"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["/image/topics/byName:", "orders", "",
                                          "/image/cluster/brokers:", "1", "2"]


def test_cli_refuses_bad_inputs(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["metadata-shell", "--", "ls"]).exit_code != 0
    garbage = tmp_path / "x.checkpoint"
    garbage.write_bytes(b"\x00" * 100)
    result = runner.invoke(app, ["metadata-shell", "--snapshot", str(garbage), "--", "ls"])
    assert result.exit_code == 1 and "Error:" in result.output


def test_interactive_session(snapshot: Path) -> None:
    result = CliRunner().invoke(app, ["metadata-shell", "--snapshot", str(snapshot)],
                                input="cd /image/topics\npwd\nexit\n")
    assert result.exit_code == 0, result.output
    assert "/image/topics" in result.stdout


def _damaged_directory(tmp_path: Path, field: int, value: bytes) -> tuple[Path, Path, int]:
    """A log directory of three one-record batches whose middle batch has ``value``
    written at header offset ``field``; returns (directory, segment, batch position)."""
    partition = tmp_path / "__cluster_metadata-0"
    partition.mkdir()
    batches = [encode_batch(offset, [(None, encode_metadata_record(RECORDS[offset]))],
                            partition_leader_epoch=1, timestamp=0) for offset in range(3)]
    position = len(batches[0])
    data = bytearray(b"".join(batches))
    data[position + field:position + field + len(value)] = value
    segment = partition / "00000000000000000000.log"
    segment.write_bytes(bytes(data))
    return tmp_path, segment, position


@pytest.mark.parametrize(("field", "value", "problem"), [
    (40, b"\xff", "CRC mismatch"),
    (0, (99).to_bytes(8, "big"), "base offset 99 does not continue the log at 1"),
], ids=["crc", "base-offset"])
@pytest.mark.parametrize("command", [["--", "ls", "/image"], []],
                         ids=["one-command", "interactive"])
def test_cli_on_damaged_directory_names_file_and_position(
    tmp_path: Path, field: int, value: bytes, problem: str, command: list[str],
) -> None:
    directory, segment, position = _damaged_directory(tmp_path, field, value)
    result = CliRunner().invoke(app, ["metadata-shell", "--directory", str(directory),
                                      *command], input="ls\nexit\n")
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(
        f"Error: corrupt record batch in {segment} at byte position {position}: {problem}"
    ), result.stderr
    assert result.stdout == ""


def _voters(*ids: int) -> VotersRecord:
    return VotersRecord(version=0, voters=tuple(
        Voter(voter_id=i, voter_directory_id=uuid.UUID(int=i << 64),
              endpoints=(VoterEndpoint(name="CONTROLLER", host=f"c{i}", port=9093),),
              kraft_version_feature=KRaftVersionFeature(0, 1)) for i in ids))


def test_cli_shows_kraft_control_records(tmp_path: Path) -> None:
    partition = tmp_path / "__cluster_metadata-0"
    partition.mkdir()
    control = [encode_control(KRaftVersionRecord(version=0, kraft_version=1)),
               encode_control(_voters(1))]
    data = [encode_batch(0, control, partition_leader_epoch=1, timestamp=0, control=True),
            encode_batch(2, [(None, encode_metadata_record(RECORDS[0]))],
                         partition_leader_epoch=1, timestamp=0),
            encode_batch(3, [encode_control(_voters(1, 2))], partition_leader_epoch=1,
                         timestamp=0, control=True)]
    (partition / "00000000000000000000.log").write_bytes(b"".join(data))
    result = CliRunner().invoke(app, ["metadata-shell", "--directory", str(tmp_path), "--",
                                      "tree", "/raft"])
    assert result.exit_code == 0, result.output
    second = uuid_to_str(uuid.UUID(int=2 << 64))
    first = uuid_to_str(uuid.UUID(int=1 << 64))
    assert result.stdout.splitlines() == [
        "raft:", "  kraftVersion: 1", "  voters:",
        f"    1: VoterNode(voterKey=ReplicaKey(id=1, directoryId={first}), "
        "listeners=[CONTROLLER://c1:9093], supportedKRaftVersion=0-1)",
        f"    2: VoterNode(voterKey=ReplicaKey(id=2, directoryId={second}), "
        "listeners=[CONTROLLER://c2:9093], supportedKRaftVersion=0-1)",
    ]


def test_kafka_bootstrap_checkpoint_has_no_kraft_records(kafka37_dir: Path) -> None:
    result = CliRunner().invoke(app, ["metadata-shell", "--snapshot",
                                      str(kafka37_dir / "bootstrap.checkpoint"), "--",
                                      "find", "/raft"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["/raft", "/raft/kraftVersion", "/raft/voters"]


def test_kraft_records_behind_the_snapshot_are_not_read_again(tmp_path: Path) -> None:
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(b"".join(
        encode_batch(offset, [encode_control(_voters(*range(1, offset + 2)))],
                     partition_leader_epoch=1, timestamp=0, control=True)
        for offset in range(3)))
    snapshot = write_image_snapshot(tmp_path, sample_image(), clock=lambda: 0)
    assert read_kraft_records(None, [segment]).voters == _voters(1, 2, 3)
    assert read_kraft_records(snapshot, [segment], from_offset=3).voters is None
    assert read_kraft_records(snapshot, [segment], from_offset=2).voters == _voters(1, 2, 3)


def _torn_directory(tmp_path: Path, tear: str) -> tuple[Path, Path, int]:
    """Brokers 1 and 2 registered in two batches, then a third batch (the topic) whose write
    was cut short (``tear`` "short": its last bytes missing) or garbled (``tear`` "crc")."""
    partition = tmp_path / "__cluster_metadata-0"
    partition.mkdir()
    groups = [RECORDS[0:3], RECORDS[3:4], RECORDS[4:5]]
    batches, offset = [], 0
    for group in groups:
        batches.append(encode_batch(offset, [(None, encode_metadata_record(r)) for r in group],
                                    partition_leader_epoch=1, timestamp=0))
        offset += len(group)
    position = len(batches[0]) + len(batches[1])
    data = bytearray(b"".join(batches))
    if tear == "short":
        del data[-7:]
    else:
        data[-1] ^= 0xFF
    segment = partition / "00000000000000000000.log"
    segment.write_bytes(bytes(data))
    return tmp_path, segment, position


@pytest.mark.parametrize(("tear", "problem"), [
    ("short", "truncated batch"), ("crc", "CRC mismatch"),
])
def test_cli_loads_what_precedes_a_torn_tail_and_warns(
    tmp_path: Path, tear: str, problem: str,
) -> None:
    """The end of the last segment is where a crash or a running node leaves a partial
    batch; the server truncates it at start-up, the shell shows what comes before it."""
    directory, segment, position = _torn_directory(tmp_path, tear)
    result = CliRunner().invoke(app, ["metadata-shell", "--directory", str(directory), "--",
                                      "ls", "/image/cluster/brokers", "/image/topics/byName"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["/image/cluster/brokers:", "1", "2", "",
                                          "/image/topics/byName:"]
    size = segment.stat().st_size - position
    warning = (f"Warning: ignoring {size} invalid bytes at the end of {segment} from byte "
               f"position {position} (")
    assert result.stderr.startswith(warning), result.stderr
    assert problem in result.stderr


def test_cli_refuses_a_torn_tail_that_is_not_the_end_of_the_log(tmp_path: Path) -> None:
    """A later segment follows: the tear is damage inside the log, as the server says."""
    directory, segment, position = _torn_directory(tmp_path, "short")
    later = segment.with_name("00000000000000000005.log")
    later.write_bytes(encode_batch(5, [(None, encode_metadata_record(RECORDS[5]))],
                                   partition_leader_epoch=1, timestamp=0))
    result = CliRunner().invoke(app, ["metadata-shell", "--directory", str(directory), "--",
                                      "ls", "/image"])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(
        f"Error: corrupt record batch in {segment} at byte position {position}: truncated")
