"""``dump-log``: print the batches and records of log segments and KRaft snapshots.

The text output follows Kafka's ``kafka-dump-log.sh`` (``DumpLogSegments``) line for line so
operators can diff the two; ``--json`` gives the same facts as one JSON document per file.
Records are listed with deep iteration only (``--deep-iteration``, implied by
``--print-data-log`` and the decoders), as Kafka does; compressed batches
are decompressed; ``--max-bytes`` reads only the whole batches within the first bytes.

Two kinds of ``.log`` segment are told apart by their directory:

* a user partition's (a ``<topic>-<partition>`` directory other than ``__cluster_metadata-0``)
  is walked as Kafka's file iterator walks it: batches in order, a CRC mismatch shown per
  batch, a partial last batch counted as "Found N invalid bytes at the end of ...";
* any other segment, and every ``.checkpoint`` snapshot, is the metadata log's and is held
  to its storage reader's rules: the valid prefix is printed, then the error with the file
  and byte position in the reader's words; only a torn end of the log (what the server
  truncates at start-up) is counted as Kafka counts it and is no failure.

Either way corrupt data is never skipped silently and the caller exits non-zero for it.
``.index``, ``.timeindex`` and producer ``.snapshot`` files are
:mod:`pykraft.tools.dump_index_tool`'s.

Interface::

    dump = dump_file(path, DumpOptions(...))   # UnknownFileError for other names
    lines = format_text(dump)                  # Kafka's stdout lines
    dump.to_json(); dump.failed; dump.non_consecutive   # the last for Kafka's stderr report
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykraft.errors import CorruptLogError, CorruptRecordError, PyKraftError
from pykraft.log.batch_records import (
    MIN_RECORD_OVERHEAD,
    batch_records,
    complete_batches_end,
    record_timestamp,
    timestamp_type_name,
)
from pykraft.log.producer_state import increment_sequence
from pykraft.messages import to_json_dict
from pykraft.records.batch import (
    LOG_OVERHEAD,
    NO_SEQUENCE,
    Record,
    RecordBatch,
    iter_batches,
    read_header,
)
from pykraft.records.control import ControlType, EndTxnMarker, decode_control
from pykraft.records.metadata import decode_metadata_record
from pykraft.storage.batch_check import continuity_problem
from pykraft.storage.bootstrap import BOOTSTRAP_CHECKPOINT, METADATA_LOG_DIR_NAME
from pykraft.storage.file_error import StateFileError
from pykraft.storage.log_verify import TornTail, is_last_segment, is_torn_tail
from pykraft.storage.partition_log import parse_partition_dir_name
from pykraft.tools.dump_offsets import offsets_contents
from pykraft.tools.dump_transactions import transaction_contents

_SEGMENT = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")

# Control record types whose value Kafka prints as JSON; the others only by type name.
_JSON_CONTROL_TYPES = (
    ControlType.SNAPSHOT_HEADER,
    ControlType.SNAPSHOT_FOOTER,
    ControlType.KRAFT_VERSION,
    ControlType.KRAFT_VOTERS,
)


# Kafka's FileLogInputStream: no batch unless more than the bytes up to the magic remain.
_HEADER_SIZE_UP_TO_MAGIC = LOG_OVERHEAD + 5


@dataclass(frozen=True, slots=True)
class DumpOptions:
    cluster_metadata_decoder: bool = False
    print_data_log: bool = False
    deep_iteration: bool = False
    max_bytes: int | None = None  # None: the whole file (Kafka's Integer.MAX_VALUE)
    offsets_decoder: bool = False
    transaction_log_decoder: bool = False

    @property
    def print_contents(self) -> bool:
        return (self.cluster_metadata_decoder or self.offsets_decoder
                or self.transaction_log_decoder or self.print_data_log)

    @property
    def deep(self) -> bool:
        """Kafka lists records only with deep iteration, which printing contents implies."""
        return self.deep_iteration or self.print_contents


@dataclass(slots=True)
class FileDump:
    """What one file holds, ready to print as text or JSON."""

    path: Path
    description: str
    batches: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    invalid_tail: TornTail | None = None
    non_consecutive: list[tuple[int, int]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether the file holds damage (an invalid tail the server drops is none)."""
        return self.error is not None or any(
            not b["isvalid"] or "error" in b for b in self.batches)

    def to_json(self) -> dict[str, Any]:
        tail = self.invalid_tail
        return {
            "file": str(self.path),
            "description": self.description,
            "batches": self.batches,
            "error": self.error,
            "invalidBytesAtEnd": None if tail is None else {
                "position": tail.position, "size": tail.size, "reason": tail.reason},
            "nonConsecutiveOffsets": [list(pair) for pair in self.non_consecutive],
        }


