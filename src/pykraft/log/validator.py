"""Leader-side validation of one partition's produce records, and offset assignment.

What Kafka does between a Produce request's bytes and the log append, without I/O:
``ProduceRequest.validateRecords`` (one v2 batch), ``UnifiedLog.analyzeAndValidateRecords``
(base offset 0, ``max.message.bytes``, CRC) and ``LogValidator`` (batch shape, per-record
timestamp and key checks, offsets from the log end offset, the leader epoch, the max timestamp
or LogAppendTime, compression kept or converted to the topic's ``compression.type``).

Interface::

    result = validate_produce(records, log_end_offset=leo, leader_epoch=e, now_ms=now,
                              config=AppendConfig(...), api_version=v, partition="t-0")
    # -> ValidatedAppend: records (the bytes to append), first/last offset, max timestamp and
    #    the offset Kafka's time index keys it on, log_append_time_ms (-1 under CreateTime),
    #    the producer fields for producer state (see producer_state.py)
    # or raises ProduceValidationError(error_code, message, record_errors): the partition's
    #    ProduceResponse error_code, error_message and record_errors (v8+).

    # the same in two steps, for a caller that runs the costly one elsewhere:
    admitted = admit_produce(records, config=..., api_version=v, partition="t-0")
    # -> AdmittedBatch; .costly: its records exceed INLINE_PAYLOAD_BYTES (may take seconds)
    result = complete_produce(admitted, log_end_offset=leo, leader_epoch=e, now_ms=now,
                              config=..., partition="t-0")
    result = placed(result, log_end_offset=leo2, leader_epoch=e2)  # the log moved meanwhile

The client's bytes are kept when Kafka keeps them: only the header's base offset and leader
epoch move (outside the CRC), and the attributes, max timestamp and CRC when the timestamp
changes. A batch is rebuilt (records re-encoded, compressed with the topic's codec) only when
its codec differs from the topic's or, compressed, its inner offset deltas are not 0..n-1.
Idempotence (duplicates, sequences) is checked after this, by producer_state.py, as Kafka does.

Records are not decoded one by one unless needed: a scan (``records/record_scan.py``) checks
their framing and yields the offset and timestamp deltas' extremes and whether a key is
null, which settle every rule for a well-formed batch; the records are decoded only to
rebuild a batch or to word a refusal (a malformed record, a key or timestamp error).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final, NamedTuple

from pykraft.errors import CorruptRecordError, PyKraftError
from pykraft.messages.varint import encode_varint
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    BatchHeader,
    Record,
    RecordBatch,
    assemble_batch,
    decode_record_payload,
    decode_records,
    restamped_batch,
    unpack_header,
)
from pykraft.records.compression import (
    CODECS,
    NONE,
    ZSTD,
    CodecError,
    Compressor,
    PayloadStream,
    payload_reader,
)
from pykraft.records.record_scan import RecordsScan, scan_records
from pykraft.records.record_stream import PIECE, RecordReader, scan_stream

CREATE_TIME: Final = "CreateTime"
LOG_APPEND_TIME: Final = "LogAppendTime"
LONG_MAX: Final = (1 << 63) - 1
PRODUCE_LATEST_VERSION: Final = 12
MAX_MESSAGE_BYTES_DEFAULT: Final = 1048588  # 1 MiB + Kafka's record batch overhead
#: A compressed batch's records are decompressed whole, for the fast scan, up to this size;
#: a larger payload (a compression bomb, or a batch of huge records) is read as a stream.
WHOLE_PAYLOAD_BYTES: Final = 8 * 1024 * 1024
#: A batch whose records (decompressed) take more than this is costly to validate: a
#: 1019 KiB gzip batch holding a valid 1 GiB record takes seconds of CPU. A leader validates
#: such a batch off its event loop; smaller ones (the default max.message.bytes) inline.
INLINE_PAYLOAD_BYTES: Final = 1024 * 1024

_LEGACY_RECORD_OVERHEAD = 14  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0: the smallest size
_HEADER_UP_TO_MAGIC = 17
_SIZE_AND_MAGIC = struct.Struct(">ixxxxb")


@dataclass(frozen=True, slots=True)
class AppendConfig:
    """The topic configs a leader's validation reads (Kafka's names and 4.x defaults)."""

    max_message_bytes: int = MAX_MESSAGE_BYTES_DEFAULT  # max.message.bytes
    timestamp_type: str = CREATE_TIME  # message.timestamp.type
    timestamp_before_max_ms: int = LONG_MAX  # message.timestamp.before.max.ms
    timestamp_after_max_ms: int = 3_600_000  # message.timestamp.after.max.ms (KIP-1030)
    compression_type: str = "producer"  # compression.type
    compacted: bool = False  # cleanup.policy contains compact

    def __post_init__(self) -> None:
        if self.timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise ValueError(f"message.timestamp.type {self.timestamp_type!r} is not "
                             f"{CREATE_TIME} or {LOG_APPEND_TIME}")
        if self.compression_type != "producer" and self._codec_name() not in CODECS:
            raise ValueError(f"compression.type {self.compression_type!r} is unknown")

    def target_codec(self, source: int) -> int:
        """Kafka's ``BrokerCompressionType.targetCompression``."""
        return source if self.compression_type == "producer" else CODECS[self._codec_name()]

    def _codec_name(self) -> str:
        return "none" if self.compression_type == "uncompressed" else self.compression_type


