"""Kafka record batch format v2 (magic 2): the unit of the log, of snapshots and of Fetch.

Layout (61-byte header, big-endian), see Kafka's ``DefaultRecordBatch``::

    0 baseOffset i64 | 8 length i32 | 12 partitionLeaderEpoch i32 | 16 magic i8 | 17 crc u32
    21 attributes i16 | 23 lastOffsetDelta i32 | 27 baseTimestamp i64 | 35 maxTimestamp i64
    43 producerId i64 | 51 producerEpoch i16 | 53 baseSequence i32 | 57 recordsCount i32

The CRC-32C covers bytes [21, end): baseOffset, length, partitionLeaderEpoch and magic are
outside it, so readers of a log must also check offsets and lengths (see ``storage.batch_check``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import crc32c

from pykraft.errors import CorruptRecordError, UnsupportedCompressionError
from pykraft.messages.splice import Splice
from pykraft.messages.varint import decode_varint, decode_varlong, encode_varint

MAGIC = 2
HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + length: the bytes the length field does not count
CRC_START = 21
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = CRC_START
_MAX_TIMESTAMP_OFFSET = 35
_ATTRIBUTES = struct.Struct(">h")
_MAX_TIMESTAMP = struct.Struct(">q")


class Record(NamedTuple):
    """One record of a batch with its absolute offset and timestamp resolved.

    A named tuple rather than a frozen dataclass: replay builds millions of them.
    """

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


def unpack_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """The header at ``pos`` as it is, unchecked: for a validator that reports each
    inconsistency in its own order and words (``buf`` must hold 61 bytes from ``pos``)."""
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse and sanity-check the header at ``pos`` (not the CRC: see :class:`RecordBatch`)."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(
            f"truncated batch header: {len(buf) - pos} of {HEADER_SIZE} bytes", position=pos
        )
    header = unpack_header(buf, pos)
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
        return int(crc32c.crc32c(memoryview(self.data)[CRC_START:]))

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
    """Decode the records of an uncompressed v2 batch held entirely in ``data``.

    This is the hot path of log replay, so one-byte varints (nearly all of KRaft's: record
    lengths under 64 bytes, zero timestamp deltas, null keys, no headers) are decoded inline
    and only longer ones go through :func:`decode_varint`.
    """
    if header.attributes & ATTR_COMPRESSION_MASK:
        raise UnsupportedCompressionError(
            f"batch at offset {header.base_offset} is compressed with {header.compression}; "
            "KRaft logs are never compressed and pykraft does not decode compressed batches",
            position=position,
        )
    end = header.size
    base_off = header.base_offset
    if len(data) < end:
        raise CorruptRecordError(
            f"batch at offset {base_off} needs {end} bytes, {len(data)} present",
            position=position,
        )
    if len(data) > end:
        data = data[:end]
    return _decode_body(header, data, HEADER_SIZE, end, position)


def decode_record_payload(header: BatchHeader, payload: bytes, position: int = 0) -> list[Record]:
    """Decode the records of ``payload``, a compressed batch's records once decompressed.

    The header gives the count, base offset and timestamp; the payload must hold exactly
    ``header.records_count`` records (Kafka refuses a short or a long one likewise).
    """
    return _decode_body(header, payload, 0, len(payload), position)


def _decode_body(
    header: BatchHeader, data: bytes, pos: int, end: int, position: int
) -> list[Record]:
    """Decode ``header.records_count`` records in ``data[pos:end]``, which they must fill."""
    base_off = header.base_offset
    records: list[Record] = []
    append = records.append
    base_ts = header.base_timestamp
    max_delta = header.last_offset_delta
    try:
        for _ in range(header.records_count):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = decode_varint(data, pos, end)
            record_end = pos + length
            if length < 6 or record_end > end:
                raise CorruptRecordError(f"invalid length {length}")
            attributes = data[pos]
            b = data[pos + 1]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                ts_delta, pos = decode_varlong(data, pos + 1, record_end)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = decode_varint(data, pos, record_end)
            if not 0 <= offset_delta <= max_delta:
                raise CorruptRecordError(
                    f"offset delta {offset_delta} outside 0..{max_delta}"
                )
            key, pos = _read_bytes(data, pos, record_end)
            value, pos = _read_bytes(data, pos, record_end)
            if data[pos] == 0:  # no headers: the common case
                pos += 1
                headers: tuple[tuple[str, bytes | None], ...] = ()
            else:
                headers, pos = _read_headers(data, pos, record_end)
            if pos != record_end:
                raise CorruptRecordError(f"declares {length} bytes but its fields differ")
            append(Record(base_off + offset_delta, base_ts + ts_delta, key, value, headers,
                          attributes))
    except CorruptRecordError as exc:
        raise CorruptRecordError(
            f"batch at offset {base_off}, record {len(records)}: {exc}", position=position
        ) from None
    except IndexError:
        raise CorruptRecordError(
            f"batch at offset {base_off}, record {len(records)}: runs past the end of the batch",
            position=position,
        ) from None
    if pos != end:
        raise CorruptRecordError(
            f"batch at offset {base_off}: {end - pos} unexpected bytes after "
            f"{header.records_count} records",
            position=position,
        )
    return records


def _read_bytes(data: bytes, pos: int, limit: int) -> tuple[bytes | None, int]:
    b = data[pos]
    if b == 1:  # zig-zag -1: null
        return None, pos + 1
    if b < 0x80:
        length = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        length, pos = decode_varint(data, pos, limit)
    if length < 0:
        raise CorruptRecordError(f"invalid byte length {length}")
    end = pos + length
    if end > limit:
        raise CorruptRecordError(f"byte field of length {length} overruns its record")
    return data[pos:end], end


def _read_headers(
    data: bytes, pos: int, limit: int
) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = decode_varint(data, pos, limit)
    if count < 0 or count > limit - pos:
        raise CorruptRecordError(f"invalid header count {count}")
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        hkey, pos = _read_bytes(data, pos, limit)
        if hkey is None:
            raise CorruptRecordError("null header key")
        hvalue, pos = _read_bytes(data, pos, limit)
        headers.append((hkey.decode("utf-8", errors="replace"), hvalue))
    return tuple(headers), pos


def _encode_record(parts: list[bytes], offset_delta: int, key: bytes | None,
                   value: bytes | None, headers: Sequence[tuple[str, bytes | None]],
                   timestamp_delta: int = 0) -> None:
    """Append one record's pieces to ``parts`` (record attributes are always 0)."""
    body = [b"\x00", encode_varint(timestamp_delta), encode_varint(offset_delta)]
    for field in (key, value):
        if field is None:
            body.append(b"\x01")  # zig-zag -1: null
        else:
            body += (encode_varint(len(field)), field)
    body.append(encode_varint(len(headers)))
    for hkey, hvalue in headers:
        raw_key = hkey.encode("utf-8")
        body += (encode_varint(len(raw_key)), raw_key)
        body += (b"\x01",) if hvalue is None else (encode_varint(len(hvalue)), hvalue)
    parts.append(encode_varint(sum(map(len, body))))
    parts += body