class UnknownFileError(PyKraftError):
    """A file that is neither a segment nor a snapshot (Kafka prints 'Ignoring unknown file')."""


def describe_file(path: Path) -> str:
    """Kafka's second line for each kind of file."""
    name = path.name
    if name == BOOTSTRAP_CHECKPOINT:
        return "KRaft bootstrap snapshot"
    if match := _SEGMENT.match(name):
        return f"Log starting offset: {int(match.group(1))}"
    if match := _SNAPSHOT.match(name):
        return f"Snapshot end offset: {int(match.group(1))}, epoch: {int(match.group(2))}"
    raise UnknownFileError(f"Ignoring unknown file {path}")


def is_user_segment(path: Path) -> bool:
    """A ``.log`` in a ``<topic>-<partition>`` directory other than the metadata log's."""
    if not _SEGMENT.match(path.name) or path.absolute().parent.name == METADATA_LOG_DIR_NAME:
        return False
    try:
        parse_partition_dir_name(path.absolute().parent.name)
    except StateFileError:
        return False
    return True


def dump_file(path: Path, options: DumpOptions) -> FileDump:
    """Read one segment or snapshot fully (or its first ``max_bytes``)."""
    dump = FileDump(path, describe_file(path))
    data = path.read_bytes()
    cut = len(data) if options.max_bytes is None else complete_batches_end(data, options.max_bytes)
    if is_user_segment(path):
        _walk_user_segment(dump, data[:cut], options)
    else:
        _walk_metadata_file(dump, data[:cut], options)
    if options.max_bytes is not None:
        dump.invalid_tail = None  # Kafka counts trailing bytes of whole files only
    return dump


def _walk_user_segment(dump: FileDump, data: bytes, options: DumpOptions) -> None:
    """Kafka's file iterator: whole batches in order; what a partial batch leaves is
    counted, a size field too small for any record is corruption."""
    pos = 0
    tracker = _OffsetTracker(dump)
    while pos + _HEADER_SIZE_UP_TO_MAGIC < len(data):
        length = int.from_bytes(data[pos + 8 : pos + LOG_OVERHEAD], "big", signed=True)
        if length < MIN_RECORD_OVERHEAD:
            dump.error = (f"Found record size {length} smaller than minimum record overhead "
                          f"({MIN_RECORD_OVERHEAD}) in file {dump.path}.")
            return
        if pos + LOG_OVERHEAD + length > len(data):
            break
        try:
            header = read_header(data, pos)
        except CorruptRecordError as exc:
            dump.error = str(CorruptLogError(str(dump.path), pos, str(exc)))
            return
        batch = RecordBatch(header, data[pos : pos + header.size], pos)
        dump.batches.append(_batch_dict(batch, options, tracker))
        pos += header.size
    if pos < len(data):
        dump.invalid_tail = TornTail(dump.path, pos, len(data) - pos, "partial batch")


