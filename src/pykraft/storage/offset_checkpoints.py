"""The log directory's offset checkpoint files, in Kafka's ``CheckpointFile`` text format.

``recovery-point-offset-checkpoint`` (all data below the offset is flushed: recovery starts
there after a crash), ``log-start-offset-checkpoint`` (the log start offsets that moved past
their first segment's base, by retention or DeleteRecords) and
``replication-offset-checkpoint`` (high watermarks) all read::

    0
    <count>
    <topic> <partition> <offset>
    ...

Writes are crash-safe (:func:`pykraft.storage.fsutil.atomic_write`); a missing or empty file
reads as no entries, as in Kafka. Errors carry Kafka's wording.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pykraft.ids import TopicPartition
from pykraft.storage.file_error import StateFileError
from pykraft.storage.fsutil import atomic_write

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CHECKPOINT_VERSION = 0
_INT = re.compile(r"[+-]?[0-9]+")


def encode_offset_checkpoint(offsets: Mapping[TopicPartition, int]) -> bytes:
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    lines.extend(f"{tp.topic} {tp.partition} {offset}" for tp, offset in offsets.items())
    return "".join(line + "\n" for line in lines).encode("utf-8")


def decode_offset_checkpoint(data: bytes, source: str) -> dict[TopicPartition, int]:
    """Parse a checkpoint; a bad version, line or count is a :class:`StateFileError`."""
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise StateFileError(source, "checkpoint file is not UTF-8 text") from None
    if not lines:
        return {}
    if not _INT.fullmatch(lines[0].strip()) or int(lines[0]) != CHECKPOINT_VERSION:
        raise StateFileError(source, f"Unrecognized version of the checkpoint file: {lines[0]}")
    if len(lines) < 2:
        return {}
    if not _INT.fullmatch(lines[1].strip()):
        raise StateFileError(source, f"Malformed line in checkpoint file: '{lines[1]}'")
    expected = int(lines[1])
    offsets: dict[TopicPartition, int] = {}
    for line in lines[2:]:
        fields = line.split()
        if len(fields) != 3 or not all(_INT.fullmatch(field) for field in fields[1:]):
            raise StateFileError(source, f"Malformed line in checkpoint file: '{line}'")
        offsets[TopicPartition(fields[0], int(fields[1]))] = int(fields[2])
    if len(lines) - 2 != expected:
        raise StateFileError(source, f"Expected {expected} entries in checkpoint file, but "
                             f"found only {len(lines) - 2}")
    return offsets


def read_offset_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """The entries of ``path``; none if the file does not exist yet."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise StateFileError(path, f"cannot read: {exc.strerror or exc}") from None
    return decode_offset_checkpoint(data, str(path))


def write_offset_checkpoint(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    """Replace ``path`` atomically and durably (tmp, fsync, rename, fsync dir)."""
    atomic_write(path, encode_offset_checkpoint(offsets))
