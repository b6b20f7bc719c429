"""A replica's copy in another log directory while AlterReplicaLogDirs moves it: Kafka's
future replica, fed as a follower of the partition's current local log
(``ReplicaAlterLogDirsThread`` with its ``LocalLeaderEndPoint``). No sockets, clocks or
event loop: :mod:`pykraft.broker.log_dir_mover` drives it and passes ``now_ms`` in.

Interface::

    future = FutureReplica.load(future_log, partition=name, now_ms=..., expiration_ms=...)
    copied = copy_step(hosted, future, max_bytes, now_ms)  # bytes appended to the future
    future.log_end_offset == hosted.log_end_offset         # caught up
    swap_in(hosted, logs.replace_current_with_future(...))  # the future becomes the log

A copy step first makes the future a prefix of the current log, as a follower's
truncation does with its leader (the current log may have been truncated since, or
restarted past the future's end by its log start), then appends what the current log
holds past the future's end (read up to its log end, not the high watermark: Kafka's
``FetchIsolation.LOG_END``), and takes the current high watermark and log start offset.
The current replica serves reads and writes throughout; the swap happens in one step of
the loop, where nothing appends in between.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.broker.follower_log import append_as_follower, truncate_fully_and_start_at, truncate_to
from pykraft.broker.replica_manager import HostedPartition
from pykraft.log.producer_snapshot_files import load_producer_state
from pykraft.log.producer_state import ProducerStateManager
from pykraft.replica.follower import truncation_for
from pykraft.storage.partition_log import PartitionLog


@dataclass(slots=True)
class FutureReplica:
    """The future log and the producer state its copied batches build (written to its own
    snapshots as segments roll, so a restart resumes from them)."""

    log: PartitionLog
    producer_state: ProducerStateManager
    high_watermark: int = 0

    @classmethod
    def load(cls, future_log: PartitionLog, *, partition: str, now_ms: int,
             expiration_ms: int) -> FutureReplica:
        return cls(future_log, load_producer_state(future_log, partition=partition,
                                                   now_ms=now_ms, expiration_ms=expiration_ms))

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def notify(self) -> None:
        """Nobody reads a future replica: nothing waits on it."""


def copy_step(current: HostedPartition, future: FutureReplica, max_bytes: int,
              now_ms: int) -> int:
    """Make the future a prefix of the current log, then append up to ``max_bytes`` of
    what follows (the first batch whole); returns the bytes appended."""
    _align(current.log, future, now_ms)
    records = current.log.read(future.log_end_offset, max_bytes)
    return append_as_follower(future, records, leader_high_watermark=current.high_watermark,
                              leader_log_start_offset=current.log_start_offset, now_ms=now_ms)


def _align(source: PartitionLog, future: FutureReplica, now_ms: int) -> None:
    """Truncate the future where it left the current log (Kafka's future-replica
    truncation by OffsetForLeaderEpoch, asked of the local log)."""
    target = future.log
    if source.log_start_offset > target.log_end_offset:
        truncate_fully_and_start_at(future, source.log_start_offset, now_ms)
        return
    while (latest := target.leader_epochs.latest_epoch) is not None:
        epoch, end = source.leader_epochs.end_offset_for(latest, source.log_end_offset)
        cut = truncation_for(target.leader_epochs, target.log_end_offset, epoch, end,
                             target.log_end_offset)
        if cut.offset < target.log_end_offset:
            truncate_to(future, cut.offset, now_ms)
        if cut.completed or cut.offset >= target.log_end_offset:
            break
    if target.log_end_offset > source.log_end_offset:
        truncate_to(future, source.log_end_offset, now_ms)


def carry_epochs(current: PartitionLog, future: PartitionLog) -> None:
    """Give the future log the current one's epochs begun with no batch yet (a leader's
    epoch starts at its log end before it appends): copying batches cannot carry them,
    nor does a reopened log keep them (its recovery forgets epochs starting at its end)."""
    latest = future.leader_epochs.latest_epoch
    for epoch, start in current.leader_epochs.entries:
        if latest is None or epoch > latest:
            future.assign_epoch_start_offset(epoch, start)


def swap_in(hosted: HostedPartition, moved: PartitionLog) -> None:
    """The hosted replica serves from its moved log from now on; its producer state and
    high watermark stay (the moved log holds the same batches)."""
    moved.config = hosted.settings.log
    hosted.log = moved
    hosted.notify()