def _walk_metadata_file(dump: FileDump, data: bytes, options: DumpOptions) -> None:
    """Stops at the first batch the metadata log's reader would refuse (torn, or not
    continuing the offsets, or for a segment the leader epochs) and records the error in
    the reader's words. A CRC mismatch is shown per batch, as Kafka does. Damage nothing
    valid follows at the end of the log's last segment is a torn write (the server
    truncates it at start-up), counted as Kafka counts it, not an error."""
    path = dump.path
    segment = _SEGMENT.match(path.name)
    expected = int(segment.group(1)) if segment else 0  # snapshots start at offset 0
    min_epoch = 0 if segment else None  # the reader checks epochs in segments only
    may_tear = segment is not None and is_last_segment(path)
    tracker = _OffsetTracker(dump)

    def torn(position: int) -> bool:
        return may_tear and is_torn_tail(data, position, expected)

    def stop(position: int, problem: str, *, tail: bool) -> None:
        if tail:
            dump.invalid_tail = TornTail(path, position, len(data) - position, problem)
        else:
            dump.error = str(CorruptLogError(str(path), position, problem))

    try:
        for batch in iter_batches(data, verify_crc=False):
            problem = continuity_problem(batch.header, expected, min_epoch)
            if problem is not None:  # an epoch going back is never a torn write
                stop(batch.position, problem, tail=batch.header.base_offset != expected
                     and torn(batch.position))
                break
            if not batch.crc_valid() and torn(batch.position):
                try:
                    batch.verify()
                except CorruptRecordError as exc:
                    stop(batch.position, str(exc), tail=True)
                break
            dump.batches.append(_batch_dict(batch, options, tracker))
            expected = batch.header.next_offset
            if min_epoch is not None:
                min_epoch = batch.header.partition_leader_epoch
    except CorruptRecordError as exc:
        position = exc.position or 0
        stop(position, str(exc), tail=torn(position))


class _OffsetTracker:
    """Kafka's deep-iteration check: record offsets of a file one apart (compaction and
    aborted data leave gaps, so these are reported but are no failure)."""

    def __init__(self, dump: FileDump) -> None:
        self._dump = dump
        self._last = -1

    def see(self, offset: int) -> None:
        if self._last != -1 and offset != self._last + 1:
            self._dump.non_consecutive.append((self._last, offset))
        self._last = offset


def _batch_dict(batch: RecordBatch, options: DumpOptions,
                tracker: _OffsetTracker) -> dict[str, Any]:
    h = batch.header
    out: dict[str, Any] = {
        "baseOffset": h.base_offset,
        "lastOffset": h.last_offset,
        "count": h.records_count,
        "baseSequence": h.base_sequence,
        "lastSequence": increment_sequence(h.base_sequence, h.last_offset_delta)
        if h.base_sequence >= 0 else NO_SEQUENCE,
        "producerId": h.producer_id,
        "producerEpoch": h.producer_epoch,
        "partitionLeaderEpoch": h.partition_leader_epoch,
        "isTransactional": h.is_transactional,
        "isControl": h.is_control,
        "deleteHorizonMs": h.delete_horizon_ms,
        "position": batch.position,
        "timestampType": timestamp_type_name(h),
        "timestamp": h.max_timestamp,
        "size": h.size,
        "magic": h.magic,
        "compresscodec": h.compression,
        "crc": h.crc,
        "isvalid": batch.crc_valid(),
        "records": [],
    }
    if out["isvalid"] and options.deep:
        try:
            records = batch_records(batch)
        except PyKraftError as exc:  # a malformed record or a payload that won't decompress
            out["error"] = str(exc)
        else:
            for record in records:
                tracker.see(record.offset)
                out["records"].append(_record_dict(batch, record, options))
    return out


def _record_dict(batch: RecordBatch, record: Record, options: DumpOptions) -> dict[str, Any]:
    h = batch.header
    out: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record_timestamp(h, record),
        "keySize": -1 if record.key is None else len(record.key),
        "valueSize": -1 if record.value is None else len(record.value),
        "sequence": NO_SEQUENCE if h.base_sequence < 0 else increment_sequence(
            h.base_sequence, record.offset - h.base_offset),
        "headerKeys": [k for k, _ in record.headers],
    }
    try:
        if batch.is_control:  # Kafka decodes control records even without contents
            out.update(_control_contents(record))
        elif options.offsets_decoder:
            out.update(offsets_contents(record))
        elif options.transaction_log_decoder:
            out.update(transaction_contents(record))
        elif options.cluster_metadata_decoder:
            out["payload"] = _metadata_payload(record)
        elif options.print_contents:
            out["key"] = _text(record.key)
            out["payload"] = _text(record.value)
    except PyKraftError as exc:
        out["decodeError"] = str(exc)
    return out


