"""Kafka's producer state snapshot, ``<offset %020d>.snapshot``, as bytes (sans-I/O).

Layout (``ProducerSnapshot.json`` v1, big-endian, version-prefixed, not flexible)::

    version i16 (=1) | crc u32 (CRC-32C of every byte after it) | count i32 |
    count x {producerId i64, epoch i16, lastSequence i32, lastOffset i64, offsetDelta i32,
             timestamp i64, coordinatorEpoch i32, currentTxnFirstOffset i64 (-1: none)}

Only each producer's last batch is kept, so after a restart a retry can be recognised only if
it repeats that batch. Writing the file (and fsync, rename) is
:mod:`pykraft.log.producer_snapshot_files`' job: :func:`encode_snapshot` gives its bytes,
:func:`decode_snapshot` reads them back.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Final

import crc32c

from pykraft.errors import PyKraftError
from pykraft.log.producer_state import BatchMetadata, ProducerStateEntry

VERSION: Final = 1
SUFFIX: Final = ".snapshot"
_PREFIX = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_START = 6  # after version and crc


class CorruptSnapshotError(PyKraftError):
    """Producer snapshot bytes that are not a valid v1 snapshot (Kafka's message)."""


def snapshot_file_name(offset: int) -> str:
    """``00000000000000000042.snapshot`` for the state at log offset 42."""
    return f"{offset:020d}{SUFFIX}"


def snapshot_offset(name: str) -> int:
    """The offset a snapshot file name stands for; ValueError if it is not one."""
    stem = name.removesuffix(SUFFIX)
    if stem == name or not stem.isdigit():
        raise ValueError(f"{name!r} is not a producer snapshot file name")
    return int(stem)


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    """The snapshot file's bytes for ``entries`` (in the order given)."""
    items = list(entries)
    out = bytearray(_PREFIX.size + _ENTRY.size * len(items))
    _PREFIX.pack_into(out, 0, VERSION, 0, len(items))
    for index, e in enumerate(items):
        txn = -1 if e.current_txn_first_offset is None else e.current_txn_first_offset
        _ENTRY.pack_into(out, _PREFIX.size + index * _ENTRY.size, e.producer_id,
                         e.producer_epoch, e.last_seq, e.last_data_offset, e.last_offset_delta,
                         e.last_timestamp, e.coordinator_epoch, txn)
    struct.pack_into(">I", out, 2, crc32c.crc32c(memoryview(out)[_CRC_START:]))
    return bytes(out)


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """The entries of a snapshot file; CorruptSnapshotError names what is wrong."""
    if len(data) < 2:
        raise CorruptSnapshotError("Snapshot failed schema validation: file too short")
    version, = struct.unpack_from(">h", data)
    if version != VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    if len(data) < _PREFIX.size:
        raise CorruptSnapshotError("Snapshot failed schema validation: file too short")
    _, crc, count = _PREFIX.unpack_from(data)
    if count < 0 or len(data) < _PREFIX.size + count * _ENTRY.size:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: {count} entries do not fit in {len(data)} bytes")
    computed = crc32c.crc32c(memoryview(data)[_CRC_START:])
    if crc != computed:
        raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: "
                                   f"{crc}. Computed crc: {computed}")
    entries = []
    for pid, epoch, last_seq, last_offset, delta, timestamp, coordinator_epoch, txn in (
            _ENTRY.iter_unpack(data[_PREFIX.size : _PREFIX.size + count * _ENTRY.size])):
        entry = ProducerStateEntry(pid, epoch, coordinator_epoch, timestamp,
                                   txn if txn >= 0 else None)
        if last_offset >= 0:
            entry.batches.append(BatchMetadata(last_seq, last_offset, delta, timestamp))
        entries.append(entry)
    return entries
