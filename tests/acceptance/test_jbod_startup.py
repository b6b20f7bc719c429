"""A log directory already failed when the broker starts (issue 31 item 4, Kafka 4.4's
``LogManager.createAndValidateLogDirs``) on real processes: a broker of three restarts with
its second log directory unreadable (``chmod 000``); it starts, serves its first directory,
its replicas in the unreadable one stay offline (out of the ISR, led elsewhere), no
acknowledged record is lost; once the directory is readable again and the broker restarted,
those replicas rejoin their ISRs. With both directories unreadable the broker exits with a
clear error.

Root ignores permission bits, so when the tests run as root the broker runs without the
capabilities that let it (``setpriv`` dropping CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
from its bounding set): for it the directory is unreadable as for any other user.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from broker_harness import (
    PROPERTIES,
    broker_call,
    confluent_produce,
    partition_state,
    set_log_dirs,
    wait_for,
    wait_for_brokers,
)
from jbod_harness import consume_all, directory_id, registered_directories, spread_topic

from pykraft.messages.kafka.describe_log_dirs_request import DescribeLogDirsRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.local_cluster import LocalCluster

pytestmark = pytest.mark.timeout(300)

TOPIC = "jbod-start"
PARTITIONS = 4
RECORDS = 200
EXIT_TIMEOUT_S = 60


def _unprivileged() -> list[str]:
    """The command prefix running the broker subject to file permissions (see module)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: chmod 000 cannot be made to bite")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


def _produce(cluster: LocalCluster, first: int) -> list[bytes]:
    """``RECORDS`` records, acks=all and idempotent, over every partition: their values,
    each acknowledged (any delivery error fails the test)."""
    values = [b"%016d" % number for number in range(first, first + RECORDS)]
    confluent_produce({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                       "enable.idempotence": True, "linger.ms": 5},
                      TOPIC, [(value, value, ()) for value in values])
    return values


def _failed_at_start(log: Path, directory: Path) -> str | None:
    """The broker's log line saying ``directory`` failed, once there."""
    return next((line for line in log.read_text().splitlines()
                 if "event=log_dir_failed" in line and str(directory) in line), None)


def _restart(cluster: LocalCluster, broker: int, wrapper: list[str]) -> None:
    assert cluster.stop(broker) == 0
    cluster.start(broker, wrapper=wrapper)


def test_an_unreadable_log_dir_at_start_up_starts_offline(tmp_path: Path) -> None:
    wrapper = _unprivileged()
    cluster = LocalCluster.create(tmp_path / "cluster", 1, dict(PROPERTIES), brokers=3)
    victim, *others = cluster.brokers
    first, second = cluster.nodes[victim].data / "a", cluster.nodes[victim].data / "b"
    first.mkdir(parents=True)
    second.mkdir()
    set_log_dirs(cluster, victim, first, second)
    cluster.start_all()
    try:
        wait_for_brokers(cluster, 3)
        in_first, in_second = spread_topic(cluster, TOPIC, PARTITIONS, [victim, *others],
                                           first, second)
        acked = _produce(cluster, 0)

        second.chmod(0)
        _restart(cluster, victim, wrapper)
        line = wait_for("the start-up failure logged", lambda: _failed_at_start(
            cluster.nodes[victim].log, second))
        assert "Failed to create or validate data directory" in line
        assert "Permission denied" in line, line
        wait_for_brokers(cluster, 3)
        wait_for("registered with the readable dir only, as Kafka", lambda: True if (
            registered_directories(cluster, victim) == {directory_id(first)}) else None)
        for partition in in_first:  # served from the readable dir: back in the ISR
            wait_for(f"{partition} in sync again", lambda p=partition: True if (
                state := partition_state(cluster, victim, TOPIC, p)) is not None
                and len(state.isr) == 3 else None)
        for partition in in_second:  # offline: led elsewhere, out of the ISR
            state = partition_state(cluster, others[0], TOPIC, partition)
            assert state is not None and state.leader in others and victim not in state.isr
        described = broker_call(cluster, victim, DescribeLogDirsRequest(topics=None))
        errors = {Path(r.log_dir): ErrorCode(r.error_code) for r in described.results}
        assert errors == {first: ErrorCode.NONE, second: ErrorCode.KAFKA_STORAGE_ERROR}
        acked += _produce(cluster, RECORDS)
        seen = consume_all(cluster, TOPIC, PARTITIONS)
        assert set(acked) <= set(seen), "acknowledged records were lost"
        assert cluster.is_running(victim)
        assert "event=halting" not in cluster.nodes[victim].log.read_text()
        print(f"{len(acked)} acknowledged, {len(seen)} consumed; {line}")

        second.chmod(0o755)  # fixed: after a restart its replicas catch up and rejoin
        _restart(cluster, victim, [])
        wait_for("both dirs registered", lambda: True if registered_directories(
            cluster, victim) == {directory_id(first), directory_id(second)} else None)
        for partition in in_second:
            wait_for(f"{partition} back in the ISR", lambda p=partition: True if (
                state := partition_state(cluster, others[0], TOPIC, p)) is not None
                and victim in state.isr else None, 60)

        first.chmod(0)
        second.chmod(0)
        _restart(cluster, victim, wrapper)
        assert cluster.wait(victim, EXIT_TIMEOUT_S) == 1
        tail = cluster.nodes[victim].log.read_text().splitlines()[-1]
        assert re.match(r"Error: No readable meta\.properties files found: .*Permission "
                        r"denied", tail), tail
        assert str(first) in tail and str(second) in tail
    finally:
        first.chmod(0o755)
        second.chmod(0o755)
        for node_id in cluster.nodes:
            cluster.kill(node_id)
    shutil.rmtree(tmp_path / "cluster", ignore_errors=True)