def _text(data: bytes | None) -> str | None:
    """Kafka's StringDecoder: the bytes as UTF-8, malformed input replaced."""
    return None if data is None else data.decode("utf-8", errors="replace")


def _control_contents(record: Record) -> dict[str, Any]:
    control = decode_control(record.key, record.value)
    if isinstance(control.message, EndTxnMarker):
        return {"endTxnMarker": control.type.name,
                "coordinatorEpoch": control.message.coordinator_epoch}
    if control.type not in _JSON_CONTROL_TYPES:
        return {"controlType": control.dump_name}
    return {"control": control.dump_name, "value": to_json_dict(control.message, control.version)}


def _metadata_payload(record: Record) -> dict[str, Any]:
    if record.value is None:
        raise CorruptRecordError(f"metadata record at offset {record.offset} has a null value")
    return decode_metadata_record(record.value).to_json_dict()


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def format_text(dump: FileDump) -> Iterator[str]:
    """Kafka's text layout after its "Dumping <file>" line (the caller's, printed for every
    kind of file): the description, one line per batch, ``| `` lines per record."""
    yield dump.description
    for batch in dump.batches:
        horizon = batch["deleteHorizonMs"]
        horizon_text = "OptionalLong.empty" if horizon is None else f"OptionalLong[{horizon}]"
        yield (
            f"baseOffset: {batch['baseOffset']} lastOffset: {batch['lastOffset']} "
            f"count: {batch['count']} baseSequence: {batch['baseSequence']} "
            f"lastSequence: {batch['lastSequence']} producerId: {batch['producerId']} "
            f"producerEpoch: {batch['producerEpoch']} "
            f"partitionLeaderEpoch: {batch['partitionLeaderEpoch']} "
            f"isTransactional: {_bool(batch['isTransactional'])} "
            f"isControl: {_bool(batch['isControl'])} deleteHorizonMs: {horizon_text} "
            f"position: {batch['position']} {batch['timestampType']}: {batch['timestamp']} "
            f"size: {batch['size']} magic: {batch['magic']} "
            f"compresscodec: {batch['compresscodec']} crc: {batch['crc']} "
            f"isvalid: {_bool(batch['isvalid'])}"
        )
        for record in batch["records"]:
            yield _record_line(record, batch["timestampType"])
        if "error" in batch:
            yield f"Error in batch at position {batch['position']}: {batch['error']}"
    if dump.invalid_tail is not None:
        yield f"Found {dump.invalid_tail.size} invalid bytes at the end of {dump.path.name}"
    if dump.error:
        yield f"Error: {dump.error}"


def _record_line(record: dict[str, Any], timestamp_type: str) -> str:
    line = (
        f"| offset: {record['offset']} {timestamp_type}: {record['timestamp']} "
        f"keySize: {record['keySize']} valueSize: {record['valueSize']} "
        f"sequence: {record['sequence']} headerKeys: [{','.join(record['headerKeys'])}]"
    )
    if "decodeError" in record:
        return f"{line}\nError at {record['offset']}, skipping. {record['decodeError']}"
    if "endTxnMarker" in record:
        return (f"{line} endTxnMarker: {record['endTxnMarker']} "
                f"coordinatorEpoch: {record['coordinatorEpoch']}")
    if "controlType" in record:
        return f"{line} controlType: {record['controlType']}"
    if "control" in record:
        return f"{line} {record['control']} {_compact(record['value'])}"
    key = record.get("key")
    if key is not None:
        line += f" key: {key if isinstance(key, str) else _compact(key)}"
    payload = record.get("payload")
    if payload is not None:
        line += f" payload: {payload if isinstance(payload, str) else _compact(payload)}"
    return line


def _bool(value: bool) -> str:
    return "true" if value else "false"