@dataclass(frozen=True, slots=True)
class RecordError:
    """One rejected record: ProduceResponse's ``record_errors`` entry (KIP-467)."""

    batch_index: int
    message: str | None

    def __str__(self) -> str:
        message = "null" if self.message is None else f"'{self.message}'"
        return f"RecordError(batchIndex={self.batch_index}, message={message})"


class ProduceValidationError(PyKraftError):
    """The partition's produce is refused: ``error_code``, its message and per-record errors."""

    def __init__(self, error_code: ErrorCode, message: str,
                 record_errors: Sequence[RecordError] = ()) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message
        self.record_errors = tuple(record_errors)


@dataclass(frozen=True, slots=True)
class ValidatedAppend:
    """A batch ready for the log, and what the produce response and producer state need."""

    records: bytes
    first_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int  # the time index's offset for max_timestamp, or -1
    log_append_time_ms: int  # -1 unless the topic uses LogAppendTime
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    source_codec: int
    target_codec: int
    rebuilt: bool  # the records were re-encoded (codec change or bad inner offsets)

    @property
    def records_count(self) -> int:
        return self.last_offset - self.first_offset + 1


def validate_produce(
    records: bytes,
    *,
    log_end_offset: int,
    leader_epoch: int,
    now_ms: int,
    config: AppendConfig,
    api_version: int = PRODUCE_LATEST_VERSION,
    partition: str = "",
) -> ValidatedAppend:
    """Validate a client's records for one partition and assign offsets from the log end.

    ``partition`` (``topic-N``) only appears in error messages, as in Kafka's.
    """
    admitted = admit_produce(records, config=config, api_version=api_version,
                             partition=partition)
    return complete_produce(admitted, log_end_offset=log_end_offset, leader_epoch=leader_epoch,
                            now_ms=now_ms, config=config, partition=partition)


@dataclass(frozen=True, slots=True)
class AdmittedBatch:
    """A client's batch past the checks whose cost is bounded by :data:`INLINE_PAYLOAD_BYTES`
    whatever it holds: what :func:`complete_produce` needs."""

    batch: RecordBatch
    #: the records, uncompressed, when they take at most INLINE_PAYLOAD_BYTES (the CRC and
    #: the batch's header checked too); None: costly, all of that is left to complete_produce
    payload: bytes | None

    @property
    def costly(self) -> bool:
        """Whether completing the validation may take long (seconds for a bomb)."""
        return self.payload is None


