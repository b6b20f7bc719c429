"""The reference procedure's steps shared by the migration tests (``docs/design/
migration-reference/run.sh``): phase A's ZooKeeper cluster, phase B1's controllers in
migration mode, B3's changes while dual-writing, B4's failover, the phases'
timeline, how a load and ZooKeeper's tree compare across runs, and what Kafka's tools
show of the cluster (to compare it across a roll, a finalisation or a rollback).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from metadata_dump import Json, LoadView, LogRecord, Names, load_span, load_view
from process_harness import wait_for
from typer.testing import CliRunner
from zk_cluster import (
    ACLS,
    BROKER_IDS,
    CONFIGS,
    CONSUMER_GROUPS,
    CONTROLLER_IDS,
    TOPICS,
    BrokerMode,
    ZkCluster,
)

from pykraft.cli.main import app
from pykraft.migration.zk_ops import ZkClient

CAPTURED = Path(__file__).resolve().parents[2] / "docs/design/migration-reference/captured"
COMPLETED = "Completed migration of metadata from ZooKeeper to KRaft"
#: the driver's states in the order Kafka's active controller went through them (§4)
DRIVER_STATES = ("INACTIVE", "WAIT_FOR_CONTROLLER_QUORUM", "WAIT_FOR_BROKERS",
                 "BECOME_CONTROLLER", "ZK_MIGRATION", "SYNC_KRAFT_TO_ZK",
                 "KRAFT_CONTROLLER_TO_BROKER_COMM", "DUAL_WRITE")
TRANSITION = re.compile(r"transitioning from (\w+) to (\w+) state")
_PARTITION = re.compile(r"Topic: (\S+)\s+Partition: (\d+)\s+Leader: (\S+)\s+"
                        r"Replicas: (\S+)\s+Isr: (\S+)")
#: znodes whose content is the run's own (ports, epochs, ids, sequence owners) or not the
#: migration's (ZooKeeper's, the brokers' notifications, the producer id block's owner)
_RUN_MADE = re.compile(r"^/(zookeeper|brokers/ids/|brokers/seqid|controller|cluster/id|"
                       r"migration|latest_producer_id_block|isr_change_notification/|"
                       r"log_dir_event_notification/)")
_SCRAM_ITERATIONS = re.compile(r"iterations=\d+")


@dataclass
class Timeline:
    """Each phase's duration, printed at the end (run pytest with -s to see them)."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        yield
        self.seconds[name] = time.monotonic() - start
        print(f"[migration reference] phase {name}: {self.seconds[name]:.1f} s", flush=True)


def phase_a(cluster: ZkCluster) -> None:
    """run.sh's phase A: ZooKeeper, three ZK-mode brokers, the topics, configs, SCRAM user,
    quotas and ACLs, idempotent acks=all messages, a group's committed offsets."""
    cluster.start_zookeeper()
    for broker in BROKER_IDS:
        cluster.start_broker(broker, BrokerMode.ZK)
    for broker in BROKER_IDS:
        cluster.wait_broker(broker)
    cluster.admin(TOPICS, "--create", "--topic", "t-rf3", "--partitions", "3",
                  "--replication-factor", "3", "--config", "min.insync.replicas=2",
                  "--config", "retention.ms=604800000")
    cluster.admin(TOPICS, "--create", "--topic", "t-compact", "--partitions", "2",
                  "--replication-factor", "2", "--config", "cleanup.policy=compact",
                  "--config", "segment.bytes=1048576")
    cluster.admin(TOPICS, "--create", "--topic", "t-plain", "--partitions", "1",
                  "--replication-factor", "1")
    for entity, config in ((("brokers", "--entity-default"), "log.cleaner.backoff.ms=20000"),
                           (("brokers", "--entity-name", "1"), "log.cleaner.threads=1"),
                           (("users", "--entity-name", "alice"),
                            "SCRAM-SHA-256=[iterations=4096,password=alice-secret]"),
                           (("users", "--entity-name", "alice"), "producer_byte_rate=1048576"),
                           (("clients", "--entity-name", "app1"), "consumer_byte_rate=2097152"),
                           (("ips", "--entity-name", "127.0.0.2"),
                            "connection_creation_rate=50")):
        cluster.admin(CONFIGS, "--alter", "--entity-type", *entity, "--add-config", config)
    cluster.admin(ACLS, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                  "--operation", "Describe", "--topic", "t-rf3")
    cluster.admin(ACLS, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                  "--group", "g-", "--resource-pattern-type", "prefixed")
    cluster.produce("t-rf3", 30, "A")
    cluster.produce("t-compact", 10, "A")
    assert len(cluster.consume("t-rf3", "--group", "g1", "--max-messages", "30")) == 30
    cluster.wait_no_under_replicated()
    # the brokers learn of her credential from ZooKeeper's change notifications, in time
    wait_for("alice's credential to work", lambda: alice_sees_t_rf3(cluster, "alice-secret")
             or None, 120.0)


