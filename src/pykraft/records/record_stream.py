"""The records of a v2 batch read one at a time from a byte stream, in bounded memory.

A compressed batch of a few kilobytes may expand to gigabytes: Kafka's broker never expands
one whole, it reads its records from the decompressing stream (``DefaultRecordBatch``'s
``StreamRecordIterator``; ``skipKeyValueIterator`` skips keys and values through a small
buffer). This reader does the same: each record's length, attributes, timestamp and offset
deltas are read, its key, value and headers are checked against the record's length and
skipped (or copied, for a rebuild) in pieces, and the first inconsistency stops the read
with :class:`~pykraft.errors.CorruptRecordError`. A field longer than what is left of its
record is refused before any of it is read. It accepts exactly the records
:func:`pykraft.records.batch.decode_records` accepts (``tests/records/test_record_stream.py``).

Interface::

    reader = RecordReader(header, read)      # read(n) -> at most n bytes, b"" at the end
    #   hash_keys=True: each non-null key's MD5 (the log cleaner's offset map, as Kafka's)
    for fields in reader:                    # RecordFields per record, then the end checked
        ...
    prefix = reader.prefix(); sizes = reader.rest(prefix, copy=sink)   # a record in two steps
    reader.finish()                          # after records_count records: nothing may follow
    scan = scan_stream(header, read)         # record_scan's RecordsScan, from a stream
    for offset, timestamp in record_times(header, read): ...   # ListOffsets by timestamp
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from pykraft.errors import CorruptRecordError
from pykraft.messages.varint import decode_varint, decode_varlong
from pykraft.records.batch import BatchHeader
from pykraft.records.record_scan import RecordsScan

PIECE = 64 * 1024  # bytes pulled from the source at a time
_MAX_VARLONG = 10
_MIN_RECORD = 6  # attributes, three one-byte varints, key and value lengths: see the decoder


class RecordPrefix(NamedTuple):
    """A record's fields before its key: enough to place it and to re-encode its head."""

    length: int  # the body's bytes, after the length varint
    attributes: int
    timestamp_delta: int
    offset_delta: int
    rest: int  # the bytes of key, value and headers that follow


class RecordFields(NamedTuple):
    """A record without its key, value and header bytes; -1 sizes are nulls."""

    attributes: int
    timestamp_delta: int
    offset_delta: int
    key_size: int
    value_size: int
    key_digest: bytes | None  # MD5 of a non-null key, when the reader hashes keys


class _Source:
    """Bytes pulled from ``read`` in pieces, with what has been consumed counted and,
    while a sink is set, passed on to it."""

    def __init__(self, read: Callable[[int], bytes]) -> None:
        self._read = read
        self._buf = b""
        self._pos = 0
        self._before = 0  # bytes consumed before ``_buf``
        self._sink: Callable[[bytes], None] | None = None
        self._mark = 0  # start of the bytes in ``_buf`` not yet passed to the sink

    @property
    def consumed(self) -> int:
        return self._before + self._pos

    def tee(self, sink: Callable[[bytes], None] | None) -> None:
        """Pass every byte consumed from now on to ``sink`` (None: stop)."""
        self._flush()
        self._sink = sink

    def _flush(self) -> None:
        if self._sink is not None and self._pos > self._mark:
            self._sink(self._buf[self._mark : self._pos])
        self._mark = self._pos

    def _fill(self, need: int) -> int:
        """Make ``need`` bytes available from the position if the source has them;
        returns how many are."""
        available = len(self._buf) - self._pos
        if available >= need:
            return available
        self._flush()
        parts = [self._buf[self._pos :]]
        self._before += self._pos
        while available < need and (piece := self._read(max(PIECE, need - available))):
            parts.append(piece)
            available += len(piece)
        self._buf = b"".join(parts)
        self._pos = self._mark = 0
        return available

    def byte(self) -> int:
        if not self._fill(1):
            raise CorruptRecordError("runs past the end of the batch")
        value = self._buf[self._pos]
        self._pos += 1
        return value

    def peek(self) -> int:
        if not self._fill(1):
            raise CorruptRecordError("runs past the end of the batch")
        return self._buf[self._pos]

    def varint(self, *, long: bool = False) -> int:
        available = self._fill(_MAX_VARLONG)
        limit = self._pos + available
        decode = decode_varlong if long else decode_varint
        try:
            value, self._pos = decode(self._buf, self._pos, limit)
        except IndexError:
            raise CorruptRecordError("runs past the end of the batch") from None
        return value

    def skip(self, size: int, sink: Callable[[bytes], object] | None = None) -> None:
        """Consume ``size`` bytes a piece at a time, none kept (each passed to ``sink``)."""
        while size > 0:
            available = self._fill(1)
            if not available:
                raise CorruptRecordError("runs past the end of the batch")
            step = min(size, available)
            if sink is not None:
                sink(self._buf[self._pos : self._pos + step])
            self._pos += step
            size -= step

    def at_end(self) -> bool:
        return not self._fill(1)


