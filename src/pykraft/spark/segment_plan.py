"""Plan a ``kafka-segments`` read: which replica of each partition, which offsets, which
segment files. Plain Python (no Spark): the data source calls :func:`plan` on the driver.

The rules, as a consumer of the cluster would see the data:

- **Committed only.** A partition is read up to its high watermark, from the log
  directory's ``replication-offset-checkpoint`` (Kafka writes it every
  ``replica.high.watermark.checkpoint.interval.ms`` and at shutdown). A partition missing
  from it is refused unless ``committedOnly=false`` (then it is read to its log end).
- **One replica.** When several directories hold the same partition (the dirs of several
  brokers), the replica with the highest high watermark is read, so each record comes once.
- **Offsets.** ``startingOffsets`` (``earliest`` or JSON) and ``endingOffsets`` (``latest``,
  the high watermark, or JSON), as Spark's Kafka source: ``-2`` earliest, ``-1`` latest. The
  earliest offset is the first segment's, or the ``log-start-offset-checkpoint`` entry when
  DeleteRecords or retention moved it. A starting offset below it is data loss: an error,
  or read from the earliest offset with ``failOnDataLoss=false``.
- **Compaction.** Offsets below the ``cleaner-offset-checkpoint`` entry (the first dirty
  offset) may have gaps; anywhere else the reader treats a gap as lost data.
- **Isolation.** ``isolationLevel=read_committed`` reads up to the last stable offset at
  the high watermark instead, and skips the records of aborted transactions (their
  ``.txnindex`` entries, given to each task: :mod:`pykraft.spark.segment_txns`); it needs
  ``committedOnly`` (a transaction is only decided below the high watermark).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pykraft.errors import ConfigError, StorageError
from pykraft.ids import TopicPartition
from pykraft.log.log_manager import CLEANER_OFFSET_CHECKPOINT
from pykraft.spark.segment_txns import (
    Aborted,
    aborted_transactions,
    last_stable_offset,
    overlapping,
)
from pykraft.storage.bootstrap import METADATA_LOG_DIR_NAME
from pykraft.storage.file_error import StateFileError
from pykraft.storage.meta_properties import META_PROPERTIES
from pykraft.storage.offset_checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)
from pykraft.storage.partition_log import parse_partition_dir_name, partition_dir_name
from pykraft.storage.segment import LOG_SUFFIX, is_segment_name
from pykraft.storage.time_index import TIME_INDEX_SUFFIX, max_indexed_timestamp

EARLIEST = -2
LATEST = -1
_LOG = logging.getLogger(__name__)
_HINT = "set failOnDataLoss=false to skip it"


class DataLossError(StorageError):
    """Data the read was asked for is gone or damaged (Spark's ``failOnDataLoss`` case)."""


@dataclass(frozen=True, slots=True)
class TopicFilter:
    """Spark's ``subscribe`` (topic names), ``subscribePattern`` (a regex the whole name
    must match, as Java's ``Matcher.matches``) or ``assign`` (topic partitions); none keeps
    every topic."""

    subscribe: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[TopicPartition, ...] = ()

    def keeps(self, topic: str, partition: int) -> bool:
        if self.assign:
            return TopicPartition(topic, partition) in self.assign
        if self.subscribe:
            return topic in self.subscribe
        return self.pattern is None or re.fullmatch(self.pattern, topic) is not None

    def missing(self, found: Iterable[TopicPartition]) -> list[str]:
        """The named topics (subscribe) or partitions (assign) no directory holds."""
        present = set(found)
        if self.assign:
            return [f"{tp.topic}-{tp.partition}" for tp in self.assign if tp not in present]
        topics = {tp.topic for tp in present}
        return [topic for topic in self.subscribe if topic not in topics]


@dataclass(frozen=True, slots=True)
class OffsetBounds:
    """What ``WHERE`` pushed down: inclusive offset ends (None open), the partition numbers
    kept (None: all) and the lowest timestamp (ms) wanted."""

    low: int | None = None
    high: int | None = None
    partitions: frozenset[int] | None = None
    min_timestamp: int | None = None

    def narrowed(self, low: int | None, high: int | None) -> OffsetBounds:
        new_low = low if self.low is None else self.low if low is None else max(self.low, low)
        new_high = high if self.high is None else self.high if high is None else min(
            self.high, high)
        return replace(self, low=new_low, high=new_high)

    def since(self, timestamp: int) -> OffsetBounds:
        current = self.min_timestamp
        return replace(self, min_timestamp=timestamp if current is None
                       else max(current, timestamp))

    def only(self, partitions: Iterable[int]) -> OffsetBounds:
        kept = frozenset(partitions)
        return replace(self, partitions=kept if self.partitions is None
                       else self.partitions & kept)


@dataclass(frozen=True, slots=True)
class ReadSpec:
    """The parsed options of a read; plain data so the Spark reader pickles."""

    paths: tuple[str, ...]
    topics: TopicFilter = TopicFilter()
    starting: Mapping[TopicPartition, int] | int = EARLIEST
    ending: Mapping[TopicPartition, int] | int = LATEST
    fail_on_data_loss: bool = True
    committed_only: bool = True
    read_committed: bool = False


@dataclass(frozen=True, slots=True)
class SegmentFile:
    """One Spark task: the offsets ``[start, end)`` of one ``.log`` segment (``end`` None:
    to the end of the log). ``next_base`` is the following segment's base offset (None for
    the last, active segment, the only one allowed a torn tail); offsets below
    ``cleaned_end`` were compacted and may have gaps."""

    path: str
    topic: str
    partition: int
    base_offset: int
    next_base: int | None = None
    start: int = 0
    end: int | None = None
    cleaned_end: int = 0
    aborted: tuple[Aborted, ...] = ()
    """``read_committed``: the aborted transactions with records here (skipped)."""


@dataclass(frozen=True, slots=True)
class Replica:
    """One directory's copy of a partition, with what its log directory's checkpoints say."""

    directory: Path
    tp: TopicPartition
    segments: tuple[int, ...]  # base offsets, ascending
    high_watermark: int | None
    log_start: int | None
    cleaned_end: int

    @property
    def earliest(self) -> int:
        first = self.segments[0] if self.segments else 0
        return first if self.log_start is None else max(first, self.log_start)

    def segment_path(self, base_offset: int) -> str:
        return str(self.directory / f"{base_offset:020d}{LOG_SUFFIX}")


def plan(spec: ReadSpec, bounds: OffsetBounds = OffsetBounds()) -> list[SegmentFile]:
    """The segment reads of ``spec``, ordered by topic, partition and offset."""
    replicas = choose_replicas(discover(spec.paths, spec.topics, spec.fail_on_data_loss))
    _check_offsets_cover(spec.starting, replicas, "startingOffsets")
    _check_offsets_cover(spec.ending, replicas, "endingOffsets")
    tasks: list[SegmentFile] = []
    for tp in sorted(replicas):
        if bounds.partitions is not None and tp.partition not in bounds.partitions:
            continue
        replica = replicas[tp]
        start, end = _offset_range(spec, replica)
        if bounds.low is not None:
            start = max(start, bounds.low)
        if bounds.high is not None:
            end = bounds.high + 1 if end is None else min(end, bounds.high + 1)
        planned = [task for task in _segment_tasks(replica, start, end)
                   if not _older_than(task, bounds.min_timestamp)]
        tasks += _without_aborted(replica, planned) if spec.read_committed else planned
    return tasks


def _without_aborted(replica: Replica, tasks: list[SegmentFile]) -> list[SegmentFile]:
    """``read_committed``: each task given the aborted transactions it must skip."""
    if not tasks:
        return tasks
    aborted = aborted_transactions(replica.directory, replica.segments)
    found = []
    for task in tasks:
        limits = [limit for limit in (task.end, task.next_base) if limit is not None]
        found.append(replace(task, aborted=overlapping(
            aborted, max(task.start, task.base_offset), min(limits, default=None))))
    return found


def _older_than(task: SegmentFile, timestamp: int | None) -> bool:
    """Whether a rolled segment's time index says all its records are below ``timestamp``
    (the active segment's index is not final: never skipped)."""
    if timestamp is None or task.next_base is None:
        return False
    indexed = max_indexed_timestamp(Path(task.path).with_suffix(TIME_INDEX_SUFFIX))
    return indexed is not None and indexed < timestamp


def discover(paths: Sequence[str], topics: TopicFilter, fail_on_data_loss: bool = True
             ) -> list[Replica]:
    """Every kept partition directory under ``paths`` (log directories, or partition
    directories); clear errors for a path that is none of them."""
    if not paths:
        raise ConfigError("the kafka-segments data source needs log directories")
    found: list[Replica] = []
    for path in map(Path, paths):
        if not path.is_dir():
            raise StorageError(f"no such log directory: {path}")
        if _partition_of(path) is not None:
            directories = [path]
        else:
            directories = [d for d in sorted(path.iterdir()) if _partition_of(d) is not None]
            if not directories:
                raise StorageError(_not_a_log_dir(path))
        found += [_replica(d, fail_on_data_loss) for d in directories]
    kept = [r for r in found if topics.keeps(r.tp.topic, r.tp.partition)]
    missing = topics.missing(r.tp for r in found)
    if missing:
        raise StorageError(f"not found in {', '.join(paths)}: {', '.join(missing)} (topic "
                           f"partitions there: {_names(found)})")
    return kept


def choose_replicas(replicas: Iterable[Replica]) -> dict[TopicPartition, Replica]:
    """Per partition, the replica with the highest high watermark (then the longest log)."""
    best: dict[TopicPartition, Replica] = {}
    for replica in replicas:
        current = best.get(replica.tp)
        if current is None or _rank(replica) > _rank(current):
            best[replica.tp] = replica
    return best


def _rank(replica: Replica) -> tuple[int, int]:
    hw = -1 if replica.high_watermark is None else replica.high_watermark
    return hw, replica.segments[-1] if replica.segments else -1


def _partition_of(directory: Path) -> TopicPartition | None:
    """The partition of a live ``<topic>-<partition>`` directory; None for anything else
    (files, the metadata log, ``-delete``/``-future``/``-stray`` directories)."""
    if not directory.is_dir() or directory.name == METADATA_LOG_DIR_NAME:
        return None
    try:
        tp = parse_partition_dir_name(directory.name)
    except StateFileError:
        return None
    return tp if partition_dir_name(tp) == directory.name else None


def _not_a_log_dir(path: Path) -> str:
    below = [d.name for d in sorted(path.iterdir())
             if d.is_dir() and ((d / META_PROPERTIES).exists()
                                or any(_partition_of(c) for c in d.iterdir()))]
    if below:
        return (f"{path} holds no topic partition directories; it holds log directories "
                f"one level down: load those ({', '.join(str(path / b) for b in below)})")
    return (f"{path} holds no topic partition directories (<topic>-<partition>): not a "
            f"Kafka log directory, or every topic in it is gone")


def _names(replicas: Sequence[Replica]) -> str:
    names = sorted({f"{r.tp.topic}-{r.tp.partition}" for r in replicas})
    return ", ".join(names[:20]) + (" ..." if len(names) > 20 else "") if names else "none"


def _replica(directory: Path, fail_on_data_loss: bool) -> Replica:
    tp = _partition_of(directory)
    assert tp is not None  # the caller kept only partition directories
    log_dir = directory.parent
    bases: list[int] = []
    for file in directory.iterdir():
        if not file.name.endswith(LOG_SUFFIX):
            continue
        if is_segment_name(file.name):
            bases.append(int(file.name[:20]))
            continue
        # Kafka refuses to load a log holding such a file (offsetFromFileName fails)
        message = f"{file}: a .log file that is not a segment (<20-digit offset>.log)"
        if fail_on_data_loss:
            raise DataLossError(f"{message}; {_HINT}")
        _LOG.warning("%s: skipped", message)
    return Replica(
        directory, tp, tuple(sorted(bases)),
        high_watermark=_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT, tp),
        log_start=_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT, tp),
        cleaned_end=_checkpoint(log_dir / CLEANER_OFFSET_CHECKPOINT, tp) or 0)