def alice_sees_t_rf3(cluster: ZkCluster, password: str) -> bool:
    """Whether alice, through the SCRAM listener with ``password``, lists t-rf3 (her ACLs
    let her describe it); a failed authentication must say so."""
    done = cluster.as_scram_user(TOPICS, "alice", password, "--list")
    assert done.returncode == 0 or "Authentication failed" in done.stderr, done.stderr
    return done.returncode == 0 and "t-rf3" in done.stdout.split()


def phase_b1(cluster: ZkCluster, cluster_id: str) -> None:
    """The controllers formatted with ZooKeeper's cluster id and started in migration mode;
    their driver waits for the ZK brokers."""
    for controller in CONTROLLER_IDS:
        cluster.format_controller(controller, cluster_id, migration=True)
        cluster.start_controller(controller, migration=True)
    for controller in CONTROLLER_IDS:
        cluster.wait_controller(controller)
    cluster.wait_controller_line("to WAIT_FOR_BROKERS state")


def phase_b2(cluster: ZkCluster) -> tuple[int, str]:
    """The brokers rolled into migration mode one by one; the load runs when the last one
    registers. The controller that loaded, and its completion line, once it dual-writes."""
    for broker in BROKER_IDS:
        cluster.roll_broker(broker, BrokerMode.MIGRATION)
        cluster.wait_no_under_replicated()
    active, line = cluster.wait_controller_line(COMPLETED)
    cluster.controller(active).wait_line("to DUAL_WRITE state")
    return active, line


def phase_b3(cluster: ZkCluster) -> None:
    """run.sh's phase B3 through the brokers (forwarded to the controllers, which
    dual-write them): a topic created, one deleted, partitions added, topic and broker
    configs, a SCRAM user, a quota, an ACL; 30 values to t-rf3 tagged ``B3``, 10 to t-new."""
    cluster.admin(TOPICS, "--create", "--topic", "t-new", "--partitions", "2",
                  "--replication-factor", "2", "--config", "retention.bytes=1048576")
    for entity, config in ((("topics", "--entity-name", "t-rf3"), "retention.ms=3600000"),
                           (("brokers", "--entity-default"), "log.cleaner.backoff.ms=25000"),
                           (("users", "--entity-name", "bob"),
                            "SCRAM-SHA-512=[iterations=8192,password=bob-secret]"),
                           (("users", "--entity-name", "alice"),
                            "producer_byte_rate=2097152")):
        cluster.admin(CONFIGS, "--alter", "--entity-type", *entity, "--add-config", config)
    cluster.admin(ACLS, "--add", "--allow-principal", "User:bob", "--operation", "Write",
                  "--topic", "t-new")
    cluster.admin(TOPICS, "--delete", "--topic", "t-plain")
    cluster.admin(TOPICS, "--alter", "--topic", "t-compact", "--partitions", "3")
    cluster.produce("t-rf3", 30, "B3")
    cluster.produce("t-new", 10, "B3")
    cluster.wait_no_under_replicated()


def phase_b4(cluster: ZkCluster, active: int) -> int:
    """run.sh's phase B4: the active controller SIGKILLed while dual-writing, until another
    dual-writes; the killed one restarted. The successor's id."""
    scans = {c: cluster.controller(c).scan("to DUAL_WRITE state") for c in CONTROLLER_IDS
             if c != active}
    cluster.controller(active).kill()
    successor: int = wait_for("another controller to dual-write", lambda: next(
        (c for c, scan in scans.items() if scan.found() is not None), None), 120.0)
    cluster.start_controller(active, migration=True)
    cluster.wait_controller(active)
    cluster.wait_no_under_replicated()
    return successor


