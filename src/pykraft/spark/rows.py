"""Records of KRaft files as flat rows: the data source's logic, free of Spark.

One row per record with where it came from (file, batch, offset), the batch facts (epoch,
timestamp, CRC validity, control flag) and the record decoded twice: as the JSON that
``dump-log --cluster-metadata-decoder`` prints, and as typed columns for the fields an
operator filters and joins on (topic, partition, broker, leader, ISR, config, voters).
``topic_name`` is filled on TopicRecords and on the records of the batch that created the
topic (its PartitionRecords); elsewhere join with the TopicRecords, as the analytics do.
Spark only calls :func:`read_range`; tests call it directly.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pykraft.errors import CorruptRecordError, PyKraftError
from pykraft.ids import uuid_to_str
from pykraft.messages import to_json_dict
from pykraft.records import control as ctl
from pykraft.records import metadata as md
from pykraft.records.batch import Record, RecordBatch, iter_batches
from pykraft.spark.files import FileRange

# name, Spark SQL type; the order is the row tuple's order.
COLUMN_TYPES: tuple[tuple[str, str], ...] = (
    ("cluster", "STRING"),
    ("file", "STRING"),
    ("file_kind", "STRING"),
    ("log_dir", "STRING"),
    ("snapshot_end_offset", "BIGINT"),
    ("snapshot_epoch", "INT"),
    ("batch_position", "BIGINT"),
    ("batch_base_offset", "BIGINT"),
    ("offset", "BIGINT"),
    ("leader_epoch", "INT"),
    ("timestamp_ms", "BIGINT"),
    ("crc_ok", "BOOLEAN"),
    ("is_control", "BOOLEAN"),
    ("control_type", "INT"),
    ("control_type_name", "STRING"),
    ("api_key", "INT"),
    ("record_type", "STRING"),
    ("record_version", "INT"),
    ("record_json", "STRING"),
    ("topic_id", "STRING"),
    ("topic_name", "STRING"),
    ("partition_id", "INT"),
    ("broker_id", "INT"),
    ("broker_epoch", "BIGINT"),
    ("fenced", "BOOLEAN"),
    ("leader", "INT"),
    ("isr", "ARRAY<INT>"),
    ("replicas", "ARRAY<INT>"),
    ("config_resource_type", "INT"),
    ("config_resource_name", "STRING"),
    ("config_name", "STRING"),
    ("config_value", "STRING"),
    ("feature_name", "STRING"),
    ("feature_level", "INT"),
    ("voter_id", "INT"),
    ("voter_ids", "ARRAY<INT>"),
    ("voter_directory_ids", "ARRAY<STRING>"),
    ("key", "BINARY"),
    ("value", "BINARY"),
    ("error", "STRING"),
)
COLUMNS = tuple(name for name, _ in COLUMN_TYPES)
SCHEMA_DDL = ", ".join(f"{name} {sql_type}" for name, sql_type in COLUMN_TYPES)

PERMISSIVE = "PERMISSIVE"
FAILFAST = "FAILFAST"
MODES = (PERMISSIVE, FAILFAST)

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class OffsetBounds:
    """An offset interval pushed down from ``WHERE offset ...``; None ends are open."""

    low: int | None = None
    high: int | None = None  # inclusive

    @property
    def unbounded(self) -> bool:
        return self.low is None and self.high is None

    def admits(self, offset: int | None) -> bool:
        """Spark's semantics: a null offset fails any comparison."""
        if self.unbounded:
            return True
        if offset is None:
            return False
        return (self.low is None or offset >= self.low) and (
            self.high is None or offset <= self.high)

    def overlaps(self, first: int | None, next_offset: int | None) -> bool:
        """Whether ``[first, next_offset)`` may hold an admitted offset (None = unknown)."""
        if self.high is not None and first is not None and first > self.high:
            return False
        return not (self.low is not None and next_offset is not None and next_offset <= self.low)

    def narrowed(self, low: int | None = None, high: int | None = None) -> OffsetBounds:
        """The intersection with another interval."""
        new_low = self.low if low is None else low if self.low is None else max(self.low, low)
        new_high = self.high if high is None else high if self.high is None else min(
            self.high, high)
        return OffsetBounds(new_low, new_high)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """What the caller asked for: raw bytes, corrupt-data mode, cluster label, offsets."""

    cluster: str | None = None
    raw_bytes: bool = False
    mode: str = PERMISSIVE
    bounds: OffsetBounds = field(default_factory=OffsetBounds)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")


