"""The leader-epoch cache: at which offset each leader epoch's first batch starts.

It answers "where does epoch E end?" for Fetch validation and divergence detection (the
``endOffsetForEpoch`` of KRaft's ``validateOffsetAndEpoch``). Semantics follow Kafka's
``LeaderEpochFileCache``. Kafka also checkpoints it to ``leader-epoch-checkpoint`` as text:
``0\\n<count>\\n<epoch> <startOffset>\\n...``.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Iterable
from pathlib import Path

from pykraft.errors import StorageError
from pykraft.storage.fsutil import atomic_write

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
_CHECKPOINT_VERSION = 0
_NUMBER = re.compile(r"[+-]?[0-9]+")

log = logging.getLogger(__name__)


class LeaderEpochCache:
    """Strictly increasing (epoch, start offset) pairs; not thread-safe (one raft loop)."""

    def __init__(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for epoch, start in entries:
            self.assign(epoch, start)

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed.

        Like Kafka, an entry that is not after the latest one evicts every entry with an
        epoch or start offset at or above it, so the cache stays monotonic.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid epoch entry ({epoch}, {start_offset})")
        if self._epochs and epoch == self._epochs[-1] and start_offset >= self._starts[-1]:
            return False
        keep = len(self._epochs)
        while keep and (self._epochs[keep - 1] >= epoch or self._starts[keep - 1] >= start_offset):
            keep -= 1
        removed = self.entries[keep:]
        if len(removed) > 1 or (removed and removed[0][1] != start_offset):
            log.warning("leader epoch entry (%d, %d) replaces non-monotonic entries %s",
                        epoch, start_offset, removed)
        del self._epochs[keep:], self._starts[keep:]
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) of the largest known epoch <= ``epoch``, as Kafka answers it.

        The latest epoch ends at the log end offset; an older epoch ends where the next
        known epoch starts. Unknown/too-new epochs give (-1, -1). An epoch older than every
        entry gives (epoch, first start offset): the log was truncated past it.
        """
        if epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if self._epochs and self._epochs[-1] == epoch:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if higher == 0:
            return epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    def truncate_from_end(self, end_offset: int) -> bool:
        """Forget epochs starting at or after ``end_offset`` (the log was truncated there)."""
        keep = bisect.bisect_left(self._starts, end_offset)
        if keep == len(self._starts):
            return False
        del self._epochs[keep:], self._starts[keep:]
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """Drop entries before a new log start; the epoch in force there moves to it."""
        removed = bisect.bisect_right(self._starts, start_offset)
        if removed == 0:
            return False
        epoch = self._epochs[removed - 1]
        changed = removed > 1 or self._starts[0] != start_offset
        del self._epochs[:removed], self._starts[:removed]
        self._epochs.insert(0, epoch)
        self._starts.insert(0, start_offset)
        return changed

    def clear(self) -> None:
        self._epochs.clear()
        self._starts.clear()


def encode_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> bytes:
    pairs = list(entries)
    lines = [str(_CHECKPOINT_VERSION), str(len(pairs))]
    lines.extend(f"{epoch} {start}" for epoch, start in pairs)
    return ("\n".join(lines) + "\n").encode("ascii")


def decode_epoch_checkpoint(data: bytes, source: str) -> list[tuple[int, int]]:
    """Parse and validate a checkpoint; entries must be non-negative and increasing."""
    try:
        lines = data.decode("ascii").split("\n")
    except UnicodeDecodeError:
        raise StorageError(f"{source}: leader epoch checkpoint is not ASCII text") from None
    if lines[-1] != "":
        raise StorageError(f"{source}: leader epoch checkpoint does not end with a newline")
    lines.pop()
    if lines in ([], [str(_CHECKPOINT_VERSION)]):
        # Kafka's CheckpointFile reads a file that ends before its count line as no entries:
        # it creates the file empty with the partition (a ZooKeeper-era broker's idle ones)
        return []
    if len(lines) < 2 or lines[0] != str(_CHECKPOINT_VERSION):
        raise StorageError(f"{source}: unsupported leader epoch checkpoint version line "
                           f"{lines[0] if lines else ''!r}")
    if not lines[1].isdigit() or int(lines[1]) != len(lines) - 2:
        raise StorageError(f"{source}: entry count line {lines[1]!r} does not match the "
                           f"{len(lines) - 2} entries present")
    entries: list[tuple[int, int]] = []
    for number, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != 2 or not all(_NUMBER.fullmatch(part) for part in parts):
            raise StorageError(f"{source}: line {number} {line!r} is not '<epoch> <offset>'")
        epoch, start = int(parts[0]), int(parts[1])
        if epoch < 0 or start < 0 or (entries and (epoch <= entries[-1][0]
                                                   or start <= entries[-1][1])):
            raise StorageError(f"{source}: line {number} entry ({epoch}, {start}) is negative "
                               "or not after the previous entry")
        entries.append((epoch, start))
    return entries


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from None
    return decode_epoch_checkpoint(data, str(path))


def write_epoch_checkpoint(path: Path, entries: Iterable[tuple[int, int]]) -> None:
    atomic_write(path, encode_epoch_checkpoint(entries))
