"""The data-plane tools against real processes on 127.0.0.1 (one controller, one broker):
lines in through console-producer, out through console-consumer, offsets through
get-offsets, records deleted by delete-records, sizes by log-dirs.

Each test needs its APIs served by the broker listener; until they are (issue 14's broker
wiring), it is skipped with the missing API named rather than passed."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.tools.console_producer_tool import partition_for_key
from pykraft.tools.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).parent / "integration"))
from process_harness import wait_for

pytestmark = pytest.mark.timeout(120)
PROPERTIES = {"pykraft.shutdown.timeout.ms": "3000"}
_SERVED = listener_ranges(Listener.BROKER)
_NAMES = {0: "Produce (API 0)", 2: "ListOffsets (API 2)", 21: "DeleteRecords (API 21)",
          35: "DescribeLogDirs (API 35)"}


def needs(*keys: int) -> pytest.MarkDecorator:
    missing = [_NAMES[k] for k in keys if k not in _SERVED]
    return pytest.mark.skipif(bool(missing), reason="brokers on main do not serve "
                              + ", ".join(missing) + " yet")


def run(cluster: LocalCluster, *args: str, stdin: str | None = None) -> Result:
    from pykraft.cli.main import app

    return CliRunner().invoke(app, [args[0], "--bootstrap-server", cluster.bootstrap_servers,
                                    *args[1:]], input=stdin)


def ok(cluster: LocalCluster, *args: str, stdin: str | None = None) -> str:
    result = run(cluster, *args, stdin=stdin)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster.create(tmp_path_factory.mktemp("data") / "c", 1, PROPERTIES,
                                  brokers=1)
    cluster.start_all()
    cluster.wait_listening(cluster.brokers)
    wait_for("the broker registered", lambda: True if run(
        cluster, "topics", "--create", "--topic", "probe", "--partitions", "1",
        "--replication-factor", "1").exit_code == 0 else None)
    yield cluster
    for node_id in cluster.nodes:
        cluster.kill(node_id)


def _offsets(cluster: LocalCluster, topic: str, time: str) -> dict[int, int]:
    lines = ok(cluster, "get-offsets", "--topic", topic, "--time", time).split()
    return {int(line.split(":")[1]): int(line.split(":")[2]) for line in lines}


def _create(cluster: LocalCluster, topic: str, partitions: int) -> None:
    ok(cluster, "topics", "--create", "--topic", topic, "--partitions", str(partitions),
       "--replication-factor", "1")
    wait_for(f"{topic} has leaders", lambda: True if run(
        cluster, "get-offsets", "--topic", topic).exit_code == 0 and len(
        _offsets(cluster, topic, "latest")) == partitions else None)


@needs(0, 2)
def test_produced_lines_are_consumed_with_keys_in_their_partitions(single: LocalCluster) -> None:
    _create(single, "lines", 3)
    keys = [f"k{i}" for i in range(12)]
    ok(single, "console-producer", "--topic", "lines", "--property", "parse.key=true",
       "--property", "key.separator=:", "--compression-codec", "lz4",
       stdin="".join(f"{k}:value of {k}\n" for k in keys))
    latest = _offsets(single, "lines", "latest")
    expected = {p: sum(1 for k in keys if partition_for_key(k.encode(), 3) == p)
                for p in range(3)}
    assert latest == expected
    assert _offsets(single, "lines", "earliest") == dict.fromkeys(range(3), 0)
    result = run(single, "console-consumer", "--topic", "lines", "--from-beginning",
                 "--max-messages", "12", "--property", "print.key=true", "--property",
                 "print.partition=true", "--timeout-ms", "20000")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.endswith("Processed a total of 12 messages\n")
    seen = {tuple(line.split("\t")) for line in result.stdout.splitlines()}
    assert seen == {(f"Partition:{partition_for_key(k.encode(), 3)}", k, f"value of {k}")
                    for k in keys}


@needs(0, 2)
def test_one_partition_from_an_offset(single: LocalCluster) -> None:
    _create(single, "one", 1)
    ok(single, "console-producer", "--topic", "one", "--sync", stdin="a\nb\nc\n")
    result = run(single, "console-consumer", "--topic", "one", "--partition", "0",
                 "--offset", "1", "--property", "print.offset=true", "--timeout-ms", "3000")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Offset:1\tb\nOffset:2\tc\n"
    assert "TimeoutException" in result.stderr
    assert result.stderr.endswith("Processed a total of 2 messages\n")


@needs(0, 2, 21)
def test_delete_records_moves_the_log_start(single: LocalCluster, tmp_path: Path) -> None:
    _create(single, "trim", 1)
    ok(single, "console-producer", "--topic", "trim", stdin="".join(f"{i}\n" for i in range(5)))
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({"partitions": [{"topic": "trim", "partition": 0,
                                                "offset": 3}], "version": 1}))
    assert ok(single, "delete-records", "--offset-json-file", str(path)) == (
        "Executing records delete operation\nRecords delete operation completed:\n"
        "partition: trim-0\tlow_watermark: 3\n")
    assert _offsets(single, "trim", "earliest") == {0: 3}


@needs(0, 2, 35)
def test_log_dirs_reports_the_partitions_sizes(single: LocalCluster) -> None:
    _create(single, "sized", 2)
    ok(single, "console-producer", "--topic", "sized", stdin="x\n" * 10)
    lines = ok(single, "log-dirs", "--describe", "--topic-list", "sized").splitlines()
    broker = single.brokers[0]
    assert lines[:2] == ["Querying brokers for log directories information",
                         f"Received log directory information from brokers {broker}"]
    document = json.loads(lines[2])
    [entry] = document["brokers"]
    partitions = [p for d in entry["logDirs"] for p in d["partitions"]]
    assert {p["partition"] for p in partitions} == {"sized-0", "sized-1"}
    assert sum(p["size"] for p in partitions) > 0


@needs(2, 21, 35)
def test_read_tools_on_an_empty_topic(single: LocalCluster, tmp_path: Path) -> None:
    _create(single, "empty", 3)
    assert ok(single, "get-offsets", "--topic-partitions", "empty:1-", "--time",
              "earliest") == "empty:1:0\nempty:2:0\n"
    document = json.loads(ok(single, "log-dirs", "--describe", "--topic-list",
                             "empty").splitlines()[2])
    assert sorted(p["partition"] for d in document["brokers"][0]["logDirs"]
                  for p in d["partitions"]) == ["empty-0", "empty-1", "empty-2"]
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({"partitions": [{"topic": "empty", "partition": 0, "offset": 0},
                                               {"topic": "empty", "partition": 1, "offset": 5}]}))
    assert ok(single, "delete-records", "--offset-json-file", str(path)).splitlines()[2:] == [
        "partition: empty-0\tlow_watermark: 0",
        "partition: empty-1\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
        "OFFSET_OUT_OF_RANGE"]
    result = run(single, "console-consumer", "--topic", "empty", "--from-beginning",
                 "--timeout-ms", "500")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.endswith("Processed a total of 0 messages\n")


@needs(0, 2)
def test_a_group_consumer_starts_where_the_group_committed(single: LocalCluster) -> None:
    """--group (or group.id) joins the group, as Kafka's console consumer does: what one
    member printed is committed, and the next one goes on from there."""
    _create(single, "grouped", 1)
    ok(single, "console-producer", "--topic", "grouped",
       stdin="".join(f"m{i}\n" for i in range(10)))
    first = run(single, "console-consumer", "--topic", "grouped", "--group", "readers",
                "--from-beginning", "--max-messages", "4", "--timeout-ms", "20000")
    assert first.exit_code == 0, first.stderr
    assert first.stdout.split() == ["m0", "m1", "m2", "m3"]
    second = run(single, "console-consumer", "--topic", "grouped", "--consumer-property",
                 "group.id=readers", "--max-messages", "6", "--timeout-ms", "20000")
    assert second.exit_code == 0, second.stderr
    assert second.stdout.split() == [f"m{i}" for i in range(4, 10)]
    described = ok(single, "consumer-groups", "--describe", "--group", "readers")
    assert described.split("\n")[-2].split()[:5] == ["readers", "grouped", "0", "10", "10"]
    refused = run(single, "console-consumer", "--topic", "grouped", "--group", "readers",
                  "--partition", "0")
    assert refused.exit_code == 1
    assert "Options group and partition cannot be specified together." in refused.stderr