def _checkpoint(path: Path, tp: TopicPartition) -> int | None:
    return read_offset_checkpoint(path).get(tp)


def _offset_range(spec: ReadSpec, replica: Replica) -> tuple[int, int | None]:
    """``[start, end)`` of one partition from the options, the HW and the log start."""
    tp = replica.tp
    hw = replica.high_watermark
    if spec.committed_only and hw is None:
        checkpoint = replica.directory.parent / REPLICATION_OFFSET_CHECKPOINT
        raise StorageError(
            f"{tp.topic}-{tp.partition}: no high watermark in {checkpoint} (a broker writes "
            f"it every few seconds and at shutdown); set committedOnly=false to read up to "
            f"the log end")
    latest = hw if spec.committed_only else None
    if spec.read_committed and hw is not None:  # committedOnly: a high watermark is known
        latest = last_stable_offset(replica.directory, replica.segments, hw)
    earliest = replica.earliest
    start = _offset_for(spec.starting, tp)
    if start == EARLIEST:
        start = earliest
    elif start < earliest:
        message = (f"{tp.topic}-{tp.partition}: startingOffsets {start} is below the earliest "
                   f"offset {earliest} (deleted by retention or DeleteRecords)")
        if spec.fail_on_data_loss:
            raise DataLossError(f"{message}; set failOnDataLoss=false to start from {earliest}")
        _LOG.warning("%s: reading from %d", message, earliest)
        start = earliest
    ending = _offset_for(spec.ending, tp)
    end = latest if ending == LATEST else ending if latest is None else min(ending, latest)
    if end is not None and start > end:
        raise ConfigError(f"{tp.topic}-{tp.partition}: the starting offset {start} is after "
                          f"the ending offset {end}")
    return start, end


