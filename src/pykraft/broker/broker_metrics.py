"""A broker's Kafka metrics computed from its state when scraped (on the event loop, by
:class:`~pykraft.runtime.metrics.LoopCollector`): nothing is updated continuously but the
counters the request paths keep.

``kafka.server:type=ReplicaManager`` (names per :mod:`pykraft.runtime.jmx_names`): the
gauges LeaderCount, PartitionCount, UnderReplicatedPartitions (led partitions whose ISR is
smaller than their replicas), UnderMinIsrPartitionCount and AtMinIsrPartitionCount (led
partitions whose ISR is below, or at, ``min.insync.replicas``), OfflineReplicaCount (the
replicas of log directories that failed while the broker ran,
:mod:`pykraft.log.log_dir_failure`), and the counters
IsrShrinksPerSec and IsrExpandsPerSec. ``kafka.log:type=LogManager``
OfflineLogDirectoryCount and LogDirectoryOffline per directory. ``BrokerTopicMetrics``:
:mod:`pykraft.broker.topic_metrics`. ``kafka.log:type=LogCleaner`` max-clean-time-secs and
``LogCleanerManager`` time-since-last-run-ms, from the cleaner's last pass (absent before
one ran, or with ``log.cleaner.enable=false``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pykraft.broker.replica_manager import ReplicaManager
from pykraft.runtime.jmx_names import prometheus_name


def _replica_manager(name: str) -> str:
    return prometheus_name("kafka.server", "ReplicaManager", name)


def broker_families(replicas: ReplicaManager) -> Iterator[Metric]:
    """Every family of the broker's state (see the module docstring)."""
    hosted = replicas.partitions
    stats = replicas.topic_stats
    stats.retain({tp.topic for tp in hosted})
    yield from stats.families()
    leaders = under = under_min = at_min = 0
    for partition in hosted.values():
        if not partition.is_leader:
            continue
        leaders += 1
        isr = len(partition.isr)
        under += isr < len(partition.replicas)
        under_min += isr < partition.min_isr
        at_min += isr == partition.min_isr
    gauges = {
        "LeaderCount": (leaders, "Partitions this broker leads"),
        "PartitionCount": (len(hosted), "Partitions this broker hosts"),
        "UnderReplicatedPartitions": (under, "Led partitions whose ISR lacks a replica"),
        "UnderMinIsrPartitionCount": (under_min, "Led partitions with ISR < min.insync.replicas"),
        "AtMinIsrPartitionCount": (at_min, "Led partitions with ISR = min.insync.replicas"),
        "OfflineReplicaCount": (replicas.offline_count, "Replicas in failed log dirs"),
    }
    for name, (value, doc) in gauges.items():
        yield GaugeMetricFamily(_replica_manager(name), doc, value=value)
    yield from _log_dir_families(replicas)
    yield CounterMetricFamily(_replica_manager("IsrShrinksPerSec"),
                              "ISR shrinks of led partitions committed", value=replicas.isr_shrinks)
    yield CounterMetricFamily(_replica_manager("IsrExpandsPerSec"),
                              "ISR expansions of led partitions committed",
                              value=replicas.isr_expands)
    if replicas.cleaner_runs is not None:
        ended, longest = replicas.cleaner_runs
        yield GaugeMetricFamily(
            prometheus_name("kafka.log", "LogCleaner", "max-clean-time-secs"),
            "The longest log cleaning of the cleaner's last pass (s)", value=longest)
        yield GaugeMetricFamily(
            prometheus_name("kafka.log", "LogCleanerManager", "time-since-last-run-ms"),
            "Time since the cleaner's last pass ended (ms)",
            value=(time.monotonic() - ended) * 1000)


def _log_dir_families(replicas: ReplicaManager) -> Iterator[Metric]:
    """``kafka.log:type=LogManager``: OfflineLogDirectoryCount, and LogDirectoryOffline (1
    or 0) per ``logDirectory`` (its absolute path), as Kafka's LogManager registers them."""
    offline = replicas.logs.failures.offline
    yield GaugeMetricFamily(prometheus_name("kafka.log", "LogManager", "OfflineLogDirectoryCount"),
                            "Log directories offline", value=len(offline))
    each = GaugeMetricFamily(prometheus_name("kafka.log", "LogManager", "LogDirectoryOffline"),
                             "1 if the log directory is offline", labels=["logDirectory"])
    for directory in replicas.logs.log_dirs:
        each.add_metric([str(directory.absolute())], float(directory in offline))
    yield each