class RecordReader:
    """The ``header.records_count`` records of a batch, read from ``read`` (an
    uncompressed batch's bytes after its header, or a compressed one's decompressed)."""

    def __init__(self, header: BatchHeader, read: Callable[[int], bytes], *,
                 hash_keys: bool = False) -> None:
        self._header = header
        self._source = _Source(read)
        self._hash_keys = hash_keys
        self._index = 0
        self._end = 0  # where the current record ends, in bytes consumed

    def __iter__(self) -> Iterator[RecordFields]:
        for _ in range(self._header.records_count):
            prefix = self.prefix()
            digest, key_size, value_size = self._rest(prefix, None)
            yield RecordFields(prefix.attributes, prefix.timestamp_delta, prefix.offset_delta,
                               key_size, value_size, digest)
        self.finish()

    def prefix(self) -> RecordPrefix:
        """The next record's head: its length, attributes and deltas."""
        with self._located():
            source = self._source
            length = source.varint()
            start = source.consumed
            if length < _MIN_RECORD:
                raise CorruptRecordError(f"invalid length {length}")
            attributes = source.byte()
            timestamp_delta = source.varint(long=True)
            offset_delta = source.varint()
            if not 0 <= offset_delta <= self._header.last_offset_delta:
                raise CorruptRecordError(
                    f"offset delta {offset_delta} outside 0..{self._header.last_offset_delta}")
            self._end = start + length
            rest = self._end - source.consumed
            if rest < 0:
                raise CorruptRecordError(f"declares {length} bytes but its fields differ")
            return RecordPrefix(length, attributes, timestamp_delta, offset_delta, rest)

    def rest(self, prefix: RecordPrefix, copy: Callable[[bytes], None] | None = None
             ) -> tuple[int, int]:
        """Check the record's key, value and headers (passing their bytes to ``copy``);
        returns the key's and the value's sizes (-1: null)."""
        _, key_size, value_size = self._rest(prefix, copy)
        return key_size, value_size

    def finish(self) -> None:
        """Refuse bytes after the last record (Kafka: records still remaining)."""
        if not self._source.at_end():
            raise CorruptRecordError(
                f"batch at offset {self._header.base_offset}: unexpected bytes after "
                f"{self._header.records_count} records")

    def _rest(self, prefix: RecordPrefix, copy: Callable[[bytes], None] | None
              ) -> tuple[bytes | None, int, int]:
        source = self._source
        with self._located():
            source.tee(copy)
            try:
                key_size = self._field(nullable=True)
                hasher = (hashlib.md5(usedforsecurity=False)
                          if self._hash_keys and key_size >= 0 else None)
                source.skip(key_size, None if hasher is None else hasher.update)
                value_size = self._field(nullable=True)
                source.skip(value_size)
                self._headers()
            finally:
                source.tee(None)
            if source.consumed != self._end:
                raise CorruptRecordError(f"declares {prefix.length} bytes but its fields differ")
        self._index += 1
        return None if hasher is None else hasher.digest(), key_size, value_size

    def _headers(self) -> None:
        source = self._source
        count = source.varint()
        if count < 0 or count > self._end - source.consumed:
            raise CorruptRecordError(f"invalid header count {count}")
        for _ in range(count):
            if source.peek() == 1:
                raise CorruptRecordError("null header key")
            source.skip(self._field(nullable=False))
            source.skip(self._field(nullable=True))

    def _field(self, *, nullable: bool) -> int:
        """A byte field's length, -1 for a null (one byte only, as the decoder reads it),
        refused when negative otherwise or longer than what is left of the record."""
        source = self._source
        if nullable and source.peek() == 1:
            source.byte()
            return -1
        size = source.varint()
        if size < 0:
            raise CorruptRecordError(f"invalid byte length {size}")
        if size > self._end - source.consumed:
            raise CorruptRecordError(f"byte field of length {size} overruns its record")
        return size

    @contextmanager
    def _located(self) -> Iterator[None]:
        """Prefix a record error with the batch and the record it is in, as the decoder."""
        try:
            yield
        except CorruptRecordError as exc:
            raise CorruptRecordError(f"batch at offset {self._header.base_offset}, record "
                                     f"{self._index}: {exc}") from None


def scan_stream(header: BatchHeader, read: Callable[[int], bytes]) -> RecordsScan:
    """:func:`~pykraft.records.record_scan.scan_records`'s summary, read as a stream."""
    deltas: list[int] = []
    null_keys = False
    sequential = True
    for index, fields in enumerate(RecordReader(header, read)):
        if not deltas:
            deltas = [fields.timestamp_delta, fields.timestamp_delta]
        deltas = [min(deltas[0], fields.timestamp_delta), max(deltas[1], fields.timestamp_delta)]
        null_keys |= fields.key_size < 0
        sequential &= fields.offset_delta == index
    low, high = deltas or (0, 0)
    return RecordsScan(low, high, null_keys, sequential)


def record_times(header: BatchHeader, read: Callable[[int], bytes]) -> Iterator[tuple[int, int]]:
    """Each record's offset and stored timestamp, in order, keys and values skipped."""
    for fields in RecordReader(header, read):
        yield (header.base_offset + fields.offset_delta,
               header.base_timestamp + fields.timestamp_delta)