def read_range(part: FileRange, options: ReadOptions) -> Iterator[Row]:
    """Every row of one range. PERMISSIVE: damage becomes rows with ``error`` set (a broken
    batch frame ends the range, a bad CRC or record does not). FAILFAST: the first damage
    raises :class:`CorruptRecordError` naming the file and byte position."""
    kraft_file = part.file
    if not options.bounds.overlaps(part.first_offset, part.next_offset):
        return
    with open(kraft_file.path, "rb") as handle:
        handle.seek(part.start)
        data = handle.read(part.end - part.start)
    base = {
        "cluster": options.cluster, "file": kraft_file.path, "file_kind": kraft_file.kind,
        "log_dir": kraft_file.log_dir, "snapshot_end_offset": kraft_file.snapshot_end_offset,
        "snapshot_epoch": kraft_file.snapshot_epoch,
    }
    batches = iter_batches(data, verify_crc=False, base_position=part.start)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except CorruptRecordError as exc:
            _fail_fast(options, kraft_file.path, exc)
            position = part.start if exc.position is None else exc.position
            if options.bounds.unbounded:
                yield _row(base, {"batch_position": position, "error": str(exc)})
            return
        if options.bounds.overlaps(batch.base_offset, batch.last_offset + 1):
            yield from _batch_rows(batch, base, options)


def _fail_fast(options: ReadOptions, path: str, exc: CorruptRecordError) -> None:
    if options.mode == FAILFAST:
        raise CorruptRecordError(f"{path}: {exc}", position=exc.position) from exc


def _batch_rows(batch: RecordBatch, base: dict[str, Any], options: ReadOptions) -> Iterator[Row]:
    header = batch.header
    batch_cols = {
        **base, "batch_position": batch.position, "batch_base_offset": header.base_offset,
        "leader_epoch": header.partition_leader_epoch, "timestamp_ms": header.max_timestamp,
        "crc_ok": batch.crc_valid(), "is_control": header.is_control,
    }
    problems: list[str] = []
    if not batch_cols["crc_ok"]:
        crc_error = CorruptRecordError(
            f"CRC mismatch: stored {header.crc:#010x}, computed {batch.computed_crc():#010x}",
            position=batch.position)
        _fail_fast(options, base["file"], crc_error)
        problems.append(str(crc_error))
    try:
        records = batch.records()
    except CorruptRecordError as exc:
        _fail_fast(options, base["file"], exc)
        if options.bounds.admits(header.base_offset):
            yield _row(batch_cols, {"offset": header.base_offset,
                                    "error": "; ".join([*problems, str(exc)])})
        return
    # Every record is decoded, admitted or not, so that names learnt inside the batch do
    # not depend on the offset filter.
    topics: dict[str, str] = {}
    for record in records:
        cols: dict[str, Any] = {"offset": record.offset, "timestamp_ms": record.timestamp}
        errors = list(problems)
        try:
            cols.update(_control_columns(record) if header.is_control
                        else _metadata_columns(record, topics))
        except PyKraftError as exc:
            errors.append(f"offset {record.offset}: {exc}")
        if not options.bounds.admits(record.offset):
            continue
        if len(errors) > len(problems):
            _fail_fast(options, base["file"],
                       CorruptRecordError(errors[-1], position=batch.position))
        if options.raw_bytes:
            cols["key"] = record.key
            cols["value"] = record.value
        cols["error"] = "; ".join(errors) or None
        yield _row(batch_cols, cols)


def _row(*parts: dict[str, Any]) -> Row:
    merged: dict[str, Any] = {}
    for part in parts:
        merged.update(part)
    return tuple(merged.get(name) for name in COLUMNS)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- control records -----------------------------------------------------------------