def admit_produce(records: bytes, *, config: AppendConfig,
                  api_version: int = PRODUCE_LATEST_VERSION,
                  partition: str = "") -> AdmittedBatch:
    """The first checks of :func:`validate_produce`, in Kafka's order, as far as they cost
    little: the framing, the base offset and the size; for a batch within
    :data:`INLINE_PAYLOAD_BYTES`, the CRC, its header and its records decompressed up to
    that size (a compressed batch's expansion is known only by decompressing it)."""
    batch = _single_batch(records, api_version)
    header = batch.header
    tp = partition
    if header.base_offset != 0:
        raise _invalid(f"The baseOffset of the record batch in the append to {tp} should be 0, "
                       f"but it is {header.base_offset}")
    if header.size > config.max_message_bytes:
        raise ProduceValidationError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"The record batch size in the append to {tp} is {header.size} bytes which exceeds "
            f"the maximum configured value of {config.max_message_bytes}.")
    if len(batch.data) > INLINE_PAYLOAD_BYTES:
        return AdmittedBatch(batch, None)
    _check_batch(batch, tp)
    with _codec_errors():
        return AdmittedBatch(batch, _whole_payload(batch, INLINE_PAYLOAD_BYTES))


def complete_produce(admitted: AdmittedBatch, *, log_end_offset: int, leader_epoch: int,
                     now_ms: int, config: AppendConfig, partition: str = "") -> ValidatedAppend:
    """The rest of :func:`validate_produce` for an admitted batch: its records' checks and
    the offsets from ``log_end_offset``. Pure: a costly batch may be completed on another
    thread, then :func:`placed` where the log ends by then."""
    batch = admitted.batch
    header = batch.header
    tp = partition
    source = header.attributes & ATTR_COMPRESSION_MASK
    target = config.target_codec(source)
    with _codec_errors():
        data = admitted.payload
        if data is None:
            _check_batch(batch, tp)  # admit_produce left it to this costly path
            data = _whole_payload(batch, WHOLE_PAYLOAD_BYTES)
        scan = _scan(header, data, source) if data is not None else _stream_scan(batch, source)
        if not _passes_record_checks(header, scan, now_ms, config):
            _validate_records(header, _facts(batch, source, data), now_ms, config, tp)
        if source == target and (source == NONE or scan.sequential_offsets):
            return _assign_in_place(batch, scan, log_end_offset, leader_epoch, now_ms, config)
        return _rebuild(header, _records_reader(batch, source, data), target, log_end_offset,
                        leader_epoch, now_ms, config, tp)


def placed(validated: ValidatedAppend, *, log_end_offset: int,
           leader_epoch: int) -> ValidatedAppend:
    """``validated`` appended at ``log_end_offset`` in ``leader_epoch`` instead: the log
    moved while it was completed elsewhere. Both header fields lie outside the CRC."""
    header = unpack_header(validated.records)
    shift = log_end_offset - validated.first_offset
    if shift == 0 and header.partition_leader_epoch == leader_epoch:
        return validated
    shallow = validated.shallow_offset_of_max_timestamp
    return dataclasses.replace(
        validated, records=restamped_batch(
            validated.records, base_offset=header.base_offset + shift,
            partition_leader_epoch=leader_epoch, attributes=header.attributes,
            max_timestamp=header.max_timestamp),
        first_offset=log_end_offset, last_offset=validated.last_offset + shift,
        shallow_offset_of_max_timestamp=shallow + shift if shallow >= 0 else shallow)


@contextmanager
def _codec_errors() -> Iterator[None]:
    """Kafka's iterator wraps the codec's IOException in a KafkaException: unknown error."""
    try:
        yield
    except CodecError as exc:
        raise ProduceValidationError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                     f"Failed to decompress record stream: {exc}") from None


