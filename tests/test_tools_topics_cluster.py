"""``pykraft topics`` against real processes on 127.0.0.1: one controller and one broker for
every action and option, three and three for replication factor 3 and the report options
(a broker stopped: under-replicated, unavailable, under and at min ISR)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from pykraft.tools.admin_client import AdminClient, ClusterMetadata, admin_settings
from pykraft.tools.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).parent / "integration"))
from process_harness import wait_for

pytestmark = pytest.mark.timeout(120)
PROPERTIES = {"pykraft.shutdown.timeout.ms": "3000"}
#: The broker serves DescribeTopicPartitions: ELR read from it, empty (nothing writes it yet)
ELR = "\tElr: \tLastKnownElr: "


def topics(cluster: LocalCluster, *args: str) -> Result:
    from pykraft.cli.main import app

    return CliRunner().invoke(app, ["topics", "--bootstrap-server", cluster.bootstrap_servers,
                                    *args])


def ok(cluster: LocalCluster, *args: str) -> str:
    result = topics(cluster, *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def _metadata(cluster: LocalCluster, names: list[str]) -> ClusterMetadata:
    """The admin client's Metadata of some topics (the data-plane tools' entry point)."""
    async def run() -> ClusterMetadata:
        async with AdminClient(admin_settings(cluster.bootstrap_servers)) as admin:
            return await admin.metadata(names)
    return asyncio.run(run())


def wait_listed(cluster: LocalCluster, name: str, present: bool = True) -> None:
    """Until the broker's metadata image has (or no longer has) the topic."""
    wait_for(f"topic {name} {'listed' if present else 'gone'}", lambda: True if (
        name in ok(cluster, "--list").split("\n")) == present else None)


def wait_deleted(cluster: LocalCluster, pattern: str) -> None:
    """Delete every topic ``pattern`` matches and wait until the broker lists none: a test
    that describes every topic must not meet one still being deleted (Kafka's describe
    fails on a topic gone between its Metadata and its DescribeConfigs, as pykraft's)."""
    ok(cluster, "--delete", "--topic", pattern)
    wait_for(f"topics {pattern} gone", lambda: True if ok(
        cluster, "--list", "--topic", pattern) == "\n" else None)


def wait_led(cluster: LocalCluster, pattern: str) -> None:
    """Until every partition of the topics ``pattern`` matches has a leader: what
    --describe reports (unavailable, under min ISR) is their state, which a broker slow to
    heartbeat on a loaded machine (fenced, its partitions leaderless) changes for a while."""
    wait_for(f"topics {pattern} led", lambda: True if ok(
        cluster, "--describe", "--topic", pattern, "--unavailable-partitions") == ""
        else None)


def _start(base: Path, controllers: int, brokers: int) -> LocalCluster:
    cluster = LocalCluster.create(base, controllers, PROPERTIES, brokers=brokers)
    cluster.start_all()
    cluster.wait_listening(cluster.brokers)
    # the broker serves Metadata once unfenced, with itself among the brokers
    wait_for("the brokers registered", lambda: True if topics(
        cluster, "--create", "--topic", "probe", "--if-not-exists").exit_code == 0 else None)
    ok(cluster, "--delete", "--topic", "probe")
    wait_listed(cluster, "probe", present=False)
    return cluster


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = _start(tmp_path_factory.mktemp("topics") / "c", 1, 1)
    yield cluster
    for node_id in cluster.nodes:
        cluster.kill(node_id)