def across_runs(log: list[LogRecord]) -> LoadView:
    """A log's load as another run of the procedure made it too (``metadata_dump``)."""
    view: LoadView = load_view(load_span(log), names=Names.of(log), partition_states=False,
                               assignments=False)
    return view


def migration_framing(log: list[LogRecord]) -> list[tuple[str, Json]]:
    """A log's transaction markers and migration states, in order."""
    return [(r.type, r.data) for r in log if r.type in (
        "BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD",
        "ZK_MIGRATION_STATE_RECORD")]


def start_last_broker_in_migration(cluster: ZkCluster) -> int:
    """Phase B2 up to the load: the brokers but the last rolled into migration mode one by
    one, then the last stopped and started in migration mode without waiting for it (its
    registration starts the load); the last one's id."""
    for broker in BROKER_IDS[:-1]:
        cluster.roll_broker(broker, BrokerMode.MIGRATION)
        cluster.wait_no_under_replicated()
    last: int = BROKER_IDS[-1]
    cluster.broker(last).stop()
    cluster.start_broker(last, BrokerMode.MIGRATION)
    return last


# -- what Kafka's tools show ---------------------------------------------------------------


def acl_lines(listed: str) -> str:
    """``kafka-acls --list`` as sorted ``resource: ACL`` lines (the tool prints them in the
    order of the brokers' hash maps)."""
    resource, lines = "", []
    for line in listed.splitlines():
        if line.startswith("Current ACLs for resource"):
            resource = line.split("`")[1]
        elif "(principal=" in line:
            lines.append(f"{resource}: {line.strip()}")
    return "\n".join(sorted(lines))


#: what :func:`shown_migration_state` finds while the controllers dual-write
MIGRATION_LINES = ["ZkMigrationState:       MIGRATION", "ZkMigrationState: MIGRATION"]