def encode_batch(
    base_offset: int,
    records: Sequence[tuple[bytes | None, bytes | None]],
    *,
    partition_leader_epoch: int,
    timestamp: int,
    control: bool = False,
    headers: Sequence[Sequence[tuple[str, bytes | None]]] | None = None,
    base_sequence: int = NO_SEQUENCE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    transactional: bool = False,
) -> bytes:
    """Build one uncompressed v2 batch the way KRaft does (timestamp deltas 0, no producer).

    ``records`` are (key, value) pairs; KRaft data records have ``key=None`` and control
    records a 4-byte key. KRaft never mixes the two kinds in one batch, so neither do we.
    ``base_sequence``: KRaft's batches carry none (-1); the group coordinator's carry 0, as
    Kafka's coordinator runtime's MemoryRecordsBuilder writes them, and its transactional
    ones (TxnOffsetCommit) the producer's id and epoch too.
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    parts: list[bytes] = []
    for index, (key, value) in enumerate(records):
        if key is None and value is not None and not headers:
            # KRaft's data records: null key, no headers. Inlined: this is the write hot path.
            delta = encode_varint(index)
            size = encode_varint(len(value))
            parts += (encode_varint(len(delta) + len(size) + len(value) + 4), b"\x00\x00",
                      delta, b"\x01", size, value, b"\x00")
        else:
            _encode_record(parts, index, key, value, headers[index] if headers else ())
    count = len(records)
    return assemble_batch(
        b"".join(parts), base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
        attributes=(ATTR_CONTROL if control else 0) | (ATTR_TRANSACTIONAL if transactional else 0),
        last_offset_delta=count - 1, base_timestamp=timestamp, max_timestamp=timestamp,
        records_count=count, producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def encode_records(records: Sequence[Record], base_offset: int, base_timestamp: int) -> bytes:
    """The v2 record bytes of ``records``, deltas taken from ``base_offset``/``base_timestamp``.

    The body of :func:`assemble_batch` (compressed by the caller if the batch is): a broker
    rebuilding a producer's batch writes it this way.
    """
    parts: list[bytes] = []
    for record in records:
        _encode_record(parts, record.offset - base_offset, record.key, record.value,
                       record.headers, record.timestamp - base_timestamp)
    return b"".join(parts)


def assemble_batch(
    body: bytes,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    records_count: int,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> bytes:
    """A whole v2 batch: the header over ``body`` (records, compressed or not), CRC filled."""
    out = bytearray(HEADER_SIZE)
    _HEADER.pack_into(
        out, 0, base_offset, HEADER_SIZE - LOG_OVERHEAD + len(body), partition_leader_epoch,
        MAGIC, 0, attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
        producer_epoch, base_sequence, records_count,
    )
    out += body
    struct.pack_into(">I", out, _CRC_OFFSET, crc32c.crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


def rewrite_header(
    buf: bytearray,
    pos: int = 0,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    max_timestamp: int,
) -> None:
    """Patch a batch's header in place, as a leader does on append (Kafka's ``setLastOffset``,
    ``setPartitionLeaderEpoch``, ``setMaxTimestamp``).

    Base offset and epoch lie outside the CRC; the CRC is recomputed only when the
    attributes or the max timestamp change, so a batch whose offsets alone move keeps the
    client's bytes after the header's first 17.
    """
    if _patch_header(buf, pos, base_offset, partition_leader_epoch, attributes, max_timestamp):
        length, = struct.unpack_from(">i", buf, pos + 8)
        end = pos + LOG_OVERHEAD + length
        crc = crc32c.crc32c(memoryview(buf)[pos + CRC_START : end])
        struct.pack_into(">I", buf, pos + _CRC_OFFSET, crc)


def restamped_batch(
    batch: bytes,
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    max_timestamp: int,
) -> bytes:
    """A copy of the whole ``batch`` with the header :func:`rewrite_header` would write.

    One copy of the records, not two (a patched bytearray then bytes): a leader does this
    to every produced batch, up to ``max.message.bytes`` each.
    """
    head = bytearray(batch[:HEADER_SIZE])
    records = memoryview(batch)[HEADER_SIZE:]
    if _patch_header(head, 0, base_offset, partition_leader_epoch, attributes, max_timestamp):
        crc = crc32c.crc32c(records, crc32c.crc32c(memoryview(head)[CRC_START:]))
        struct.pack_into(">I", head, _CRC_OFFSET, crc)
    return bytes(head) + records


def _patch_header(buf: bytearray, pos: int, base_offset: int, partition_leader_epoch: int,
                  attributes: int, max_timestamp: int) -> bool:
    """Write the leader's header fields; True when the CRC they change must be recomputed."""
    struct.pack_into(">q", buf, pos, base_offset)
    struct.pack_into(">i", buf, pos + 12, partition_leader_epoch)
    old_attributes, = _ATTRIBUTES.unpack_from(buf, pos + _ATTRIBUTES_OFFSET)
    old_max, = _MAX_TIMESTAMP.unpack_from(buf, pos + _MAX_TIMESTAMP_OFFSET)
    if old_attributes == attributes and old_max == max_timestamp:
        return False
    _ATTRIBUTES.pack_into(buf, pos + _ATTRIBUTES_OFFSET, attributes)
    _MAX_TIMESTAMP.pack_into(buf, pos + _MAX_TIMESTAMP_OFFSET, max_timestamp)
    return True


