"""``pykraft consumer-groups`` and ``dump-log --offsets-decoder`` against a running broker
and a confluent-kafka consumer group: describe (offsets, members, state), list, a reset
refused while the group is active and executed once it is empty, offset and group deletion,
and the records all this left in ``__consumer_offsets``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import PROPERTIES, confluent_produce, create_topic, running_cluster, wait_for
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.group.partitioning import partition_for
from pykraft.tools.local_cluster import LocalCluster

TOPIC = "events"
GROUP = "tool-group"
OFFSETS_PARTITIONS = 3
runner = CliRunner()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "cluster", {
            **PROPERTIES, "group.initial.rebalance.delay.ms": "0",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)}) as made:
        yield made


def groups(bootstrap: str, *args: str) -> tuple[int, list[str]]:
    result = runner.invoke(app, ["consumer-groups", "--bootstrap-server", bootstrap,
                                 "--timeout", "20000", *args])
    return result.exit_code, result.output.splitlines()


def rows(lines: list[str]) -> list[list[str]]:
    """The table rows of ``lines`` (after the header), split into cells."""
    header = next(i for i, line in enumerate(lines) if line.startswith("GROUP"))
    return [line.split() for line in lines[header + 1:] if line.strip()]


def test_the_tool_on_a_live_group(broker: LocalCluster) -> None:
    import confluent_kafka

    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, TOPIC, 2)
    confluent_produce({"bootstrap.servers": bootstrap, "partitioner": "consistent_random"},
                      TOPIC, [(f"k{i}".encode(), b"v", ()) for i in range(10)])
    member = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": "probe",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    member.subscribe([TOPIC])
    try:
        seen = 0

        def consumed_all() -> bool | None:
            nonlocal seen
            message = member.poll(0.2)
            seen += message is not None and message.error() is None
            return True if seen == 10 else None

        wait_for("10 messages", consumed_all)
        member.commit(asynchronous=False)

        def stable() -> list[str] | None:
            code, lines = groups(bootstrap, "--describe", "--group", GROUP)
            settled = code == 0 and not any("rebalancing" in line for line in lines)
            return lines if settled else None

        described = rows(wait_for("a stable group", stable))
        assert sorted(r[1:3] for r in described) == [[TOPIC, "0"], [TOPIC, "1"]]
        assert all(r[5] == "0" and r[6].startswith("probe-") and r[8] == "probe"
                   for r in described)
        assert sum(int(r[3]) for r in described) == 10

        code, lines = groups(bootstrap, "--describe", "--group", GROUP, "--members",
                             "--verbose")
        assert code == 0
        (member_row,) = rows(lines)
        assert member_row[3:] == ["probe", "2", f"{TOPIC}(0,1)"]
        code, lines = groups(bootstrap, "--describe", "--group", GROUP, "--state")
        (state_row,) = rows(lines)
        assert state_row[-3:] == ["range", "Stable", "1"]

        code, lines = groups(bootstrap, "--reset-offsets", "--group", GROUP, "--all-topics",
                             "--to-earliest", "--execute")
        assert code == 1
        assert (f"Error: Assignments can only be reset if the group '{GROUP}' is inactive, "
                "but the current state is Stable.") in lines
    finally:
        member.close()

    assert groups(bootstrap, "--list") == (0, [GROUP])
    code, lines = groups(bootstrap, "--reset-offsets", "--group", GROUP, "--topic", TOPIC,
                         "--to-earliest", "--execute")
    assert code == 0 and [r[3] for r in rows(lines)] == ["0", "0"]
    code, lines = groups(bootstrap, "--describe", "--group", GROUP)
    assert f"Consumer group '{GROUP}' has no active members." in lines
    assert sorted((r[3], r[6]) for r in rows(lines)) == [("0", "-"), ("0", "-")]
    assert sum(int(r[5]) for r in rows(lines)) == 10  # the lag is the whole topic again

    code, lines = groups(bootstrap, "--delete-offsets", "--group", GROUP, "--topic",
                         f"{TOPIC}:0")
    assert code == 0 and lines[0] == (f"Request succeed for deleting offsets with topic "
                                      f"{TOPIC}:0 group {GROUP}")
    assert groups(bootstrap, "--delete", "--group", GROUP) == (
        0, [f"Deletion of requested consumer groups ('{GROUP}') was successful."])
    assert groups(bootstrap, "--list") == (0, [])

    log_dir = broker.nodes[broker.brokers[0]].data / (
        f"__consumer_offsets-{partition_for(GROUP, OFFSETS_PARTITIONS)}")
    segment = sorted(log_dir.glob("*.log"))[0]
    dumped = runner.invoke(app, ["dump-log", "--files", str(segment), "--offsets-decoder"])
    assert dumped.exit_code == 0, dumped.output
    group_key = f'key: {{"type":"2","data":{{"group":"{GROUP}"}}}}'
    offset_key = (f'key: {{"type":"1","data":{{"group":"{GROUP}","topic":"{TOPIC}",'
                  '"partition":0}}')
    assert f'{group_key} payload: {{"version":"3","data":{{"protocolType":"consumer"' in (
        dumped.output)
    assert f"{offset_key} payload: <DELETE>" in dumped.output
    assert f"{group_key} payload: <DELETE>" in dumped.output
