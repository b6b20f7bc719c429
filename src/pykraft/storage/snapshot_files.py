"""Snapshot files of the metadata log: naming, writing, reading and housekeeping.

A snapshot is named after its id ``(end_offset, epoch)`` as ``%020d-%010d.checkpoint``: the
end offset is exclusive and the epoch is the one of the last contained record. Its content
is plain v2 record batches whose offsets restart at 0. It is written as
``<name>.checkpoint.part`` and only becomes visible when frozen (fsync, rename, fsync dir),
so a crash never leaves a half snapshot under a real name; ``.part`` files are removed at
startup. Snapshots being retired are renamed to ``.checkpoint.deleted`` first, like Kafka
does before deleting them asynchronously. :func:`write_snapshot` adds the content framing
Kafka requires: a SnapshotHeader control batch first and a SnapshotFooter batch last.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import crc32c

from pykraft.errors import CorruptLogError, CorruptRecordError, StorageError
from pykraft.records.batch import (
    CRC_START,
    HEADER_SIZE,
    BatchHeader,
    RecordBatch,
    read_header,
)
from pykraft.records.snapshot import snapshot_batches
from pykraft.storage.fsutil import fsync_dir

CHECKPOINT_SUFFIX = ".checkpoint"
PART_SUFFIX = CHECKPOINT_SUFFIX + ".part"
DELETED_SUFFIX = CHECKPOINT_SUFFIX + ".deleted"
# Kafka names its partial files with Files.createTempFile("<id>-", ".checkpoint.part"),
# which inserts random digits; ours carry no infix.
_NAME = re.compile(r"([0-9]{20})-([0-9]{10})(?:(-[0-9]*)(?=\.checkpoint\.part$))?"
                   r"(\.checkpoint(?:\.part|\.deleted)?)")


@dataclass(frozen=True, order=True, slots=True)
class SnapshotId:
    """(end offset exclusive, epoch of the last contained record); ordered as Kafka does."""

    end_offset: int
    epoch: int

    def __post_init__(self) -> None:
        if not 0 <= self.end_offset < 10**20 or not 0 <= self.epoch < 2**31:
            raise ValueError(f"invalid snapshot id ({self.end_offset}, {self.epoch})")

    @property
    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}{CHECKPOINT_SUFFIX}"


def parse_snapshot_name(name: str) -> tuple[SnapshotId, str] | None:
    """(id, suffix) for a snapshot file name (frozen, ``.part`` or ``.deleted``), else None."""
    match = _NAME.fullmatch(name)
    if match is None or int(match.group(2)) >= 2**31:
        return None
    return SnapshotId(int(match.group(1)), int(match.group(2))), match.group(4)


def list_snapshots(directory: Path) -> list[SnapshotId]:
    """Frozen snapshots in ``directory``, oldest first; other files are ignored."""
    found: list[SnapshotId] = []
    for entry in directory.iterdir():
        parsed = parse_snapshot_name(entry.name)
        if parsed is not None and parsed[1] == CHECKPOINT_SUFFIX:
            found.append(parsed[0])
    return sorted(found)


def recover_snapshots(directory: Path) -> list[SnapshotId]:
    """Startup clean-up: delete unfinished ``.part`` and retired ``.deleted`` snapshots.

    Returns the frozen snapshots left. (Deleting snapshots below the log start offset is the
    raft layer's call, since it knows the log start.)
    """
    removed = False
    for entry in directory.iterdir():
        parsed = parse_snapshot_name(entry.name)
        if parsed is not None and parsed[1] in (PART_SUFFIX, DELETED_SUFFIX):
            entry.unlink()
            removed = True
    if removed:
        fsync_dir(directory)
    return list_snapshots(directory)


def mark_for_deletion(directory: Path, snapshot_id: SnapshotId) -> Path:
    """Rename a frozen snapshot to ``.deleted`` (readers holding it open keep working)."""
    source = directory / snapshot_id.file_name
    target = directory / (snapshot_id.file_name[: -len(CHECKPOINT_SUFFIX)] + DELETED_SUFFIX)
    try:
        os.replace(source, target)
    except FileNotFoundError:
        raise StorageError(f"cannot retire snapshot {source}: it does not exist") from None
    fsync_dir(directory)
    return target


class SnapshotWriter:
    """Builds ``<id>.checkpoint.part``; :meth:`freeze` publishes it, :meth:`abort` drops it."""

    def __init__(self, directory: Path, snapshot_id: SnapshotId) -> None:
        self.snapshot_id = snapshot_id
        self.path = directory / (snapshot_id.file_name[: -len(CHECKPOINT_SUFFIX)] + PART_SUFFIX)
        self._final = directory / snapshot_id.file_name
        if self._final.exists():
            raise StorageError(f"snapshot {self._final} already exists")
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise StorageError(f"a snapshot is already being written to {self.path}") from None
        self._size = 0
        self._next_offset = 0
        self._aligned = True
        self._done = False

    @property
    def size(self) -> int:
        return self._size

    def append(self, data: bytes) -> None:
        """Append whole batches, checked (header, CRC, offsets continuing from 0)."""
        self._check_active()
        if not self._aligned:
            raise StorageError(f"{self.path}: cannot append batches after unaligned bytes")
        next_offset = self._next_offset
        for header_pos, header in _framed_batches(data):
            if header.base_offset != next_offset:
                raise CorruptRecordError(
                    f"snapshot batch base offset {header.base_offset}, expected {next_offset}",
                    position=header_pos,
                )
            next_offset = header.next_offset
        self._write(data)
        self._next_offset = next_offset

    def append_unaligned(self, chunk: bytes) -> None:
        """Append raw bytes (a FetchSnapshot slice); the whole file is verified at freeze."""
        self._check_active()
        self._aligned = False
        self._write(chunk)

    def freeze(self) -> Path:
        """Fsync, rename to the final name, fsync the directory; returns the final path."""
        self._check_active()
        if not self._aligned:
            _verify_file(self.path, self._fd, self._size)
        os.fsync(self._fd)
        os.close(self._fd)
        self._done = True
        os.replace(self.path, self._final)
        fsync_dir(self._final.parent)
        return self._final

    def abort(self) -> None:
        """Discard the partial snapshot (no-op once frozen or aborted)."""
        if self._done:
            return
        self._done = True
        os.close(self._fd)
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> SnapshotWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.abort()

    def _write(self, data: bytes) -> None:
        with memoryview(data) as view:
            written = 0
            while written < len(view):
                written += os.pwrite(self._fd, view[written:], self._size + written)
        self._size += len(data)

    def _check_active(self) -> None:
        if self._done:
            raise StorageError(f"snapshot writer for {self.path} is already finished")


def write_snapshot(
    directory: Path,
    snapshot_id: SnapshotId,
    *,
    last_contained_timestamp: int,
    batches: Iterable[Sequence[bytes]],
    clock: Callable[[], int],
    header_records: Sequence[object] = (),
) -> Path:
    """Write and freeze a snapshot (see :func:`~pykraft.records.snapshot.snapshot_batches`);
    batches stream to disk."""
    with SnapshotWriter(directory, snapshot_id) as writer:
        for batch in snapshot_batches(
            epoch=snapshot_id.epoch, last_contained_timestamp=last_contained_timestamp,
            batches=batches, clock=clock, header_records=header_records,
        ):
            writer.append(batch)
        return writer.freeze()


class SnapshotReader:
    """A frozen snapshot (or ``bootstrap.checkpoint``) opened for reading."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise StorageError(f"cannot open snapshot {path}: {exc}") from None
        self.size = os.fstat(self._fd).st_size
        parsed = parse_snapshot_name(path.name)
        self.snapshot_id = parsed[0] if parsed else None

    def batches(self) -> Iterator[RecordBatch]:
        """Every batch, CRC-checked and offset-contiguous from 0; damage raises
        :class:`CorruptLogError` naming the file and byte position."""
        if self.size == 0:
            return
        with mmap.mmap(self._fd, self.size, access=mmap.ACCESS_READ) as mapped:
            yield from _checked_batches(str(self.path), mapped, self.size)

    def read_bytes(self, position: int, max_bytes: int) -> bytes:
        """A raw slice for FetchSnapshot (not batch aligned)."""
        if position < 0 or position > self.size or max_bytes < 0:
            raise StorageError(
                f"{self.path}: invalid slice at {position} of {max_bytes} bytes "
                f"(size {self.size})"
            )
        return os.pread(self._fd, min(max_bytes, self.size - position), position)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> SnapshotReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _framed_batches(data: bytes) -> list[tuple[int, BatchHeader]]:
    """Headers of the whole, CRC-valid batches making up ``data`` exactly."""
    found: list[tuple[int, BatchHeader]] = []
    with memoryview(data) as view:
        pos = 0
        while pos < len(data):
            header = read_header(view, pos)
            if header.size > len(data) - pos:
                raise CorruptRecordError(
                    f"truncated batch: {header.size} bytes declared, {len(data) - pos} present",
                    position=pos,
                )
            if crc32c.crc32c(view[pos + CRC_START : pos + header.size]) != header.crc:
                raise CorruptRecordError("batch CRC mismatch", position=pos)
            found.append((pos, header))
            pos += header.size
    return found


def _checked_batches(source: str, mapped: mmap.mmap, size: int) -> Iterator[RecordBatch]:
    pos = 0
    next_offset = 0
    with memoryview(mapped) as buf:
        while pos < size:
            try:
                header = read_header(buf, pos)
                if size - pos < header.size:
                    raise CorruptRecordError(
                        f"truncated batch: {header.size} bytes declared, {size - pos} present"
                    )
                batch = RecordBatch(header, bytes(buf[pos : pos + header.size]), pos)
                batch.verify()
            except CorruptRecordError as exc:
                raise CorruptLogError(source, pos, str(exc)) from None
            if header.base_offset != next_offset:
                raise CorruptLogError(
                    source, pos, f"batch base offset {header.base_offset}, expected {next_offset}"
                )
            yield batch
            next_offset = header.next_offset
            pos += header.size


def _verify_file(path: Path, fd: int, size: int) -> None:
    if size < HEADER_SIZE:
        raise CorruptLogError(str(path), 0, f"snapshot of {size} bytes holds no batch")
    with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as mapped:
        for _ in _checked_batches(str(path), mapped, size):
            pass
