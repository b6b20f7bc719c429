"""A broker's Kafka metrics computed from its state when scraped (on the event loop, by
:class:`~pykraft.runtime.metrics.LoopCollector`): nothing is updated continuously but the
counters the request paths keep.

``kafka.server:type=ReplicaManager`` (names per :mod:`pykraft.runtime.jmx_names`): the
gauges LeaderCount, PartitionCount, UnderReplicatedPartitions (led partitions whose ISR is
smaller than their replicas), UnderMinIsrPartitionCount and AtMinIsrPartitionCount (led
partitions whose ISR is below, or at, ``min.insync.replicas``), OfflineReplicaCount (the
replicas of log directories that failed while the broker ran,
:mod:`pykraft.log.log_dir_failure`), and the counters IsrShrinksPerSec and
IsrExpandsPerSec. ``kafka.log:type=LogManager`` OfflineLogDirectoryCount and
LogDirectoryOffline per directory. ``BrokerTopicMetrics``:
:mod:`pykraft.broker.topic_metrics`. The log cleaner's ``kafka.log:type=LogCleaner`` and
``LogCleanerManager`` gauges, when a cleaner runs: :func:`cleaner_families`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from pykraft.broker.cleaner_state import CleanerState
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
    if replicas.cleaner.started:
        yield from cleaner_families(replicas.cleaner, replicas.logs.log_dirs)


def cleaner_families(cleaner: CleanerState, log_dirs: Iterable[Path]) -> Iterator[Metric]:
    """``kafka.log:type=LogCleaner`` and ``LogCleanerManager`` (Kafka 4.4's names), as
    Kafka's gauges: whole numbers but for time-since-last-run-ms (once a pass ran), 0
    before any cleaning (Kafka 4.4 shows max-clean-time-secs as minus the epoch seconds
    then); the uncleanable gauges for each log directory, as Kafka registers them."""
    def log_gauge(mbean_type: str, name: str, doc: str, value: float) -> GaugeMetricFamily:
        return GaugeMetricFamily(prometheus_name("kafka.log", mbean_type, name), doc,
                                 value=value)

    yield log_gauge("LogCleaner", "max-buffer-utilization-percent",
                    "Largest offset map use of the last cleaning (%)",
                    int(cleaner.buffer_utilization * 100))
    yield log_gauge("LogCleaner", "cleaner-recopy-percent",
                    "Bytes written over bytes read by the last cleaning (%)",
                    int(cleaner.recopy_ratio * 100))
    yield log_gauge("LogCleaner", "max-clean-time-secs",
                    "Longest log cleaning of the last pass (s)", int(cleaner.max_clean_time_s))
    yield log_gauge("LogCleaner", "max-compaction-delay-secs",
                    "Longest time a log waited past max.compaction.lag.ms (s)",
                    int(cleaner.max_compaction_delay_ms / 1000))
    yield log_gauge("LogCleaner", "DeadThreadCount", "Cleaner threads that died",
                    cleaner.dead_threads)
    yield log_gauge("LogCleanerManager", "max-dirty-percent",
                    "Largest dirty ratio of the compacted logs (%)",
                    int(cleaner.max_dirty_ratio * 100))
    if cleaner.last_pass_ended is not None:
        yield log_gauge("LogCleanerManager", "time-since-last-run-ms",
                        "Time since the cleaner's last pass ended (ms)",
                        (time.monotonic() - cleaner.last_pass_ended) * 1000)
    directories = sorted(log_dirs)
    for mbean_name, doc, values in (
            ("uncleanable-partitions-count", "Partitions the cleaner gave up on", {
                d: sum(1 for other in cleaner.uncleanable.values() if other == d)
                for d in directories}),
            ("uncleanable-bytes", "Cleanable bytes of the partitions the cleaner gave up on",
             cleaner.uncleanable_bytes)):
        family = GaugeMetricFamily(prometheus_name("kafka.log", "LogCleanerManager",
                                                   mbean_name), doc, labels=["logDirectory"])
        for directory in directories:
            family.add_metric([str(directory)], values.get(directory, 0))
        yield family


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