def _check_batch(batch: RecordBatch, tp: str) -> None:
    """The CRC, then :func:`_validate_batch` (Kafka's order)."""
    if not batch.crc_valid():
        raise ProduceValidationError(
            ErrorCode.CORRUPT_MESSAGE,
            f"Record is corrupt (stored crc = {batch.header.crc}) in topic partition {tp}.")
    _validate_batch(batch.header, tp)


def _single_batch(records: bytes, api_version: int) -> RecordBatch:
    """Kafka's batch iteration over produce bytes plus ``ProduceRequest.validateRecords``."""
    spans: list[tuple[int, int, int]] = []
    pos = 0
    while len(records) - pos >= LOG_OVERHEAD:
        size = struct.unpack_from(">i", records, pos + 8)[0]
        if size < _LEGACY_RECORD_OVERHEAD:
            raise ProduceValidationError(
                ErrorCode.CORRUPT_MESSAGE,
                f"Record size {size} is less than the minimum record overhead "
                f"({_LEGACY_RECORD_OVERHEAD})")
        if len(records) - pos < _HEADER_UP_TO_MAGIC:
            break
        magic = _SIZE_AND_MAGIC.unpack_from(records, pos + 8)[1]
        if not 0 <= magic <= 2:
            raise ProduceValidationError(ErrorCode.CORRUPT_MESSAGE,
                                         f"Invalid magic found in record: {magic}")
        if len(records) - pos < size + LOG_OVERHEAD:
            break  # a partial trailing batch is ignored, as Kafka's reader does
        spans.append((pos, size + LOG_OVERHEAD, magic))
        pos += size + LOG_OVERHEAD
    prefix = f"Produce requests with version {api_version}"
    if not spans:
        raise _invalid(f"{prefix} must have at least one record batch per partition")
    start, size, magic = spans[0]
    if magic != 2:
        raise _invalid(f"{prefix} are only allowed to contain record batches with magic version 2")
    if size < HEADER_SIZE:
        raise ProduceValidationError(
            ErrorCode.CORRUPT_MESSAGE,
            f"Record batch is corrupt (the size {size} is smaller than the minimum allowed "
            f"overhead {HEADER_SIZE})")
    header = unpack_header(records, start)
    if api_version < 7 and header.attributes & ATTR_COMPRESSION_MASK == ZSTD:
        raise ProduceValidationError(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            f"{prefix} are not allowed to use ZStandard compression")
    if len(spans) > 1:
        raise _invalid(f"{prefix} are only allowed to contain exactly one record batch per "
                       "partition")
    return RecordBatch(header, bytes(records[start : start + size]))


def _validate_batch(header: BatchHeader, tp: str) -> None:
    """Kafka's ``LogValidator.validateBatch`` for a client's v2 batch."""
    count_from_offsets = header.last_offset_delta + 1
    offsets = f"[{header.base_offset}, {header.last_offset}]"
    if count_from_offsets <= 0:
        raise _invalid(f"Batch has an invalid offset range: {offsets} in topic partition {tp}")
    if header.records_count <= 0:
        raise _invalid(f"Invalid reported count for record batch: {header.records_count} in "
                       f"topic partition {tp}")
    if count_from_offsets != header.records_count:
        raise _invalid(f"Inconsistent batch offset range {offsets} and count of records "
                       f"{header.records_count} in topic partition {tp}")
    if header.is_control:
        raise _invalid(f"Clients are not allowed to write control records in topic partition {tp}")
    if header.producer_id != NO_PRODUCER_ID and header.base_sequence < 0:
        raise _invalid(f"Invalid sequence number {header.base_sequence} in record batch with "
                       f"producerId {header.producer_id} in topic partition {tp}")


