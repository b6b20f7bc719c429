"""Helpers for Kafka brokers on a pykraft controller quorum: who leads the quorum, polls
with a deadline, Kafka's console clients, and the errors a Kafka node logged."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from oracle_cluster import CONTROLLER, KafkaInstall, Node, OracleCluster, call

from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.protocol.apis import ApiKey

POLL_S = 0.2
TOOL_TIMEOUT_S = 120.0
CONTROLLERS_ENDPOINT_TYPE = 2
#: The first line of a Kafka log entry: its timestamp, then its level.
_ENTRY = re.compile(r"^\[[^\]]+\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ")


def wait_until(what: str, probe: Callable[[], bool], timeout_s: float = 90.0) -> None:
    """Poll ``probe`` (another process's state: polling is the only way to see it)."""
    deadline = time.monotonic() + timeout_s
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} after {timeout_s:.0f} s")
        time.sleep(POLL_S)


def active_controller(cluster: OracleCluster) -> int | None:
    """The quorum's leader as a running controller's DescribeCluster names it."""
    for node in cluster.controllers:
        if not cluster.is_running(node):
            continue
        try:
            answer = call(node.listener(CONTROLLER), ApiKey.DESCRIBE_CLUSTER, 2,
                          DescribeClusterRequest(endpoint_type=CONTROLLERS_ENDPOINT_TYPE),
                          timeout_s=5.0)
        except OSError:
            continue
        if answer.error_code == 0 and int(answer.controller_id) >= 0:
            return int(answer.controller_id)
    return None


def console_produce(kafka: KafkaInstall, bootstrap: str, topic: str,
                    values: list[str]) -> None:
    """Kafka's console producer (the Java producer: idempotent, acks=all by default)."""
    done = subprocess.run(
        kafka.java("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", bootstrap,
                   "--topic", topic, log_level="WARN"),
        input="".join(f"{v}\n" for v in values), capture_output=True, text=True,
        timeout=TOOL_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def console_consume(kafka: KafkaInstall, bootstrap: str, topic: str, group: str,
                    count: int) -> list[str]:
    """``count`` values read by Kafka's console consumer in ``group`` (which commits)."""
    done = subprocess.run(
        kafka.java("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
                   bootstrap, "--topic", topic, "--group", group, "--from-beginning",
                   "--max-messages", str(count), "--timeout-ms", "60000", log_level="WARN"),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
        check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


#: What Kafka's nodes log at ERROR without pykraft too (each seen in a cluster of 3 Kafka
#: controllers and 2 Kafka brokers whose leader was SIGKILLed three times, unless said
#: otherwise), as regular expressions searched in an entry with its stack trace:
KAFKA_OWN_ERRORS = (
    # a controller answering a request (a broker's heartbeat, a controller's registration)
    # sent to it before it took up, or after it lost, the leadership
    r"ERROR \[ControllerApis nodeId=\d+\] Unexpected error handling request.*\n?.*"
    r"NotControllerException",
    # a controller stopped while no other leads cannot hand its leadership over
    r"ERROR \[RaftManager id=\d+\] Graceful shutdown of RaftClient failed",
    # Kafka's own words on the internal.metadata.log.segment.bytes these tests set (on any
    # node given it)
    r"ERROR .*Overriding internal\.metadata\.log\.segment\.bytes is only supported for "
    r"testing",
    # a controller whose event queue took longer than a heartbeat's deadline to reach it
    # (QuorumController: the heartbeat is counted, not lost); seen once on a machine at
    # load average 8 on 2 cores, from a pykraft broker's heartbeat sent at Kafka's interval
    r"ERROR .*processExpiredBrokerHeartbeat: controller event queue overloaded",
)


def logged_errors(node: Node, allowed: tuple[str, ...] = ()) -> list[str]:
    """The entries a Kafka node logged at ERROR (a stack trace is part of the entry it
    follows: Kafka's fetchers log a closed connection's trace at INFO), but for those
    :data:`KAFKA_OWN_ERRORS` or ``allowed`` (regular expressions) match."""
    entries: list[tuple[str, list[str]]] = []
    for line in _log_text(node.log).splitlines():
        header = _ENTRY.match(line)
        if header is not None:
            entries.append((header.group(1), [line]))
        elif entries:
            entries[-1][1].append(line)
    return ["\n".join(lines) for level, lines in entries
            if level == "ERROR" and not any(
                re.search(pattern, "\n".join(lines)) for pattern in (*KAFKA_OWN_ERRORS, *allowed))]


def _log_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