def _control_columns(record: Record) -> dict[str, Any]:
    control = ctl.decode_control(record.key, record.value)
    cols: dict[str, Any] = {"control_type": control.type_id,
                            "control_type_name": control.type.name}
    message = control.message
    if isinstance(message, ctl.UnknownControlRecord):
        cols["record_json"] = _json({"type": control.dump_name})
        return cols
    cols["record_json"] = _json({"type": control.dump_name,
                                 "data": to_json_dict(message, control.version)})
    if isinstance(message, ctl.LeaderChangeMessage):
        cols["leader"] = message.leader_id
        cols["voter_ids"] = [v.voter_id for v in message.voters]
    elif isinstance(message, ctl.VotersRecord):
        cols["voter_ids"] = [v.voter_id for v in message.voters]
        cols["voter_directory_ids"] = [uuid_to_str(v.voter_directory_id) for v in message.voters]
    elif isinstance(message, ctl.KRaftVersionRecord):
        cols["feature_name"] = "kraft.version"
        cols["feature_level"] = message.kraft_version
    return cols


# --- metadata records ----------------------------------------------------------------


def _metadata_columns(record: Record, topics: dict[str, str]) -> dict[str, Any]:
    if record.value is None:
        raise CorruptRecordError("metadata record with a null value")
    decoded = md.decode_metadata_record(record.value)
    cols: dict[str, Any] = {"api_key": decoded.api_key, "record_type": decoded.type_name,
                            "record_version": decoded.version,
                            "record_json": _json(decoded.to_json_dict())}
    extract = _EXTRACTORS.get(type(decoded.message))
    if extract is not None:
        cols.update(extract(decoded.message))
    topic_id = cols.get("topic_id")
    if topic_id is not None:
        if "topic_name" in cols:
            topics[topic_id] = cols["topic_name"]
        else:
            cols["topic_name"] = topics.get(topic_id)
    return cols


def _topic(m: md.TopicRecord) -> dict[str, Any]:
    return {"topic_id": uuid_to_str(m.topic_id), "topic_name": m.name}


def _partition(m: md.PartitionRecord) -> dict[str, Any]:
    return {"topic_id": uuid_to_str(m.topic_id), "partition_id": m.partition_id,
            "leader": m.leader, "isr": list(m.isr), "replicas": list(m.replicas)}


def _partition_change(m: md.PartitionChangeRecord) -> dict[str, Any]:
    # Leader -2 means "unchanged": null, so "last non-null leader" is the current one.
    return {"topic_id": uuid_to_str(m.topic_id), "partition_id": m.partition_id,
            "leader": None if m.leader == -2 else m.leader,
            "isr": None if m.isr is None else list(m.isr),
            "replicas": None if m.replicas is None else list(m.replicas)}


def _register_broker(m: md.RegisterBrokerRecord) -> dict[str, Any]:
    return {"broker_id": m.broker_id, "broker_epoch": m.broker_epoch, "fenced": m.fenced}


def _registration_change(m: md.BrokerRegistrationChangeRecord) -> dict[str, Any]:
    fenced = {1: True, -1: False}.get(m.fenced)  # 0: fencing unchanged
    return {"broker_id": m.broker_id, "broker_epoch": m.broker_epoch, "fenced": fenced}


def _config(m: md.ConfigRecord) -> dict[str, Any]:
    return {"config_resource_type": m.resource_type, "config_resource_name": m.resource_name,
            "config_name": m.name, "config_value": m.value}


_EXTRACTORS: dict[type, Callable[[Any], dict[str, Any]]] = {
    md.TopicRecord: _topic,
    md.RemoveTopicRecord: lambda m: {"topic_id": uuid_to_str(m.topic_id)},
    md.PartitionRecord: _partition,
    md.PartitionChangeRecord: _partition_change,
    md.RegisterBrokerRecord: _register_broker,
    md.UnregisterBrokerRecord: lambda m: {"broker_id": m.broker_id,
                                          "broker_epoch": m.broker_epoch},
    md.FenceBrokerRecord: lambda m: {"broker_id": m.id, "broker_epoch": m.epoch,
                                     "fenced": True},
    md.UnfenceBrokerRecord: lambda m: {"broker_id": m.id, "broker_epoch": m.epoch,
                                       "fenced": False},
    md.BrokerRegistrationChangeRecord: _registration_change,
    md.ProducerIdsRecord: lambda m: {"broker_id": m.broker_id, "broker_epoch": m.broker_epoch},
    md.ConfigRecord: _config,
    md.FeatureLevelRecord: lambda m: {"feature_name": m.name, "feature_level": m.feature_level},
    md.RegisterControllerRecord: lambda m: {"voter_id": m.controller_id},
}
