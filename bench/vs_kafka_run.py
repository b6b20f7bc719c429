"""What ``bench/vs_kafka.py``'s workloads share: a fresh cluster of either system (1
controller + 3 brokers, Kafka's JVMs as ``kafka-server-start.sh`` runs them), and the rows
they record, each with the servers' CPU and memory meanwhile (:mod:`server_usage`)."""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from java_perf import JavaTools
from pykraft.tools.kafka_runtime import KafkaRuntime
from pykraft.tools.local_cluster import LocalCluster
from rdkafka_load import wait_brokers
from server_usage import Usage, measured

SYSTEMS = ("kafka", "pykraft")
BROKERS = 3
#: Both clusters get these (Kafka's own config/server.properties sets the group delay to 0
#: for a local cluster); otherwise each runs at its defaults.
CLUSTER_PROPERTIES = {"group.initial.rebalance.delay.ms": "0"}
LISTEN_TIMEOUT_S = 120.0
GB = 1e9
MB = 1e6


@dataclass
class Measurement:
    """One system's figures for one row, the servers' use meanwhile, and the payload bytes
    the servers took in, copied to followers and served (for CPU-seconds per GB)."""

    figures: dict[str, float]
    usage: Usage
    moved_bytes: int

    @property
    def cpu_s_per_gb(self) -> float:
        return self.usage.total_cpu_s / (self.moved_bytes / GB) if self.moved_bytes else 0.0

    def summary(self) -> dict[str, object]:
        return {"figures": {k: round(v, 3) for k, v in self.figures.items()},
                "moved_bytes": self.moved_bytes, "cpu_s_per_gb": round(self.cpu_s_per_gb, 2),
                "usage": self.usage.summary()}


@dataclass
class Results:
    """Rows in the order first measured: label -> system -> measurement."""

    rows: dict[str, dict[str, Measurement]] = field(default_factory=dict)
    workload_of: dict[str, str] = field(default_factory=dict)

    def add(self, workload: str, label: str, system: str, measurement: Measurement) -> None:
        self.rows.setdefault(label, {})[system] = measurement
        self.workload_of[label] = workload


@dataclass(frozen=True)
class Target:
    """One running cluster, as the workloads see it."""

    system: str
    cluster: LocalCluster
    tools: JavaTools
    args: argparse.Namespace

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def pids(self) -> dict[int, int]:
        """Each node's process now (a restarted node's new one)."""
        return dict(self.cluster.pids)

    @property
    def timeout_s(self) -> float:
        """Bound on one generator's run: well over its expected ``--seconds``."""
        return float(self.args.seconds * 6 + 120)

    def measure(self, results: Results, workload: str, label: str,
                run: Callable[[], tuple[dict[str, float], int]]) -> None:
        """Run one row's load under :func:`server_usage.measured` and record its figures and
        the payload bytes it moved."""
        with measured(lambda: self.pids) as usage:
            figures, moved_bytes = run()
        results.add(workload, label, self.system, Measurement(figures, usage, moved_bytes))


@contextmanager
def running(system: str, base: Path, kafka: KafkaRuntime, tools: JavaTools,
            args: argparse.Namespace, console: Console) -> Iterator[Target]:
    """A fresh 1 controller + 3 brokers cluster of ``system`` in ``base``; every node stopped
    by PID and ``base`` removed afterwards, also on an error or Ctrl-C."""
    shutil.rmtree(base, ignore_errors=True)
    if system == "kafka":
        cluster = LocalCluster.create(base, 0, CLUSTER_PROPERTIES, 0, kafka_controllers=1,
                                      kafka_brokers=BROKERS, kafka=kafka)
    else:
        cluster = LocalCluster.create(base, 1, CLUSTER_PROPERTIES, BROKERS)
    try:
        started = time.monotonic()
        cluster.start_all()
        cluster.wait_listening(list(cluster.nodes), LISTEN_TIMEOUT_S)
        wait_brokers(cluster.bootstrap_servers, BROKERS)
        console.print(f"{system}: {len(cluster.nodes)} nodes up in "
                      f"{time.monotonic() - started:.1f} s (pids {cluster.pids})", style="dim")
        yield Target(system, cluster, tools, args)
    finally:
        cluster.stop_all()
        shutil.rmtree(base, ignore_errors=True)