def _whole_payload(batch: RecordBatch, limit: int) -> bytes | None:
    """The batch itself if uncompressed; its records decompressed if they take at most
    ``limit``; else None, and the records are read as a stream."""
    source = batch.header.attributes & ATTR_COMPRESSION_MASK
    if source == NONE:
        return batch.data
    stream = PayloadStream(source, memoryview(batch.data)[HEADER_SIZE:])
    pieces: list[bytes] = []
    size = 0
    while size <= limit and (piece := stream.read(PIECE)):
        pieces.append(piece)
        size += len(piece)
    return b"".join(pieces) if size <= limit else None


def _records_reader(batch: RecordBatch, source: int, data: bytes | None
                    ) -> Callable[[int], bytes]:
    """Reads the batch's records (uncompressed) from their start: from ``data`` when the
    whole payload is at hand, else decompressing again."""
    if data is None:
        return payload_reader(source, memoryview(batch.data)[HEADER_SIZE:])
    return payload_reader(NONE, memoryview(data)[HEADER_SIZE if source == NONE else 0 :])


def _stream_scan(batch: RecordBatch, source: int) -> RecordsScan:
    """:func:`_scan` of a payload too large to hold: read record by record."""
    try:
        return scan_stream(batch.header, _records_reader(batch, source, None))
    except CorruptRecordError as exc:
        raise _invalid(f"Found invalid record structure: {exc}") from None


def _scan(header: BatchHeader, data: bytes, source: int) -> RecordsScan:
    """The records' summary; a malformed record is INVALID_RECORD in the decoder's words."""
    try:
        return scan_records(header, data, HEADER_SIZE if source == NONE else 0)
    except CorruptRecordError as exc:
        _decode(header, data, source)  # raises with the decoder's account of the damage
        raise _invalid(f"Found invalid record structure: {exc}") from None


def _decode(header: BatchHeader, data: bytes, source: int) -> list[Record]:
    """Every record, for the paths that need them: a rebuild, an error's words."""
    try:
        if source == NONE:
            return decode_records(header, data)
        return decode_record_payload(header, data)
    except CorruptRecordError as exc:
        raise _invalid(f"Found invalid record structure: {exc}") from None


class _RecordFacts(NamedTuple):
    """What the per-record checks read of a record (sizes -1 for nulls)."""

    offset: int
    timestamp: int  # as Kafka reads it: a LogAppendTime batch's is its max timestamp
    key_size: int
    value_size: int


def _facts(batch: RecordBatch, source: int, data: bytes | None) -> Iterator[_RecordFacts]:
    """The records' facts: decoded from ``data`` when at hand, else streamed."""
    header = batch.header
    if data is not None:
        for record in _decode(header, data, source):
            yield _RecordFacts(record.offset, _record_timestamp(header, record.timestamp),
                               _size(record.key), _size(record.value))
        return
    try:
        for fields in RecordReader(header, _records_reader(batch, source, None)):
            yield _RecordFacts(header.base_offset + fields.offset_delta,
                               _record_timestamp(header, header.base_timestamp
                                                 + fields.timestamp_delta),
                               fields.key_size, fields.value_size)
    except CorruptRecordError as exc:
        raise _invalid(f"Found invalid record structure: {exc}") from None


def _size(field: bytes | None) -> int:
    return -1 if field is None else len(field)


def _passes_record_checks(header: BatchHeader, scan: RecordsScan, now_ms: int,
                          config: AppendConfig) -> bool:
    """True when no record can fail :func:`_validate_records`, as the scan alone shows.

    False is no verdict: the caller then decodes the records and checks them one by one, as
    it does for the rare batches this leaves to that path (a producer's LogAppendTime flag).
    The CreateTime bounds lie within Java's long range, so the smallest and the largest
    timestamp decide for all those between: none of their differences to now wraps around.
    """
    if config.compacted and scan.null_keys:
        return False
    if header.attributes & ATTR_TIMESTAMP_TYPE:
        return False
    if config.timestamp_type != CREATE_TIME:
        return True
    return all(
        -config.timestamp_after_max_ms <= now_ms - header.base_timestamp - delta
        <= config.timestamp_before_max_ms
        for delta in (scan.min_timestamp_delta, scan.max_timestamp_delta))


