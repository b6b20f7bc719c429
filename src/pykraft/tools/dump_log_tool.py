"""``dump-log``: print the batches and records of KRaft segments and snapshots.

The text output follows Kafka's ``kafka-dump-log.sh`` (``DumpLogSegments``) line for line so
operators can diff the two; ``--json`` gives the same facts as one JSON document per file.
Corrupt data is never skipped silently: the valid prefix is printed, then the error with
the file and byte position in the storage reader's words, and the caller exits non-zero;
only a torn end of the log (what the server truncates at start-up) is counted as Kafka
counts it ("Found N invalid bytes at the end of ...") and is no failure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykraft.errors import CorruptLogError, CorruptRecordError, PyKraftError
from pykraft.messages import to_json_dict
from pykraft.records.batch import Record, RecordBatch, iter_batches
from pykraft.records.control import ControlType, decode_control
from pykraft.records.metadata import decode_metadata_record
from pykraft.storage.log import TornTail, continuity_problem, is_last_segment, is_torn_tail

_SEGMENT = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"

# Control record types whose value Kafka prints as JSON; the others only by type name.
_JSON_CONTROL_TYPES = (
    ControlType.SNAPSHOT_HEADER,
    ControlType.SNAPSHOT_FOOTER,
    ControlType.KRAFT_VERSION,
    ControlType.KRAFT_VOTERS,
)


@dataclass(frozen=True, slots=True)
class DumpOptions:
    cluster_metadata_decoder: bool = False
    print_data_log: bool = False

    @property
    def print_contents(self) -> bool:
        return self.cluster_metadata_decoder or self.print_data_log


@dataclass(slots=True)
class FileDump:
    """What one file holds, ready to print as text or JSON."""

    path: Path
    description: str
    batches: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    invalid_tail: TornTail | None = None

    def to_json(self) -> dict[str, Any]:
        tail = self.invalid_tail
        return {
            "file": str(self.path),
            "description": self.description,
            "batches": self.batches,
            "error": self.error,
            "invalidBytesAtEnd": None if tail is None else {
                "position": tail.position, "size": tail.size, "reason": tail.reason},
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


def dump_file(path: Path, options: DumpOptions) -> FileDump:
    """Read one file fully; stops at the first batch the storage reader would refuse
    (torn, or not continuing the offsets, or for a segment the leader epochs) and records
    the error in the reader's words. A CRC mismatch is shown per batch, as Kafka does.
    Damage nothing valid follows at the end of the log's last segment is a torn write
    (the server truncates it at start-up), counted as Kafka counts it, not an error."""
    dump = FileDump(path, describe_file(path))
    data = path.read_bytes()
    segment = _SEGMENT.match(path.name)
    expected = int(segment.group(1)) if segment else 0  # snapshots start at offset 0
    min_epoch = 0 if segment else None  # the reader checks epochs in segments only
    may_tear = segment is not None and is_last_segment(path)

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
            dump.batches.append(_batch_dict(batch, options))
            expected = batch.header.next_offset
            if min_epoch is not None:
                min_epoch = batch.header.partition_leader_epoch
    except CorruptRecordError as exc:
        position = exc.position or 0
        stop(position, str(exc), tail=torn(position))
    return dump


def _batch_dict(batch: RecordBatch, options: DumpOptions) -> dict[str, Any]:
    h = batch.header
    out: dict[str, Any] = {
        "baseOffset": h.base_offset,
        "lastOffset": h.last_offset,
        "count": h.records_count,
        "baseSequence": h.base_sequence,
        "lastSequence": h.base_sequence + h.last_offset_delta if h.base_sequence >= 0 else -1,
        "producerId": h.producer_id,
        "producerEpoch": h.producer_epoch,
        "partitionLeaderEpoch": h.partition_leader_epoch,
        "isTransactional": h.is_transactional,
        "isControl": h.is_control,
        "deleteHorizonMs": h.delete_horizon_ms,
        "position": batch.position,
        "CreateTime": h.max_timestamp,
        "size": h.size,
        "magic": h.magic,
        "compresscodec": h.compression,
        "crc": h.crc,
        "isvalid": batch.crc_valid(),
        "records": [],
    }
    if out["isvalid"]:
        try:
            out["records"] = [_record_dict(batch, r, options) for r in batch.records()]
        except CorruptRecordError as exc:
            out["error"] = str(exc)
    return out


def _record_dict(batch: RecordBatch, record: Record, options: DumpOptions) -> dict[str, Any]:
    out: dict[str, Any] = {
        "offset": record.offset,
        "CreateTime": record.timestamp,
        "keySize": -1 if record.key is None else len(record.key),
        "valueSize": -1 if record.value is None else len(record.value),
        "sequence": -1,
        "headerKeys": [k for k, _ in record.headers],
    }
    if not options.print_contents:
        return out
    try:
        if batch.is_control:
            out.update(_control_contents(record))
        elif options.cluster_metadata_decoder:
            out["payload"] = _metadata_payload(record)
        else:
            out["payload"] = None if record.value is None else record.value.decode(
                "utf-8", errors="replace"
            )
    except PyKraftError as exc:
        out["decodeError"] = str(exc)
    return out


def _control_contents(record: Record) -> dict[str, Any]:
    control = decode_control(record.key, record.value)
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
    """Kafka's text layout: a header line, one line per batch, ``| `` lines per record."""
    yield f"Dumping {dump.path}"
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
            f"position: {batch['position']} CreateTime: {batch['CreateTime']} "
            f"size: {batch['size']} magic: {batch['magic']} "
            f"compresscodec: {batch['compresscodec']} crc: {batch['crc']} "
            f"isvalid: {_bool(batch['isvalid'])}"
        )
        for record in batch["records"]:
            yield _record_line(record)
        if "error" in batch:
            yield f"Error in batch at position {batch['position']}: {batch['error']}"
    if dump.invalid_tail is not None:
        yield f"Found {dump.invalid_tail.size} invalid bytes at the end of {dump.path.name}"
    if dump.error:
        yield f"Error: {dump.error}"


def _record_line(record: dict[str, Any]) -> str:
    line = (
        f"| offset: {record['offset']} CreateTime: {record['CreateTime']} "
        f"keySize: {record['keySize']} valueSize: {record['valueSize']} "
        f"sequence: {record['sequence']} headerKeys: [{', '.join(record['headerKeys'])}]"
    )
    if "decodeError" in record:
        return f"{line}\nError at {record['offset']}, skipping. {record['decodeError']}"
    if "controlType" in record:
        return f"{line} controlType: {record['controlType']}"
    if "control" in record:
        return f"{line} {record['control']} {_compact(record['value'])}"
    if "payload" in record:
        payload = record["payload"]
        return f"{line} payload: {payload if isinstance(payload, str) else _compact(payload)}"
    return line


def _bool(value: bool) -> str:
    return "true" if value else "false"
