"""Transactions through Apache Kafka's Java client (kafka-clients 4.4.0, the pinned Kafka's
jars) on a 1-controller + 2-broker cluster, driven by ``java/TxnProbe.java``: a
consume-transform-produce loop of a read_committed consumer in a subscribed group whose
consumed offsets go with its transaction (``sendOffsetsToTransaction``): aborted, neither its
output nor its offsets are visible and the group reads the same records again; committed,
both are, exactly once. A zombie producer fenced by a new one with its transactional id
cannot commit, and neither its records nor its offsets become visible."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from broker_harness import PROPERTIES, create_topic, running_cluster
from java_admin import JSON_SOURCE
from java_kafka import (
    JAVA_SOURCES,
    LineProbe,
    ProbeError,
    compile_java,
    finalize_transaction_version,
    java_command,
    kafka_classpath,
    skip_module_off_ci,
    transaction_epochs,
)
from txn_clients import group_stable_offsets

from pykraft.tools.local_cluster import LocalCluster

skip_module_off_ci()

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SOURCE, SINK, ZOMBIE_SINK = "java-ctp-in", "java-ctp-out", "java-zombie-out"
PARTITIONS = 2
PROPS = {**PROPERTIES, "transaction.state.log.num.partitions": "3",
         "offsets.topic.num.partitions": "3"}
COMMITTED = [f"value-{i}" for i in range(20)]  # to partition i % 2
ABORTED = [f"aborted-{i}" for i in range(5)]  # to partition i % 2, before COMMITTED
#: each partition of SOURCE: its aborted records, the ABORT marker, its 10 committed records,
#: the COMMIT marker
SOURCE_END = {p: len(ABORTED[p::2]) + 1 + len(COMMITTED[p::2]) + 1 for p in range(PARTITIONS)}
Offsets = dict[int, tuple[str, int]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory,
            transaction_version: int) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("java-txn") / "cluster", PROPS,
                         brokers=2) as made:
        finalize_transaction_version(made, transaction_version)
        for topic in (SOURCE, SINK, ZOMBIE_SINK):
            create_topic(made.bootstrap_servers, topic, PARTITIONS, replication=2)
        yield made


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    made: str = compile_java(JAVA_SOURCES / "TxnProbe.java",
                             tmp_path_factory.mktemp("txn-probe"), kafka_classpath(), JSON_SOURCE)
    return made


@pytest.fixture(scope="module")
def probe(cluster: LocalCluster, classpath: str,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[LineProbe]:
    """One JVM for the module's producers and consumers, with SOURCE written: ABORTED in an
    aborted transaction, then COMMITTED in a committed one."""
    made = LineProbe(java_command(classpath, "TxnProbe", cluster.bootstrap_servers),
                     tmp_path_factory.mktemp("txn-probe-log") / "probe.log")
    try:
        made.call("producer", "source", "java-source")
        for values, end in ((ABORTED, "abort"), (COMMITTED, "commit")):
            made.call("begin", "source")
            for i, value in enumerate(values):
                made.call("send", "source", SOURCE, i % PARTITIONS, value)
            made.call("flush", "source")
            made.call(end, "source")
        made.call("close-producer", "source")
        yield made
    finally:
        made.close()


def stable_offsets(cluster: LocalCluster, group: str) -> Offsets:
    found: dict[int, tuple[str, int]] = group_stable_offsets(cluster, group, SOURCE, PARTITIONS)
    return found


def none_committed(error: str = "NONE") -> Offsets:
    return {p: (error, -1) for p in range(PARTITIONS)}


def transform(probe: LineProbe, producer: str, consumer: str, sink: str) -> dict[int, int]:
    """Producer ``producer`` (a transaction open) writes what ``consumer`` reads of SOURCE
    upper-cased to ``sink`` and sends the consumer's positions with its transaction; checks
    that exactly COMMITTED was read, each record once, in offset order per partition; the
    positions sent."""
    done = probe.call("transform", producer, consumer, sink, len(COMMITTED))
    read = [entry.split(":", 2) for entry in done["read"]]
    assert sorted(value for _, _, value in read) == sorted(COMMITTED)
    for partition in range(PARTITIONS):
        offsets = [int(offset) for p, offset, _ in read if int(p) == partition]
        assert offsets == sorted(set(offsets))
        assert {value for p, _, value in read if int(p) == partition} == set(
            COMMITTED[partition::PARTITIONS])
    return {int(p): int(position) for p, position in done["positions"].items()}


def test_consumed_offsets_commit_with_the_transaction_and_only_then(
        cluster: LocalCluster, probe: LineProbe, transaction_version: int) -> None:
    """Aborted: no output, no offsets, and a new member of the group reads SOURCE again from
    the start; committed: the output once and the offsets past the last COMMIT marker. At
    transaction.version 2 the client bumped its epoch at the abort (KIP-890 part 2), before
    it kept it."""
    group = "java-transformers"
    probe.call("producer", "transformer", "java-transformer")

    probe.call("consumer", "first", group, SOURCE)
    probe.call("begin", "transformer")
    assert transform(probe, "transformer", "first", SINK) == SOURCE_END
    assert stable_offsets(cluster, group) == none_committed("UNSTABLE_OFFSET_COMMIT")
    probe.call("abort", "transformer")
    probe.call("close-consumer", "first")
    assert stable_offsets(cluster, group) == none_committed()

    probe.call("consumer", "second", group, SOURCE)  # nothing committed: from the start
    probe.call("begin", "transformer")
    assert transform(probe, "transformer", "second", SINK) == SOURCE_END
    assert stable_offsets(cluster, group) == none_committed("UNSTABLE_OFFSET_COMMIT")
    probe.call("commit", "transformer")
    probe.call("close-consumer", "second")
    assert stable_offsets(cluster, group) == {p: ("NONE", SOURCE_END[p])
                                              for p in range(PARTITIONS)}

    upper = sorted(value.upper() for value in COMMITTED)
    assert sorted(probe.call("read", SINK, PARTITIONS, "read_committed", len(upper))) == upper
    # both rounds' records are in the log: the first one's are hidden by its ABORT marker
    assert sorted(probe.call("read", SINK, PARTITIONS, "read_uncommitted", 2 * len(upper))) == (
        sorted(upper * 2))
    for aborted, committed in transaction_epochs(cluster, SINK).values():
        assert committed == aborted + (1 if transaction_version == 2 else 0)


def test_a_new_producer_fences_the_zombie(cluster: LocalCluster, probe: LineProbe) -> None:
    """The zombie's transaction (records and a group's offsets) is open when a producer with
    its transactional id initializes: the coordinator aborts it, the zombie's commit fails as
    fenced, and only the successor's records are read."""
    group = "java-zombies"
    probe.call("producer", "zombie", "java-fenced")
    probe.call("consumer", "zombie-reader", group, SOURCE)
    probe.call("begin", "zombie")
    transform(probe, "zombie", "zombie-reader", ZOMBIE_SINK)
    probe.call("producer", "successor", "java-fenced")  # fences the zombie, aborts its txn
    with pytest.raises(ProbeError) as fenced:
        probe.call("commit", "zombie")
    assert fenced.value.error in {"ProducerFencedException", "InvalidProducerEpochException"}
    probe.call("close-consumer", "zombie-reader")
    probe.call("close-producer", "zombie")
    assert stable_offsets(cluster, group) == none_committed()

    probe.call("begin", "successor")
    for partition in range(PARTITIONS):
        probe.call("send", "successor", ZOMBIE_SINK, partition, f"successor-{partition}")
    probe.call("commit", "successor")
    assert sorted(probe.call("read", ZOMBIE_SINK, PARTITIONS, "read_committed", 2)) == [
        "successor-0", "successor-1"]
    assert sorted(probe.call("read", ZOMBIE_SINK, PARTITIONS, "read_uncommitted", 22)) == (
        sorted(["successor-0", "successor-1", *(v.upper() for v in COMMITTED)]))