def _offset_for(offsets: Mapping[TopicPartition, int] | int, tp: TopicPartition) -> int:
    return offsets if isinstance(offsets, int) else offsets[tp]


def _check_offsets_cover(offsets: Mapping[TopicPartition, int] | int,
                         replicas: Mapping[TopicPartition, Replica], option: str) -> None:
    """Spark's rule: offsets given per partition name exactly the partitions read."""
    if isinstance(offsets, int) or set(offsets) == set(replicas):
        return
    names = sorted(f"{tp.topic}-{tp.partition}" for tp in set(offsets) ^ set(replicas))
    raise ConfigError(f"if {option} contains specific offsets, it must name exactly the "
                      f"partitions read (-2 earliest, -1 latest); these differ: "
                      f"{', '.join(names)}")


def _segment_tasks(replica: Replica, start: int, end: int | None) -> list[SegmentFile]:
    """The segments holding offsets of ``[start, end)``."""
    if end is not None and start >= end:
        return []
    bases = replica.segments
    tasks = []
    for index, base in enumerate(bases):
        next_base = bases[index + 1] if index + 1 < len(bases) else None
        if next_base is not None and next_base <= start:
            continue
        if end is not None and base >= end:
            break
        tasks.append(SegmentFile(replica.segment_path(base), replica.tp.topic,
                                 replica.tp.partition, base, next_base, start, end,
                                 replica.cleaned_end))
    return tasks