def first_batch_is_transactional(data: bytes) -> bool:
    """Whether the first batch of ``data`` has the transactional bit (False when ``data``
    is too short to say)."""
    if len(data) < _ATTRIBUTES_OFFSET + _ATTRIBUTES.size:
        return False
    (attributes,) = _ATTRIBUTES.unpack_from(data, _ATTRIBUTES_OFFSET)
    return bool(attributes & ATTR_TRANSACTIONAL)


def records_field(records: bytes | bytearray | memoryview | Splice | None) -> bytes:
    """A message's ``records`` field (Produce's, Fetch's) as the log reads and appends it:
    null is no records, and the bytes the codec sliced out of the frame are taken as they
    are (no copy); a splice (records left in a file, never in a decoded message) is read."""
    if records is None:
        return b""
    if isinstance(records, Splice):
        return records.read(0, records.length)
    return records if isinstance(records, bytes) else bytes(records)


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


def complete_batches(buf: bytes) -> tuple[list[BatchHeader], int]:
    """The headers of the complete batches at the front of ``buf`` and where they end.

    A read of a segment (Kafka's file slices) may end inside a batch; the walk stops there,
    and at a header too damaged to size, so that the caller's own checks name the damage.
    Headers are unchecked (no CRC): this only finds batch boundaries.
    """
    headers: list[BatchHeader] = []
    position = 0
    while len(buf) - position >= HEADER_SIZE:
        header = unpack_header(buf, position)
        if header.size < HEADER_SIZE or position + header.size > len(buf):
            break
        headers.append(header)
        position += header.size
    return headers, position


def runs_within(headers: Sequence[BatchHeader], limit: int
                ) -> Iterator[tuple[int, int, Sequence[BatchHeader]]]:
    """Consecutive batches (``headers``, back to back from byte 0) cut into runs of at most
    ``limit`` bytes, a batch alone may exceed it: each run's byte range and headers, for
    appends no log refuses for ``segment.bytes``."""
    start = position = first = 0
    for number, header in enumerate(headers):
        if position > start and position + header.size - start > limit:
            yield start, position, headers[first:number]
            start, first = position, number
        position += header.size
    if position > start:
        yield start, position, headers[first:]
