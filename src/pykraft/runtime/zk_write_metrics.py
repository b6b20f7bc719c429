"""A migrating controller's ZooKeeper write metrics: Kafka 3.9's ``QuorumControllerMetrics``
that exist only with ``zookeeper.metadata.migration.enable``, under
``kafka.controller:type=KafkaController`` (names per :mod:`pykraft.runtime.jmx_names`).

- ``ZkWriteBehindLag`` (a gauge): the controller's last committed offset less the offset of
  the last image dual-written to ZooKeeper; 0 on a controller that is not active and until
  its driver's first dual write (Kafka's ``dualWriteOffset`` of 0). It grows while ZooKeeper
  cannot be written and returns to 0 once the driver caught up.
- ``ZkWriteSnapshotTimeMs`` (a histogram, Kafka's Yammer histogram): one sample per full
  reconciliation — SYNC_KRAFT_TO_ZK's, a snapshot's in dual write, and pykraft's full sync
  of the latest image when more than 1,000 changes waited for ZooKeeper. Kafka 3.9 records
  SYNC_KRAFT_TO_ZK's as start less end, a negative number (KAFKA-20947); pykraft records the
  duration.
- ``ZkWriteDeltaTimeMs`` (a histogram): one sample per dual-written delta that touched what
  ZooKeeper holds (Kafka's ``handleDelta`` returning true, so that deltas of other records
  do not skew it); a delta ZooKeeper failed is timed by the attempt that wrote it.

The driver (:class:`~pykraft.migration.driver.MigrationDriver`, on its own thread) records
through its :class:`~pykraft.migration.driver.ZkWriteRecorder` port; a scrape reads on the
event loop. A lock keeps a histogram's buckets, sum and count one consistent reading.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from pykraft.runtime.jmx_names import prometheus_name
from pykraft.runtime.request_metrics import BUCKETS_MS

_BOUNDS = (*map(str, BUCKETS_MS), "+Inf")


class _Histogram:
    """Counts per bucket of :data:`BUCKETS_MS` (the last one +Inf) and their sum."""

    def __init__(self) -> None:
        self.counts = [0] * len(_BOUNDS)
        self.sum = 0.0

    def record(self, value_ms: int) -> None:
        self.counts[bisect_left(BUCKETS_MS, value_ms)] += 1
        self.sum += value_ms

    def buckets(self) -> list[tuple[str, float]]:
        cumulative, found = 0, []
        for bound, count in zip(_BOUNDS, self.counts, strict=True):
            cumulative += count
            found.append((bound, float(cumulative)))
        return found


class ZkWriteMetrics:
    """Implements :class:`~pykraft.migration.driver.ZkWriteRecorder`; see the module
    docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dual_write_offset = 0
        self._snapshot = _Histogram()
        self._delta = _Histogram()

    # -- the driver's port (its thread) --------------------------------------------------

    def zk_write_snapshot_time(self, duration_ms: int) -> None:
        with self._lock:
            self._snapshot.record(duration_ms)

    def zk_write_delta_time(self, duration_ms: int) -> None:
        with self._lock:
            self._delta.record(duration_ms)

    def dual_write_offset(self, offset: int) -> None:
        with self._lock:
            self._dual_write_offset = offset

    # -- the scrape ----------------------------------------------------------------------

    def write_behind_lag(self, committed_offset: int, *, active: bool) -> int:
        """Kafka's gauge: ``committed_offset`` (the controller's last committed offset) less
        the last dual-written one; 0 when not active or before a first dual write."""
        with self._lock:
            written = self._dual_write_offset
        return 0 if written == 0 or not active else committed_offset - written

    def families(self, committed_offset: int, *, active: bool) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            prometheus_name("kafka.controller", "KafkaController", "ZkWriteBehindLag"),
            "Committed metadata offsets not yet written to ZooKeeper (0 when not dual-writing)",
            value=self.write_behind_lag(committed_offset, active=active))
        with self._lock:
            readings = [(name, doc, histogram.buckets(), histogram.sum)
                        for name, doc, histogram in (
                            ("ZkWriteSnapshotTimeMs", "a full sync of an image", self._snapshot),
                            ("ZkWriteDeltaTimeMs", "a delta", self._delta))]
        for name, doc, buckets, total in readings:
            yield HistogramMetricFamily(
                prometheus_name("kafka.controller", "KafkaController", name),
                f"ms to write {doc} to ZooKeeper", buckets=buckets, sum_value=total)