def _validate_records(header: BatchHeader, records: Iterable[_RecordFacts], now_ms: int,
                      config: AppendConfig, tp: str) -> None:
    """Per-record key and timestamp checks; any error rejects the whole batch."""
    errors: list[tuple[ErrorCode, RecordError]] = []
    batch_log_append_time = bool(header.attributes & ATTR_TIMESTAMP_TYPE)
    for index, record in enumerate(records):
        timestamp = record.timestamp
        if config.compacted and record.key_size < 0:
            errors.append((ErrorCode.INVALID_RECORD, RecordError(
                index, f"Compacted topic cannot accept message without key in topic partition "
                       f"{tp}.")))
        elif config.timestamp_type == CREATE_TIME and timestamp != NO_TIMESTAMP:
            diff = _long(now_ms - timestamp)
            if diff > config.timestamp_before_max_ms or -diff > config.timestamp_after_max_ms:
                errors.append((ErrorCode.INVALID_TIMESTAMP, RecordError(
                    index, f"Timestamp {timestamp} of message with offset {record.offset} is out "
                           f"of range. The timestamp should be within "
                           f"[{_long(now_ms - config.timestamp_before_max_ms)}, "
                           f"{_long(now_ms + config.timestamp_after_max_ms)}]")))
        elif batch_log_append_time:
            errors.append((ErrorCode.INVALID_TIMESTAMP, RecordError(
                index, f"Invalid timestamp type in message {_describe(record, timestamp)}. "
                       "Producer should not set timestamp type to LogAppendTime.")))
    if not errors:
        return
    record_errors = [error for _, error in errors]
    if any(code == ErrorCode.INVALID_TIMESTAMP for code, _ in errors):
        raise ProduceValidationError(
            ErrorCode.INVALID_TIMESTAMP,
            "One or more records have been rejected due to invalid timestamp", record_errors)
    shown = ", ".join(str(error) for error in record_errors[:3])
    raise ProduceValidationError(
        ErrorCode.INVALID_RECORD,
        f"One or more records have been rejected due to {len(record_errors)} record errors in "
        f"total, and only showing the first three errors at most: [{shown}]", record_errors)


def _assign_in_place(batch: RecordBatch, scan: RecordsScan, log_end_offset: int,
                     leader_epoch: int, now_ms: int, config: AppendConfig) -> ValidatedAppend:
    """Patch the client's batch: offsets, epoch, max timestamp (Kafka's in-place paths)."""
    header = batch.header
    last_offset = log_end_offset + header.records_count - 1
    max_timestamp = (header.max_timestamp if header.attributes & ATTR_TIMESTAMP_TYPE
                     else header.base_timestamp + scan.max_timestamp_delta)
    log_append = config.timestamp_type == LOG_APPEND_TIME
    if log_append:
        max_timestamp = now_ms
    data = restamped_batch(
        batch.data, base_offset=last_offset - header.last_offset_delta,
        partition_leader_epoch=leader_epoch,
        attributes=_with_timestamp_type(header.attributes, log_append),
        max_timestamp=max_timestamp,
    )
    source = header.attributes & ATTR_COMPRESSION_MASK
    has_max = source != NONE or log_append or max_timestamp != NO_TIMESTAMP
    return _result(header, data, log_end_offset, last_offset, max_timestamp,
                   last_offset if has_max else -1, now_ms if log_append else -1,
                   source, source, rebuilt=False)