def parse_offsets(text: str | None, option: str, default: int,
                  allowed: tuple[str, ...]) -> Mapping[TopicPartition, int] | int:
    """``earliest``/``latest`` (those ``allowed``) or Spark's JSON
    ``{"topic": {"0": 23, "1": -2}}``."""
    if text is None:
        return default
    word = text.strip().lower()
    if word in allowed:
        return EARLIEST if word == "earliest" else LATEST
    try:
        parsed = json.loads(text)
        offsets = {TopicPartition(str(topic), int(p)): int(o)
                   for topic, per in parsed.items() for p, o in per.items()}
    except (ValueError, AttributeError, TypeError):
        raise ConfigError(f"option {option} must be {' or '.join(allowed)} or JSON like "
                          f'{{"topic":{{"0":23,"1":-2}}}}, not {text!r}') from None
    refused = [o for o in offsets.values() if o < EARLIEST or (
        o == EARLIEST and "earliest" not in allowed) or (o == LATEST and "latest" not in allowed)]
    if refused:
        raise ConfigError(f"option {option}: offset {refused[0]} is not allowed here")
    return offsets


def parse_assign(text: str) -> tuple[TopicPartition, ...]:
    """Spark's ``assign`` JSON: ``{"topicA": [0, 1], "topicB": [2]}``."""
    try:
        parsed = json.loads(text)
        return tuple(TopicPartition(str(topic), int(p))
                     for topic, partitions in parsed.items() for p in partitions)
    except (ValueError, AttributeError, TypeError):
        raise ConfigError(f'option assign must be JSON like {{"topicA":[0,1]}}, not '
                          f"{text!r}") from None
