"""Issue 16's client matrix: confluent-kafka, kafka-python, aiokafka and Kafka's Java consumer
each run a 3-member classic group on a 6-partition topic (each member a process of its own,
tests/acceptance/group_member.py and java/GroupMemberProbe.java): every partition assigned
exactly once; a member leaving, joining and being SIGKILLed moves the partitions; committed
offsets survive closing every consumer; and kcat -G consumes a topic and commits.

One 1-controller + 1-broker cluster for the module, one topic and group per test; the broker
accepts session timeouts from 1 s so a crash shows after the members' 4 s."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest
from broker_harness import (
    PROPERTIES,
    broker_call,
    create_topic,
    running_cluster,
    wait_for,
)
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.messages.kafka.describe_groups_request import DescribeGroupsRequest
from pykraft.messages.kafka.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka", "java")
MEMBER_SCRIPT = Path(__file__).parent / "group_member.py"
PROBE_SOURCE = Path(__file__).parent / "java" / "GroupMemberProbe.java"
PARTITIONS = 6
SESSION_MS = 4000
DEADLINE_S = 45.0
PROPS = {**PROPERTIES, "group.initial.rebalance.delay.ms": "0",
         "group.min.session.timeout.ms": "1000", "offsets.topic.replication.factor": "1",
         "offsets.topic.num.partitions": "3"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("matrix") / "cluster", PROPS) as made:
        yield made


@pytest.fixture(scope="module")
def java_member(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    classes = tmp_path_factory.mktemp("group-member-probe")
    subprocess.run(["javac", "-d", str(classes), "-cp", java_classpath, str(PROBE_SOURCE)],
                   check=True, timeout=300)
    # C1 only and the serial collector: JVMs that start sooner on a busy machine
    return ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
            f"{classes}:{java_classpath}", "GroupMemberProbe"]


class Member:
    """One member process; a thread collects its output lines as they come."""

    def __init__(self, command: list[str], log: Path) -> None:
        self.log = log
        with log.open("ab") as err:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=err, text=True)
        self.lines: list[list[str]] = []
        assert self.process.stdout is not None
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            self.lines.append(line.rstrip("\n").split("\t"))

    def _seen(self, kind: str) -> list[list[str]]:
        return [words[1:] for words in list(self.lines) if words[0] == kind]

    @property
    def assignment(self) -> frozenset[int] | None:
        """The partitions it owns as last printed (None before its first poll); fails the
        test at once if the member died."""
        code = self.process.poll()
        assert code is None, f"member exited {code}: {self.log.read_text()[-3000:]}"
        shown = self._seen("assigned")
        return frozenset(int(p) for p in shown[-1][0].split(",") if p) if shown else None

    def records(self) -> list[tuple[int, int, str]]:
        return [(int(p), int(o), value) for p, o, value in self._seen("record")]

    def close(self) -> None:
        """Close the consumer (a LeaveGroup) and wait for the process to end cleanly."""
        assert self.process.stdin is not None
        self.process.stdin.write("close\n")
        self.process.stdin.flush()
        assert self.process.wait(timeout=30) == 0
        wait_for("its last line", lambda: self._seen("closed") or None, timeout_s=5)

    def crash(self) -> None:
        """SIGKILL: no LeaveGroup, the coordinator only sees its heartbeats stop."""
        self.process.kill()
        self.process.wait(timeout=10)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.crash()


Start = Callable[[str, str], Member]


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def start(client: str, request: pytest.FixtureRequest, cluster: LocalCluster,
          tmp_path: Path) -> Iterator[Start]:
    """Starts members of the client under test (``topic``, ``group``); kills what is left."""
    command = (request.getfixturevalue("java_member") if client == "java"
               else [sys.executable, str(MEMBER_SCRIPT), client])
    started: list[Member] = []

    def start_member(topic: str, group: str) -> Member:
        member = Member([*command, cluster.bootstrap_servers, topic, group, str(SESSION_MS)],
                        tmp_path / f"member-{len(started)}.log")
        started.append(member)
        return member

    yield start_member
    for member in started:
        member.kill()


def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    """Messages ``v<start>`` onwards, message ``vi`` to partition ``i % PARTITIONS``."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for future in [producer.send(topic, f"v{i}".encode(), partition=i % PARTITIONS)
                       for i in range(start, start + count)]:
            future.get(timeout=30)
    finally:
        producer.close()


def ends_after(count: int) -> dict[int, int]:
    """Each partition's end offset once ``count`` messages were produced from 0."""
    return {p: len(range(p, count, PARTITIONS)) for p in range(PARTITIONS)}


