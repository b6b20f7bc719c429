"""Kafka record batch format v2 (magic 2): the unit of the log, of snapshots and of Fetch.

Layout (61-byte header, big-endian), see Kafka's ``DefaultRecordBatch``::

    0 baseOffset i64 | 8 length i32 | 12 partitionLeaderEpoch i32 | 16 magic i8 | 17 crc u32
    21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64 | 35 maxTimestamp i64
    43 producerId i64 | 51 producerEpoch i16 | 53 baseSequence i32 | 57 recordsCount i32

The CRC-32C covers bytes [21, end): baseOffset, length, partitionLeaderEpoch and magic are
outside it, so readers of a log must also check offsets and lengths (see ``storage.log``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import crc32c

from pykraft.errors import CorruptRecordError, UnsupportedCompressionError
from pykraft.records.varint import decode_varint, decode_varlong, encode_varint

MAGIC = 2
HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + length: the bytes the length field does not count
CRC_START = 21
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

_HEADER = struct.Struct(">qiibIhiqqqhii")


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch with its absolute offset and timestamp resolved."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed 61-byte header of a v2 record batch."""

    base_offset: int
    length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def compression(self) -> str:
        code = self.attributes & ATTR_COMPRESSION_MASK
        return COMPRESSION_NAMES.get(code, f"unknown({code})")

    @property
    def delete_horizon_ms(self) -> int | None:
        """Kafka stores the delete horizon in baseTimestamp when attribute bit 6 is set."""
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse and sanity-check the header at ``pos`` (not the CRC: see :class:`RecordBatch`)."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(
            f"truncated batch header: {len(buf) - pos} of {HEADER_SIZE} bytes", position=pos
        )
    header = BatchHeader(*_HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC:
        raise CorruptRecordError(
            f"unsupported record batch magic {header.magic} (only v2 is supported)", position=pos
        )
    if header.size < HEADER_SIZE:
        raise CorruptRecordError(
            f"batch length {header.length} is smaller than the header", position=pos
        )
    if header.records_count < 0 or header.last_offset_delta < 0:
        raise CorruptRecordError(
            f"negative record count {header.records_count} or last offset delta "
            f"{header.last_offset_delta}",
            position=pos,
        )
    return header


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A batch's header plus its raw bytes; records are decoded on demand."""

    header: BatchHeader
    data: bytes
    position: int = 0  # where the batch started in the buffer or file it came from

    @property
    def base_offset(self) -> int:
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        return self.header.last_offset

    @property
    def epoch(self) -> int:
        return self.header.partition_leader_epoch

    @property
    def is_control(self) -> bool:
        return self.header.is_control

    def computed_crc(self) -> int:
        return int(crc32c.crc32c(self.data[CRC_START:]))

    def crc_valid(self) -> bool:
        return self.computed_crc() == self.header.crc

    def verify(self) -> None:
        """Raise :class:`CorruptRecordError` unless the CRC matches and records decode."""
        if not self.crc_valid():
            raise CorruptRecordError(
                f"CRC mismatch: stored {self.header.crc:#010x}, "
                f"computed {self.computed_crc():#010x}",
                position=self.position,
            )

    def records(self) -> list[Record]:
        """Decode every record; raises :class:`CorruptRecordError` on any inconsistency."""
        return decode_records(self.header, self.data, self.position)

    def with_base_offset(self, base_offset: int, epoch: int | None = None) -> RecordBatch:
        """The same batch moved to a new base offset (and epoch): the CRC is unaffected."""
        new_epoch = self.header.partition_leader_epoch if epoch is None else epoch
        data = bytearray(self.data)
        struct.pack_into(">q", data, 0, base_offset)
        struct.pack_into(">i", data, 12, new_epoch)
        header = read_header(data)
        return RecordBatch(header, bytes(data), self.position)


def decode_records(header: BatchHeader, data: bytes, position: int = 0) -> list[Record]:
    """Decode the records of an uncompressed v2 batch held entirely in ``data``."""
    if header.attributes & ATTR_COMPRESSION_MASK:
        raise UnsupportedCompressionError(
            f"batch at offset {header.base_offset} is compressed with {header.compression}; "
            "KRaft logs are never compressed and pykraft does not decode compressed batches",
            position=position,
        )
    end = header.size
    if len(data) < end:
        raise CorruptRecordError(
            f"batch at offset {header.base_offset} needs {end} bytes, {len(data)} present",
            position=position,
        )
    records: list[Record] = []
    pos = HEADER_SIZE
    base_ts = header.base_timestamp
    base_off = header.base_offset
    for index in range(header.records_count):
        try:
            length, pos = decode_varint(data, pos, end)
            record_end = pos + length
            if length < 6 or record_end > end:
                raise CorruptRecordError(f"record {index} has invalid length {length}")
            attributes = data[pos]
            pos += 1
            ts_delta, pos = decode_varlong(data, pos, record_end)
            offset_delta, pos = decode_varint(data, pos, record_end)
            key, pos = _read_bytes(data, pos, record_end)
            value, pos = _read_bytes(data, pos, record_end)
            header_count, pos = decode_varint(data, pos, record_end)
            if header_count < 0 or header_count > record_end - pos:
                raise CorruptRecordError(f"record {index} has invalid header count {header_count}")
            headers: list[tuple[str, bytes | None]] = []
            for _ in range(header_count):
                hkey, pos = _read_bytes(data, pos, record_end)
                if hkey is None:
                    raise CorruptRecordError(f"record {index} has a null header key")
                hvalue, pos = _read_bytes(data, pos, record_end)
                headers.append((hkey.decode("utf-8", errors="replace"), hvalue))
            if pos != record_end:
                raise CorruptRecordError(
                    f"record {index} declares {length} bytes but its fields end at "
                    f"{pos - record_end + length}"
                )
        except CorruptRecordError as exc:
            raise CorruptRecordError(
                f"batch at offset {base_off}: {exc}", position=position
            ) from None
        if offset_delta > header.last_offset_delta:
            raise CorruptRecordError(
                f"batch at offset {base_off}: record offset delta {offset_delta} exceeds "
                f"last offset delta {header.last_offset_delta}",
                position=position,
            )
        records.append(
            Record(base_off + offset_delta, base_ts + ts_delta, key, value, tuple(headers),
                   attributes)
        )
    if pos != end:
        raise CorruptRecordError(
            f"batch at offset {base_off}: {end - pos} unexpected bytes after "
            f"{header.records_count} records",
            position=position,
        )
    return records


def _read_bytes(data: bytes, pos: int, limit: int) -> tuple[bytes | None, int]:
    length, pos = decode_varint(data, pos, limit)
    if length < 0:
        if length != -1:
            raise CorruptRecordError(f"invalid byte length {length}")
        return None, pos
    end = pos + length
    if end > limit:
        raise CorruptRecordError(f"byte field of length {length} overruns its record")
    return data[pos:end], end


def _encode_record(out: bytearray, offset_delta: int, key: bytes | None, value: bytes | None,
                   headers: Sequence[tuple[str, bytes | None]]) -> None:
    body = bytearray(b"\x00\x00")  # attributes 0, timestamp delta 0 (zig-zag of 0 is 0x00)
    body += encode_varint(offset_delta)
    if key is None:
        body += b"\x01"  # zig-zag -1
    else:
        body += encode_varint(len(key))
        body += key
    if value is None:
        body += b"\x01"
    else:
        body += encode_varint(len(value))
        body += value
    body += encode_varint(len(headers))
    for hkey, hvalue in headers:
        raw_key = hkey.encode("utf-8")
        body += encode_varint(len(raw_key))
        body += raw_key
        if hvalue is None:
            body += b"\x01"
        else:
            body += encode_varint(len(hvalue))
            body += hvalue
    out += encode_varint(len(body))
    out += body


def encode_batch(
    base_offset: int,
    records: Sequence[tuple[bytes | None, bytes | None]],
    *,
    partition_leader_epoch: int,
    timestamp: int,
    control: bool = False,
    headers: Sequence[Sequence[tuple[str, bytes | None]]] | None = None,
) -> bytes:
    """Build one uncompressed v2 batch the way KRaft does (timestamp deltas 0, no producer).

    ``records`` are (key, value) pairs; KRaft data records have ``key=None`` and control
    records a 4-byte key. KRaft never mixes the two kinds in one batch, so neither do we.
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    body = bytearray()
    for index, (key, value) in enumerate(records):
        _encode_record(body, index, key, value, headers[index] if headers else ())
    attributes = ATTR_CONTROL if control else 0
    count = len(records)
    out = bytearray(HEADER_SIZE)
    _HEADER.pack_into(
        out, 0, base_offset, HEADER_SIZE - LOG_OVERHEAD + len(body), partition_leader_epoch,
        MAGIC, 0, attributes, count - 1, timestamp, timestamp, NO_PRODUCER_ID,
        NO_PRODUCER_EPOCH, NO_SEQUENCE, count,
    )
    out += body
    struct.pack_into(">I", out, 17, crc32c.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def iter_batches(
    buf: bytes, *, verify_crc: bool = True, start: int = 0, base_position: int = 0
) -> Iterator[RecordBatch]:
    """Yield consecutive batches of ``buf``; a trailing partial batch raises.

    ``base_position`` is added to positions in errors and in :attr:`RecordBatch.position`,
    so a caller reading a slice of a file still reports file positions.
    """
    pos = start
    end = len(buf)
    while pos < end:
        header = read_header(buf, pos)
        if pos + header.size > end:
            raise CorruptRecordError(
                f"truncated batch at offset {header.base_offset}: needs {header.size} bytes, "
                f"{end - pos} present",
                position=base_position + pos,
            )
        batch = RecordBatch(header, bytes(buf[pos : pos + header.size]), base_position + pos)
        if verify_crc:
            batch.verify()
        yield batch
        pos += header.size