def _rebuild(header: BatchHeader, read: Callable[[int], bytes], target: int,
             log_end_offset: int, leader_epoch: int, now_ms: int, config: AppendConfig,
             tp: str) -> ValidatedAppend:
    """Re-encode the records with fresh offset deltas and the topic's codec (Kafka's
    ``buildRecordsAndAssignOffsets``), keeping the producer fields.

    Record by record from ``read`` into a streaming compressor: each record's head is
    written anew, its key, value and headers copied as they are read. No more than
    ``max.message.bytes`` of output is ever held: past it the rebuild stops (the size
    reported is then the size reached).
    """
    log_append = config.timestamp_type == LOG_APPEND_TIME
    reader = RecordReader(header, read)
    out = Compressor(target)

    def write(piece: bytes) -> None:
        out.write(piece)
        _check_rebuilt_size(HEADER_SIZE + out.size, config, tp)

    base_timestamp = max_timestamp = NO_TIMESTAMP
    for index in range(header.records_count):
        prefix = reader.prefix()
        timestamp = _record_timestamp(header, header.base_timestamp + prefix.timestamp_delta)
        if index == 0:
            base_timestamp = max_timestamp = timestamp
        max_timestamp = max(max_timestamp, timestamp)
        head = b"\x00" + encode_varint(timestamp - base_timestamp) + encode_varint(index)
        out.write(encode_varint(len(head) + prefix.rest) + head)
        reader.rest(prefix, write)
    reader.finish()
    attributes = _with_timestamp_type(
        target | (header.attributes & ATTR_TRANSACTIONAL), log_append)
    count = header.records_count
    data = assemble_batch(
        out.finish(), base_offset=log_end_offset, partition_leader_epoch=leader_epoch,
        attributes=attributes, last_offset_delta=count - 1, base_timestamp=base_timestamp,
        max_timestamp=now_ms if log_append else max_timestamp, records_count=count,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
    )
    _check_rebuilt_size(len(data), config, tp)
    if log_append:
        max_timestamp = now_ms
    last_offset = log_end_offset + count - 1
    has_max = log_append or max_timestamp != NO_TIMESTAMP
    return _result(header, data, log_end_offset, last_offset, max_timestamp,
                   last_offset if has_max else -1, now_ms if log_append else -1,
                   header.attributes & ATTR_COMPRESSION_MASK, target, rebuilt=True)


def _check_rebuilt_size(size: int, config: AppendConfig, tp: str) -> None:
    if size > config.max_message_bytes:
        raise ProduceValidationError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"Message batch size is {size} bytes in append topartition {tp} which exceeds "
            f"the maximum configured size of {config.max_message_bytes}.")


def _result(header: BatchHeader, data: bytes, first: int, last: int, max_timestamp: int,
            shallow: int, log_append_time: int, source: int, target: int, *,
            rebuilt: bool) -> ValidatedAppend:
    return ValidatedAppend(
        records=data, first_offset=first, last_offset=last, max_timestamp=max_timestamp,
        shallow_offset_of_max_timestamp=shallow, log_append_time_ms=log_append_time,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence, is_transactional=header.is_transactional,
        source_codec=source, target_codec=target, rebuilt=rebuilt,
    )


def _record_timestamp(header: BatchHeader, timestamp: int) -> int:
    """A record's timestamp as Kafka reads it: a LogAppendTime batch's is its max timestamp."""
    return header.max_timestamp if header.attributes & ATTR_TIMESTAMP_TYPE else timestamp


def _with_timestamp_type(attributes: int, log_append: bool) -> int:
    cleared = attributes & ~ATTR_TIMESTAMP_TYPE
    return cleared | ATTR_TIMESTAMP_TYPE if log_append else cleared


def _describe(record: _RecordFacts, timestamp: int) -> str:
    """Java's ``DefaultRecord.toString``."""
    return (f"DefaultRecord(offset={record.offset}, timestamp={timestamp}, "
            f"key={record.key_size} bytes, value={record.value_size} bytes)")


def _long(value: int) -> int:
    """``value`` wrapped to a Java long, so messages and comparisons match Kafka's."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _invalid(message: str) -> ProduceValidationError:
    return ProduceValidationError(ErrorCode.INVALID_RECORD, message)