def test_create_describe_alter_delete(single: LocalCluster) -> None:
    broker = single.brokers[0]
    assert ok(single, "--create", "--topic", "orders", "--partitions", "3",
              "--replication-factor", "1", "--config", "retention.ms=1000",
              "--config", "cleanup.policy = compact") == "Created topic orders.\n"
    wait_listed(single, "orders")
    lines = ok(single, "--describe", "--topic", "orders").splitlines()
    assert re.fullmatch(r"Topic: orders\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3\t"
                        r"ReplicationFactor: 1\tConfigs: cleanup.policy=compact,"
                        r"retention.ms=1000", lines[0]), lines[0]
    assert lines[1:] == [f"\tTopic: orders\tPartition: {p}\tLeader: {broker}\tReplicas: "
                         f"{broker}\tIsr: {broker}{ELR}" for p in range(3)]
    # a page a partition: the same lines; by id, from Metadata (Kafka's admin): ELR N/A
    assert ok(single, "--describe", "--topic", "orders",
              "--partition-size-limit-per-response", "1").splitlines() == lines
    topic_id = lines[0].split("\t")[1].removeprefix("TopicId: ")
    assert ok(single, "--describe", "--topic-id", topic_id).splitlines() == [
        lines[0], *(line.replace(ELR, "\tElr: N/A\tLastKnownElr: N/A") for line in lines[1:])]

    again = topics(single, "--create", "--topic", "orders")
    assert (again.exit_code, again.stdout) == (
        1, "Error while executing topic command : Topic 'orders' already exists.\n")
    assert ok(single, "--create", "--topic", "orders", "--if-not-exists") == ""

    assert ok(single, "--alter", "--topic", "orders", "--partitions", "5") == ""
    wait_for("5 partitions", lambda: True if "PartitionCount: 5" in ok(
        single, "--describe", "--topic", "orders") else None)
    fewer = topics(single, "--alter", "--topic", "orders", "--partitions", "2")
    assert fewer.exit_code == 1
    assert fewer.stdout == ("Error while executing topic command : The topic orders currently "
                            "has 5 partition(s); 2 would not be an increase.\n")
    assert ok(single, "--alter", "--topic", "orders", "--partitions", "7",
              "--replica-assignment", ",".join([str(broker)] * 7)) == ""
    wait_for("7 partitions", lambda: True if "PartitionCount: 7" in ok(
        single, "--describe", "--topic", "orders") else None)

    assert ok(single, "--delete", "--topic", "orders") == ""
    wait_listed(single, "orders", present=False)
    gone = topics(single, "--delete", "--topic", "orders")
    assert (gone.exit_code, gone.stdout, gone.stderr) == (
        1, "", "Topic 'orders' does not exist as expected\n")
    assert ok(single, "--delete", "--topic", "orders", "--if-exists") == ""
    missing_alter = topics(single, "--alter", "--topic", "orders", "--partitions", "9")
    assert missing_alter.stderr == "Topic 'orders' does not exist as expected\n"
    assert ok(single, "--alter", "--topic", "orders", "--partitions", "9", "--if-exists") == ""


def test_cluster_defaults_and_a_manual_assignment(single: LocalCluster) -> None:
    broker = single.brokers[0]
    assert ok(single, "--create", "--topic", "defaults") == "Created topic defaults.\n"
    assert ok(single, "--create", "--topic", "placed", "--replica-assignment",
              f"{broker},{broker}") == "Created topic placed.\n"
    wait_listed(single, "placed")
    wait_listed(single, "defaults")
    described = ok(single, "--describe", "--topic", "defaults,placed").splitlines()
    heads = [line.split("\t") for line in described if line.startswith("Topic:")]
    assert [(h[0], h[2], h[3]) for h in heads] == [
        ("Topic: defaults", "PartitionCount: 1", "ReplicationFactor: 1"),
        ("Topic: placed", "PartitionCount: 2", "ReplicationFactor: 1")]
    wait_deleted(single, "defaults|placed")


def test_list_regex_internal_topics_json_and_table(single: LocalCluster) -> None:
    for name in ("app-a", "app-b", "other", "__consumer_offsets"):
        ok(single, "--create", "--topic", name)
        wait_listed(single, name)
    assert ok(single, "--list", "--topic", "app-.*") == "app-a\napp-b\n"
    assert ok(single, "--list", "--topic", "app-a, other") == "app-a\nother\n"
    assert "__consumer_offsets" in ok(single, "--list").split("\n")
    assert "__consumer_offsets" not in ok(single, "--list", "--exclude-internal").split("\n")
    assert "Topic: __consumer_offsets" not in ok(single, "--describe", "--exclude-internal")
    assert json.loads(ok(single, "--list", "--topic", "app-.*", "--json")) == ["app-a", "app-b"]
    documents = json.loads(ok(single, "--describe", "--topic", "app-a", "--json"))
    assert [(d["topic"], d["partitionCount"], d["configs"], d["partitions"][0]["isr"])
            for d in documents] == [("app-a", 1, {}, [single.brokers[0]])]
    table = ok(single, "--describe", "--topic", "app-b", "--table")
    assert "LastKnownElr" in table and "app-b" in table
    assert list(_metadata(single, ["app-a", "missing"]).topics) == ["app-a"]
    topic_id = documents[0]["topicId"]
    by_id = ok(single, "--describe", "--topic-id", topic_id).splitlines()
    assert by_id[0].startswith(f"Topic: app-a\tTopicId: {topic_id}\t")
    wait_deleted(single, "app-.*|other|__consumer_offsets")  # Kafka prints an empty line


