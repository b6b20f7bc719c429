"""The log cleaner of a running broker follows a dynamic ``log.cleaner.*`` change made
with ``configs --alter --entity-type brokers --entity-default`` (pykraft's tool, and Kafka's
kafka-configs.sh on CI or when Kafka is fetched), as Kafka's ``LogCleaner.reconfigure``
does: 1 controller + 1 broker started with ``log.cleaner.backoff.ms`` of an hour, whose
cleaner passed once at start-up and then waits. A compacted topic gets 40 records over 4
keys in segments of 200 bytes; the cleaner does not touch them until the backoff is
lowered, then the restarted cleaner compacts them at once: each key's latest value stays
and ``cleaner-offset-checkpoint`` names the partition. Then the cluster-wide
``log.cleaner.min.cleanable.ratio`` (read at each pass) raised to 1.0 keeps the cleaner off
a log 40 more records made dirty, and lowered to 0.1 lets it clean them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from broker_harness import PROPERTIES, batches_on_disk, confluent_produce, create_topic
from broker_harness import running_cluster as running
from java_kafka import kafka_tool, tool_outcome
from oracle_kafka import fetched, in_ci
from process_harness import wait_for
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.ids import TopicPartition
from pykraft.log.log_manager import CLEANER_OFFSET_CHECKPOINT
from pykraft.storage.offset_checkpoints import read_offset_checkpoint
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "compacted"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
KEYS = 4
Tool = Callable[..., tuple[int, str]]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running(tmp_path, {**PROPERTIES, "log.cleaner.backoff.ms": "3600000"}) as made:
        yield made


def _tool(kind: str) -> Tool:
    if kind == "kafka" and not in_ci() and isinstance(fetched(), str):
        pytest.skip(str(fetched()))

    def run(cluster: LocalCluster, *args: str) -> tuple[int, str]:
        outcome: tuple[int, str] = tool_outcome(
            cluster, CONFIGS if kind == "kafka" else None,
            *(() if kind == "kafka" else ("configs",)), *args)
        return outcome
    return run


def _produce(cluster: LocalCluster, first: int, count: int) -> None:
    confluent_produce({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                       "linger.ms": 0, "batch.size": 1},
                      TOPIC, [(b"k%d" % (i % KEYS), b"v%d" % i, ()) for i in
                              range(first, first + count)])


def _values(cluster: LocalCluster) -> list[bytes]:
    return [record.value for batch in batches_on_disk(cluster, TOPIC) for record in batch]


def _checkpointed(cluster: LocalCluster, past: int = -1) -> int | None:
    """The partition's first dirty offset in ``cleaner-offset-checkpoint``, if past ``past``."""
    path = cluster.nodes[cluster.brokers[0]].data / CLEANER_OFFSET_CHECKPOINT
    found = read_offset_checkpoint(path).get(TopicPartition(TOPIC, 0)) if path.exists() else None
    return found if found is not None and found > past else None


def _set_default(tool: Tool, cluster: LocalCluster, key: str, value: str) -> None:
    code, out = tool(cluster, "--alter", "--entity-type", "brokers", "--entity-default",
                     "--add-config", f"{key}={value}")
    assert code == 0, out


@pytest.mark.parametrize("kind", ["pykraft", "kafka"])
def test_a_dynamic_change_reaches_the_running_cleaner(cluster: LocalCluster,
                                                      kind: str) -> None:
    tool = _tool(kind)
    create_topic(cluster.bootstrap_servers, TOPIC, 1, configs={
        "cleanup.policy": "compact", "internal.segment.bytes": "200"})
    _produce(cluster, 0, 40)
    assert len(_values(cluster)) == 40 and _checkpointed(cluster) is None
    _set_default(tool, cluster, "log.cleaner.backoff.ms", "200")
    end = wait_for("the cleaner's checkpoint of the compacted partition",
                   lambda: _checkpointed(cluster))
    values = _values(cluster)
    # the latest value of each key below the checkpoint; all from there on
    assert values[:KEYS] == [b"v%d" % i for i in range(end - KEYS, end)]
    assert values[KEYS:] == [b"v%d" % i for i in range(end, 40)]
    # ratio 1.0: a log with a clean part is never dirty enough; 0.1 lets the cleaner in
    _set_default(tool, cluster, "log.cleaner.min.cleanable.ratio", "1.0")
    _produce(cluster, 40, 40)
    assert _checkpointed(cluster) == end and len(_values(cluster)) == 40 - end + KEYS + 40
    _set_default(tool, cluster, "log.cleaner.min.cleanable.ratio", "0.1")
    wait_for("the cleaner past the new records", lambda: _checkpointed(cluster, past=end))
    assert len(_values(cluster)) < 40 - end + KEYS + 40


DOUBLE = ("Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads "
          "cannot be increased to more than double the current value 1 for configuration "
          "Invalid dynamic configuration")


@pytest.mark.parametrize("kind", ["pykraft", "kafka"])
def test_a_change_the_cleaner_refuses_is_answered_as_kafka_answers_it(
        cluster: LocalCluster, kind: str) -> None:
    """Kafka's broker refuses more than double the cleaner threads before forwarding the
    change (INVALID_REQUEST, Kafka 4.4's message, read from its kafka-configs.sh); the
    broker's own config then holds none of it, and 2 threads are taken."""
    _tool(kind)  # skips Kafka's tool where Kafka is not fetched
    args = ("--bootstrap-server", cluster.bootstrap_servers, "--alter", "--entity-type",
            "brokers", "--entity-default", "--add-config", "log.cleaner.threads=3")
    if kind == "kafka":
        done = kafka_tool(cluster, CONFIGS, *args[2:])
        code, output = done.returncode, done.stdout + done.stderr
        assert f"InvalidRequestException: {DOUBLE}" in output
    else:
        result = CliRunner().invoke(app, ["configs", *args])
        code, output = result.exit_code, result.stdout + result.stderr
        assert DOUBLE in output
    assert code == 1, output
    _set_default(_tool(kind), cluster, "log.cleaner.threads", "2")