def shown_migration_state(cluster: ZkCluster) -> list[str]:
    """pykraft's migration lines in ``metadata-quorum describe --status`` and ``features
    describe`` against the controllers (pykraft's or Kafka's): none unless they migrate."""
    lines = []
    for command in (["metadata-quorum", "--bootstrap-controller",
                     cluster.bootstrap_controllers, "describe", "--status"],
                    ["features", "--bootstrap-controller", cluster.bootstrap_controllers,
                     "describe"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 0, result.output
        lines += [line for line in result.output.splitlines()
                  if line.startswith("ZkMigrationState:")]
    return lines


def described(cluster: ZkCluster) -> dict[str, str]:
    """What Kafka 3.9's tools say of the topics, their configs, the ACLs and the SCRAM
    users (and the users' quotas) through the brokers (ZooKeeper-era ones read ZooKeeper
    or forward)."""
    return {
        "topics": cluster.admin(TOPICS, "--list", "--exclude-internal"),
        "t-rf3": cluster.admin(CONFIGS, "--describe", "--entity-type", "topics",
                               "--entity-name", "t-rf3"),
        "t-compact": cluster.admin(CONFIGS, "--describe", "--entity-type", "topics",
                                   "--entity-name", "t-compact"),
        "acls": acl_lines(cluster.admin(ACLS, "--list")),
        "users": "\n".join(sorted(  # in the order of the brokers' hash maps
            cluster.admin(CONFIGS, "--describe", "--entity-type", "users").splitlines())),
        "partitions": "\n".join(sorted(
            row.split("\t")[0] + " " + row.split("\t")[2] for row in
            cluster.admin(TOPICS, "--describe", "--exclude-internal").splitlines()
            if row.startswith("Topic:"))),
    }


def quotas_and_broker_configs(cluster: ZkCluster) -> dict[str, str]:
    """What Kafka 3.9's tools say of the client and IP quotas, the brokers' default dynamic
    configs and broker 1's (phase A's and B3's), and each topic's id."""
    def configs(*entity: str) -> str:
        return "\n".join(sorted(cluster.admin(CONFIGS, "--describe", "--entity-type",
                                               *entity).splitlines()))
    return {
        "clients": configs("clients"), "ips": configs("ips"),
        "broker-default": configs("brokers", "--entity-default"),
        "broker-1": configs("brokers", "--entity-name", "1"),
        "topic-ids": "\n".join(sorted(
            " ".join(row.split("\t")[:2]) for row in
            cluster.admin(TOPICS, "--describe", "--exclude-internal").splitlines()
            if row.startswith("Topic:"))),
    }


def committed_offsets(cluster: ZkCluster, group: str) -> dict[tuple[str, int], int]:
    """``kafka-consumer-groups --describe``'s CURRENT-OFFSET per partition."""
    listed = cluster.admin(CONSUMER_GROUPS, "--describe", "--group", group)
    return {(fields[1], int(fields[2])): int(fields[3]) for line in listed.splitlines()
            if len(fields := line.split()) > 3 and fields[0] == group}


def partitions(cluster: ZkCluster) -> dict[tuple[str, int], tuple[str, str, str]]:
    """``kafka-topics --describe``: each partition's leader, replicas and ISR."""
    listed = cluster.admin(TOPICS, "--describe")
    return {(topic, int(partition)): (leader, replicas, isr)
            for topic, partition, leader, replicas, isr in _PARTITION.findall(listed)}


def assert_every_partition_served(cluster: ZkCluster) -> None:
    """No under-replicated partition, then every partition led with its whole ISR."""
    cluster.wait_no_under_replicated()
    found = partitions(cluster)
    assert found, "kafka-topics described no partition"
    for key, (leader, replicas, isr) in found.items():
        assert leader not in ("none", "-1"), (key, leader)
        assert sorted(isr.split(",")) == sorted(replicas.split(",")), (key, replicas, isr)


# -- ZooKeeper's tree ----------------------------------------------------------------------


def captured_znodes(phase: str, run: str = "") -> dict[str, object]:
    """The reference run's ZooKeeper after ``phase`` (``captured/<run>/znodes-<phase>.json``;
    ``run``: a fault run's directory), as :func:`comparable` shows a tree."""
    captured = json.loads((CAPTURED / run / f"znodes-{phase}.json").read_text())
    return comparable({path: None if node["raw"] is None else node["raw"].encode()
                       for path, node in captured.items()})


def znodes(zk: ZkClient, path: str = "/") -> dict[str, bytes | None]:
    """Every znode under ``path`` and its data."""
    found: dict[str, bytes | None] = {}
    pending = [path]
    while pending:
        node = pending.pop()
        read = zk.get(node)
        if read is None:
            continue
        found[node] = read.raw
        pending += [f"{node.rstrip('/')}/{child}" for child in zk.children(node) or []]
    return found


def comparable(tree: dict[str, bytes | None]) -> dict[str, object]:
    """A tree as another run of the procedure writes it too: run-made znodes left out, a
    topic's assignment as its partitions' replica counts (a placement starts at a random
    broker), partition states by path only (leaders and epochs move at the roll's pace),
    SCRAM credentials by mechanism and iterations (salts are random)."""
    view: dict[str, object] = {}
    for path, data in tree.items():
        if _RUN_MADE.match(path):
            continue
        text = data.decode() if data else None  # as zkdump.py: an empty znode's data None
        if path.startswith("/brokers/topics/") and path.count("/") == 3 and text:
            topic = json.loads(text)
            topic.pop("topic_id")
            topic["partitions"] = {p: len(r) for p, r in topic["partitions"].items()}
            view[path] = topic
        elif path.endswith("/state") and path.startswith("/brokers/topics/"):
            view[path] = "<state>"
        elif path.startswith("/config/users/") and text:
            config = json.loads(text)
            config["config"] = {key: (_SCRAM_ITERATIONS.findall(value) if "SCRAM" in key
                                      else value) for key, value in config["config"].items()}
            view[path] = config
        elif path.startswith("/kafka-acl") and text and text.startswith("{"):
            acls = json.loads(text)
            if "acls" in acls:
                acls["acls"] = sorted(acls["acls"], key=json.dumps)
            view[path] = acls
        else:
            view[path] = text
    return view