def test_describe_reports_and_overrides(single: LocalCluster) -> None:
    ok(single, "--create", "--topic", "tuned", "--config", "min.insync.replicas=1")
    ok(single, "--create", "--topic", "untuned")
    wait_listed(single, "untuned")
    wait_listed(single, "tuned")
    wait_led(single, "tuned|untuned")
    overrides = ok(single, "--describe", "--topics-with-overrides").splitlines()
    assert [line.split("\t")[0] for line in overrides] == ["Topic: tuned"]
    assert ok(single, "--describe", "--under-replicated-partitions") == ""
    assert ok(single, "--describe", "--unavailable-partitions") == ""
    at_min = ok(single, "--describe", "--topic", "tuned|untuned", "--at-min-isr-partitions")
    assert [line.split("\t")[1] for line in at_min.splitlines()] == [
        "Topic: tuned", "Topic: untuned"]
    missing = topics(single, "--describe", "--topic", "nope")
    assert (missing.exit_code, missing.stderr) == (1, "Topic 'nope' does not exist as expected\n")
    assert ok(single, "--describe", "--topic", "nope", "--if-exists") == ""
    wait_deleted(single, "tuned|untuned")


@pytest.mark.parametrize(("args", "message"), [
    (["--create", "--topic", "x", "--config", "retention.mss=1"],
     "Unknown topic config name: retention.mss"),
    (["--create", "--topic", "x", "--replication-factor", "3"],
     "Unable to replicate the partition 3 time(s)"),
    (["--create", "--topic", "bad name"], "Topic name is invalid: 'bad name' contains"),
    (["--create", "--topic", "x", "--partitions", "0"], None),
])
def test_refusals_are_kafkas(single: LocalCluster, args: list[str], message: str | None) -> None:
    result = topics(single, *args)
    assert result.exit_code == 1
    if message is None:  # a usage error, found before any request
        assert result.stderr == "The partitions must be greater than 0\n"
    else:
        assert result.stdout.startswith(f"Error while executing topic command : {message}")


def test_command_config_and_a_controller_address(single: LocalCluster, tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("client.id=ops-script\ndefault.api.timeout.ms=5000\n")
    assert ok(single, "--command-config", str(config), "--list", "--topic", "nothing") == "\n"
    controller = single.nodes[single.controllers[0]].address
    from pykraft.cli.main import app

    result = CliRunner().invoke(app, ["topics", "--bootstrap-server", controller, "--list"])
    assert result.exit_code == 1
    assert "is --bootstrap-server a broker's address?" in result.stdout


def test_replication_factor_3_and_a_stopped_broker(tmp_path: Path) -> None:
    cluster = _start(tmp_path / "c3", 3, 3)
    try:
        brokers = cluster.brokers
        ok(cluster, "--create", "--topic", "rf3", "--partitions", "3",
           "--replication-factor", "3", "--config", "min.insync.replicas=2")
        lone = brokers[2]
        ok(cluster, "--create", "--topic", "lone", "--replica-assignment", str(lone))
        wait_listed(cluster, "rf3")
        wait_listed(cluster, "lone")
        lines = ok(cluster, "--describe", "--topic", "rf3").splitlines()
        assert "\tReplicationFactor: 3\tConfigs: min.insync.replicas=2" in lines[0]
        for line in lines[1:]:
            fields = dict(f.split(": ", 1) for f in line.strip("\t").split("\t"))
            assert sorted(map(int, fields["Replicas"].split(","))) == brokers
            assert sorted(map(int, fields["Isr"].split(","))) == brokers
        assert ok(cluster, "--describe", "--under-replicated-partitions") == ""

        cluster.stop(lone)  # a controlled shutdown: fenced, out of every ISR
        under = wait_for("ISRs without the stopped broker", lambda: ok(
            cluster, "--describe", "--topic", "rf3", "--under-replicated-partitions"
        ).splitlines() or None)
        assert len(under) == 3 and all(str(lone) not in line.split("Isr: ")[1] for line in under)
        at_min = ok(cluster, "--describe", "--topic", "rf3", "--at-min-isr-partitions")
        assert len(at_min.splitlines()) == 3
        unavailable = ok(cluster, "--describe", "--unavailable-partitions").splitlines()
        assert unavailable == [f"\tTopic: lone\tPartition: 0\tLeader: none\tReplicas: {lone}"
                               f"\tIsr: {lone}{ELR}"]
        assert ok(cluster, "--describe", "--under-min-isr-partitions").splitlines() == (
            unavailable)
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