def wait_balanced(members: list[Member], each: int) -> None:
    """Every member holds ``each`` partitions, together all of them, none twice."""
    def balanced() -> bool | None:
        owned = [m.assignment for m in members]
        if any(o is None or len(o) != each for o in owned):
            return None
        union = frozenset[int]().union(*(o for o in owned if o is not None))
        return len(union) == PARTITIONS == each * len(members) or None
    try:
        wait_for(f"{len(members)} members holding {each} partitions each", balanced,
                 DEADLINE_S)
    except pytest.fail.Exception as failed:
        raise AssertionError(f"{failed}; they hold {[m.assignment for m in members]}") from None


def committed(cluster: LocalCluster, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets as its coordinator answers OffsetFetch (-1: none)."""
    (broker,) = cluster.brokers
    answer = broker_call(cluster, broker, OffsetFetchRequest(groups=(OffsetFetchRequestGroup(
        group_id=group, topics=(OffsetFetchRequestTopics(
            name=topic, partition_indexes=tuple(range(PARTITIONS))),
        )),)))
    (found,) = answer.groups
    assert found.error_code == 0
    return {int(p.partition_index): int(p.committed_offset)
            for t in found.topics for p in t.partitions}


def described(cluster: LocalCluster, group: str) -> tuple[str, int]:
    """The group's state and member count as its coordinator describes it."""
    (broker,) = cluster.brokers
    answer = broker_call(cluster, broker, DescribeGroupsRequest(groups=(group,)))
    (found,) = answer.groups
    return str(found.group_state), len(found.members)


def test_members_leaving_joining_and_crashing_move_the_partitions(
        cluster: LocalCluster, client: str, start: Start) -> None:
    bootstrap = cluster.bootstrap_servers
    topic = group = f"moves-{client}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, 0, 60)
    first, second, third = (start(topic, group) for _ in range(3))
    wait_balanced([first, second, third], 2)

    first.close()
    wait_balanced([second, third], 3)

    fourth = start(topic, group)
    wait_balanced([second, third, fourth], 2)

    second.crash()
    wait_balanced([third, fourth], 3)
    assert wait_for("the coordinator's view", lambda: described(cluster, group)
                    if described(cluster, group) == ("Stable", 2) else None) == ("Stable", 2)
    third.close()
    fourth.close()
    assert described(cluster, group) == ("Empty", 0)


def test_new_consumers_resume_from_the_committed_offsets(
        cluster: LocalCluster, client: str, start: Start) -> None:
    bootstrap = cluster.bootstrap_servers
    topic = group = f"resume-{client}"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, 0, 60)
    first_ends = ends_after(60)
    members = [start(topic, group) for _ in range(3)]
    wait_balanced(members, 2)
    wait_for("every message committed",
             lambda: committed(cluster, group, topic) == first_ends or None, DEADLINE_S)
    for member in members:
        member.close()
    assert {value for m in members for _, _, value in m.records()} == {
        f"v{i}" for i in range(60)}
    assert committed(cluster, group, topic) == first_ends

    produce(bootstrap, topic, 60, 30)
    ends = ends_after(90)
    resumed = [start(topic, group) for _ in range(3)]
    wait_balanced(resumed, 2)
    wait_for("the new messages committed",
             lambda: committed(cluster, group, topic) == ends or None, DEADLINE_S)
    for member in resumed:
        member.close()
    read = {(p, offset, value) for m in resumed for p, offset, value in m.records()}
    # from each partition's committed offset on, nothing before it, nothing skipped
    assert {(p, offset) for p, offset, _ in read} == {
        (p, offset) for p in range(PARTITIONS) for offset in range(first_ends[p], ends[p])}
    assert {value for _, _, value in read} == {f"v{i}" for i in range(60, 90)}


def test_kcat_consumes_in_a_group_and_commits(cluster: LocalCluster) -> None:
    bootstrap, topic, group = cluster.bootstrap_servers, "kcat-events", "kcat-group"
    create_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, 0, 30)
    ends = ends_after(30)

    def kcat() -> list[str]:
        done = subprocess.run(
            ["kcat", "-b", bootstrap, "-G", group, "-X", "auto.offset.reset=earliest",
             "-e", "-q", "-f", "%s\n", topic],
            capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout.split()

    assert sorted(kcat()) == sorted(f"v{i}" for i in range(30))
    result = CliRunner().invoke(app, ["consumer-groups", "--bootstrap-server", bootstrap,
                                      "--timeout", "20000", "--describe", "--group", group])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("GROUP"))
    names = lines[header].split()
    rows = [dict(zip(names, line.split(), strict=False)) for line in lines[header + 1:]
            if line.strip()]
    assert {(row["TOPIC"], int(row["PARTITION"]), int(row["CURRENT-OFFSET"]), row["LAG"])
            for row in rows} == {(topic, p, ends[p], "0") for p in range(PARTITIONS)}

    produce(bootstrap, topic, 30, 10)
    assert sorted(kcat()) == sorted(f"v{i}" for i in range(30, 40))
