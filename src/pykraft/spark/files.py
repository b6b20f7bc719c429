"""Find the KRaft files under a path and cut them into ranges one Spark task each can read.

Only the metadata log is KRaft's: under a node or cluster directory, discovery takes the
segments and snapshots of ``__cluster_metadata-0`` directories and ``bootstrap.checkpoint``,
and never enters a Kafka log directory's other partitions (user topics,
``__consumer_offsets``): their records are not metadata records, and a broker's can be
millions of them.

Plain Python (no Spark) so planning is unit-testable. A range is a whole file unless the
file is larger than ``max_bytes``; then the batch headers are walked (12 bytes each, no
record is decoded) to cut it at batch boundaries, because a task cannot resynchronise in
the middle of a v2 batch stream.
"""

from __future__ import annotations

import itertools
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from pykraft.errors import StorageError
from pykraft.records.batch import LOG_OVERHEAD
from pykraft.storage.bootstrap import BOOTSTRAP_CHECKPOINT, METADATA_LOG_DIR_NAME
from pykraft.storage.snapshot_files import CHECKPOINT_SUFFIX, parse_snapshot_name

SEGMENT = "segment"
SNAPSHOT = "snapshot"
BOOTSTRAP = "bootstrap"
SEGMENT_SUFFIX = ".log"
DEFAULT_MAX_BYTES = 128 * 1024 * 1024

_PREFIX = struct.Struct(">qi")  # baseOffset, length
_LOG_DIR_MARKER = "meta.properties"
"""Kafka writes it at the top of every log directory: its other subdirectories are
partitions, which discovery does not enter."""


@dataclass(frozen=True, slots=True)
class KraftFile:
    """One readable file: what it is and the node log directory it belongs to."""

    path: str
    kind: str
    log_dir: str
    base_offset: int | None = None  # segments: from the name
    snapshot_end_offset: int | None = None
    snapshot_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class FileRange:
    """Bytes ``[start, end)`` of a file, aligned on batches; plain data so it pickles.

    ``first_offset``/``next_offset`` bound the log offsets inside when known (segments), so
    an offset filter can skip the range without reading it.
    """

    file: KraftFile
    start: int
    end: int
    first_offset: int | None
    next_offset: int | None


def classify(path: Path) -> KraftFile | None:
    """The KraftFile for a segment, frozen snapshot or bootstrap.checkpoint; else None."""
    name = path.name
    if name == BOOTSTRAP_CHECKPOINT:
        return KraftFile(str(path), BOOTSTRAP, str(path.parent))
    if name.endswith(SEGMENT_SUFFIX) and len(name) == 20 + len(SEGMENT_SUFFIX) and \
            name[:20].isdigit():
        return KraftFile(str(path), SEGMENT, str(path.parent.parent), base_offset=int(name[:20]))
    parsed = parse_snapshot_name(name)
    if parsed is not None and parsed[1] == CHECKPOINT_SUFFIX:
        snapshot_id = parsed[0]
        return KraftFile(str(path), SNAPSHOT, str(path.parent.parent),
                         snapshot_end_offset=snapshot_id.end_offset,
                         snapshot_epoch=snapshot_id.epoch)
    return None


def discover(path: str | Path) -> list[KraftFile]:
    """Every KRaft file at ``path``: a file named explicitly, or the metadata log files at or
    under a partition, node or cluster directory, sorted by path so the plan (and thus the
    output order) is stable. A directory of segments that is not ``__cluster_metadata-0``
    is refused: it is a topic partition (``kafka-segments`` reads those)."""
    root = Path(path)
    if root.is_file():
        found = classify(root)
        if found is None:
            raise StorageError(f"{root} is not a KRaft segment, snapshot or bootstrap.checkpoint")
        return [found]
    if not root.is_dir():
        raise StorageError(f"no such file or directory: {root}")
    if root.name != METADATA_LOG_DIR_NAME and any(
            _is_log_file(classify(root / name)) for name in os.listdir(root)):
        raise StorageError(f"{root} holds the segments of a topic partition, not of the "
                           f"metadata log ({METADATA_LOG_DIR_NAME}); read it with "
                           f"format('kafka-segments'), or name a segment file")
    files: list[KraftFile] = []
    for directory, subdirs, names in os.walk(root):
        in_log = Path(directory).name == METADATA_LOG_DIR_NAME
        if _LOG_DIR_MARKER in names or in_log:
            subdirs[:] = [] if in_log else [d for d in subdirs if d == METADATA_LOG_DIR_NAME]
        for name in names:
            found = classify(Path(directory) / name)
            if found is not None and (in_log or found.kind == BOOTSTRAP):
                files.append(found)
    if not files:
        raise StorageError(f"no metadata log under {root}: neither {METADATA_LOG_DIR_NAME} "
                           f"nor {BOOTSTRAP_CHECKPOINT} found")
    return sorted(files, key=lambda f: f.path)


def _is_log_file(found: KraftFile | None) -> bool:
    return found is not None and found.kind != BOOTSTRAP


def plan(files: list[KraftFile], max_bytes: int = DEFAULT_MAX_BYTES) -> list[FileRange]:
    """Ranges covering every file; segments know the offsets they may hold."""
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, not {max_bytes}")
    next_base = _next_segment_bases(files)
    ranges: list[FileRange] = []
    for kraft_file in files:
        size = os.path.getsize(kraft_file.path)
        if size <= max_bytes:
            ranges.append(FileRange(kraft_file, 0, size, kraft_file.base_offset,
                                    next_base.get(kraft_file.path)))
        else:
            ranges.extend(_split(kraft_file, size, max_bytes, next_base.get(kraft_file.path)))
    return ranges


def _next_segment_bases(files: list[KraftFile]) -> dict[str, int]:
    """path -> base offset of the following segment of the same partition directory."""
    by_dir: dict[str, list[KraftFile]] = {}
    for kraft_file in files:
        if kraft_file.kind == SEGMENT:
            by_dir.setdefault(str(Path(kraft_file.path).parent), []).append(kraft_file)
    out: dict[str, int] = {}
    for segments in by_dir.values():
        segments.sort(key=lambda f: f.base_offset or 0)
        for current, following in itertools.pairwise(segments):
            assert following.base_offset is not None
            out[current.path] = following.base_offset
    return out


def _split(kraft_file: KraftFile, size: int, max_bytes: int,
           next_offset: int | None) -> list[FileRange]:
    """Cut at the first batch boundary past each ``max_bytes``; a damaged header stops the
    walk and leaves the rest to the last range, whose reader then reports the damage."""
    cuts: list[tuple[int, int | None]] = [(0, kraft_file.base_offset)]
    with open(kraft_file.path, "rb") as handle:
        pos = 0
        while pos + LOG_OVERHEAD <= size:
            handle.seek(pos)
            base_offset, length = _PREFIX.unpack(handle.read(LOG_OVERHEAD))
            if length <= 0 or pos + LOG_OVERHEAD + length > size:
                break
            if pos - cuts[-1][0] >= max_bytes:
                cuts.append((pos, base_offset if kraft_file.kind == SEGMENT else None))
            pos += LOG_OVERHEAD + length
    ranges = []
    for index, (start, first) in enumerate(cuts):
        last = index + 1 == len(cuts)
        end = size if last else cuts[index + 1][0]
        upper = next_offset if last else cuts[index + 1][1]
        ranges.append(FileRange(kraft_file, start, end, first, upper))
    return ranges
