"""Scale run: metadata images of 100k, 500k and 1M partitions, their memory and snapshots.

For each size, a fresh child process builds the image the way a broker or controller
replaying the metadata log does (synthetic RegisterBrokerRecord, TopicRecord and
PartitionRecord values, framed in record batches of at most 10,000 records, fed through the
:class:`~pykraft.image.loader.ImageLoader`), then writes it with pykraft's snapshot writer.
A second fresh child loads that snapshot with pykraft's snapshot reader, as a restarting
node does. Fresh processes keep each figure free of the previous size's garbage.

Reported per size: build (log replay) time, RSS growth over the interpreter's baseline once
the image is built and once it is loaded, peak RSS, optionally the bytes tracemalloc sees
held by the image (``--tracemalloc``: slower), snapshot write and load times and file size.

    .venv/bin/python bench/scale.py [--sizes 100000,500000,1000000] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pykraft.features import DEFAULT_METADATA_VERSION, METADATA_VERSION_FEATURE
from pykraft.ids import ZERO_UUID
from pykraft.image.image import MetadataImage
from pykraft.image.loader import ImageLoader
from pykraft.image.snapshot import MAX_RECORDS_PER_BATCH, load_snapshot, write_image_snapshot
from pykraft.image.versions import record_version
from pykraft.records.batch import encode_batch, iter_batches
from pykraft.records.metadata import (
    BrokerEndpoint,
    FeatureLevelRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    encode_metadata_record,
)

SIZES = (100_000, 500_000, 1_000_000)
BROKERS = 12
REPLICATION = 3
EPOCH = 1
CHILD_TIMEOUT_S = 1800


@dataclass(frozen=True)
class Shape:
    """How the synthetic cluster looks: ``partitions`` spread over topics of a fixed size."""

    partitions: int
    per_topic: int

    @property
    def topics(self) -> int:
        return -(-self.partitions // self.per_topic)

    def topic_partitions(self, topic: int) -> int:
        return min(self.per_topic, self.partitions - topic * self.per_topic)


def synthetic_records(shape: Shape) -> Iterator[tuple[object, int]]:
    """(record, version) pairs a controller would have written for ``shape``, in log order:
    metadata.version, the brokers, then each topic followed by its partitions."""
    mv = DEFAULT_METADATA_VERSION.level
    yield FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=mv), 0
    broker_version = record_version(RegisterBrokerRecord, mv)
    for broker in range(BROKERS):
        yield RegisterBrokerRecord(
            broker_id=broker, incarnation_id=uuid.UUID(int=broker + 1), broker_epoch=broker + 1,
            end_points=(BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9092 + broker,
                                       security_protocol=0),),
            features=(), rack=f"rack-{broker % 3}", fenced=False, in_controlled_shutdown=False,
            is_migrating_zk_broker=False, log_dirs=(uuid.UUID(int=1000 + broker),),
        ), broker_version
    partition_version = record_version(PartitionRecord, mv)
    directories = (ZERO_UUID,) * REPLICATION if partition_version >= 1 else ()
    for topic in range(shape.topics):
        topic_id = uuid.UUID(int=(topic + 1) << 64)
        yield TopicRecord(name=f"topic-{topic:07d}", topic_id=topic_id), 0
        for partition in range(shape.topic_partitions(topic)):
            first = (topic + partition) % BROKERS
            replicas = tuple((first + r) % BROKERS for r in range(REPLICATION))
            yield PartitionRecord(
                partition_id=partition, topic_id=topic_id, replicas=replicas, isr=replicas,
                leader=replicas[0], leader_epoch=0, partition_epoch=0, directories=directories,
            ), partition_version


def build_image(shape: Shape) -> MetadataImage:
    """Replay the synthetic log: encoded values, record batches, the image loader."""
    loader = ImageLoader()
    pending: list[tuple[bytes | None, bytes | None]] = []
    offset = 0

    def flush() -> None:
        nonlocal offset
        data = encode_batch(offset, pending, partition_leader_epoch=EPOCH, timestamp=0)
        for batch in iter_batches(data):
            loader.load_batch(batch)
        offset += len(pending)
        pending.clear()

    for record, version in synthetic_records(shape):
        pending.append((None, encode_metadata_record(record, version)))
        if len(pending) == MAX_RECORDS_PER_BATCH:
            flush()
    if pending:
        flush()
    return loader.image


def partition_count(image: MetadataImage) -> int:
    return sum(len(topic.partitions) for topic in image.topics.by_id.values())


def rss_bytes() -> tuple[int, int]:
    """(current, peak) resident set size of this process, from /proc/self/status."""
    fields = dict(line.split(":", 1) for line in
                  Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return (int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024)


@contextmanager
def timed(into: dict[str, float], key: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    into[key] = round(time.perf_counter() - started, 3)


def child_build(shape: Shape, directory: Path, trace: bool) -> dict[str, Any]:
    """Build, measure, write the snapshot; the parent reads the returned dict as JSON."""
    gc.collect()
    baseline, _ = rss_bytes()
    out: dict[str, Any] = {}
    if trace:
        tracemalloc.start()
    with timed(out, "build_s"):
        image = build_image(shape)
    gc.collect()
    if trace:
        out["image_traced_bytes"] = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    built, peak_build = rss_bytes()
    out["image_rss_bytes"] = built - baseline
    out["peak_rss_build_bytes"] = peak_build
    out["partitions_built"] = partition_count(image)
    with timed(out, "snapshot_write_s"):
        path = write_image_snapshot(directory, image, clock=lambda: 0)
    out["peak_rss_write_bytes"] = rss_bytes()[1]
    out["snapshot_path"] = str(path)
    out["snapshot_bytes"] = path.stat().st_size
    return out


def child_load(path: Path) -> dict[str, Any]:
    gc.collect()
    baseline, _ = rss_bytes()
    out: dict[str, Any] = {}
    with timed(out, "snapshot_load_s"):
        image = load_snapshot(path)
    gc.collect()
    loaded, peak = rss_bytes()
    out["loaded_rss_bytes"] = loaded - baseline
    out["peak_rss_load_bytes"] = peak
    out["partitions_loaded"] = partition_count(image)
    return out


def run_child(argv: list[str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, *argv], capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise SystemExit(f"scale child {argv} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def measure(shape: Shape, directory: Path, trace: bool) -> dict[str, Any]:
    """Build and write in one child, load in another; both must see every partition."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    built = run_child(["--child-build", str(shape.partitions), "--per-topic",
                       str(shape.per_topic), "--dir", str(directory),
                       *(["--tracemalloc"] if trace else [])])
    loaded = run_child(["--child-load", built["snapshot_path"]])
    if not built["partitions_built"] == loaded["partitions_loaded"] == shape.partitions:
        raise SystemExit(f"partition counts differ: wanted {shape.partitions}, built "
                         f"{built['partitions_built']}, loaded {loaded['partitions_loaded']}")
    shutil.rmtree(directory, ignore_errors=True)
    return {**asdict(shape), "topics": shape.topics, **built, **loaded}


def mib(value: int) -> str:
    return f"{value / 2**20:.0f}"


def print_table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"metadata images ({BROKERS} brokers, replication {REPLICATION})")
    columns = ("partitions", "topics", "build s", "image RSS MiB", "traced MiB",
               "peak RSS MiB", "snapshot MiB", "write s", "load s", "loaded RSS MiB")
    for column in columns:
        table.add_column(column, justify="right")
    for row in rows:
        traced = row.get("image_traced_bytes")
        table.add_row(
            f"{row['partitions']:,}", f"{row['topics']:,}", f"{row['build_s']:.1f}",
            mib(row["image_rss_bytes"]), "-" if traced is None else mib(traced),
            mib(max(row["peak_rss_write_bytes"], row["peak_rss_load_bytes"])),
            f"{row['snapshot_bytes'] / 2**20:.1f}", f"{row['snapshot_write_s']:.1f}",
            f"{row['snapshot_load_s']:.1f}", mib(row["loaded_rss_bytes"]))
    Console(width=140).print(table)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=lambda s: [int(n) for n in s.split(",")],
                        default=list(SIZES), help="partition counts, comma-separated")
    parser.add_argument("--per-topic", type=int, default=100, help="partitions per topic")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="also count the image's bytes with tracemalloc (slower build)")
    parser.add_argument("--dir", default="/tmp/pykraft-bench-scale",
                        help="snapshot directory (removed after each size)")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    parser.add_argument("--child-build", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-load", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.per_topic < 1 or min(args.sizes) < 1:
        parser.error("--sizes and --per-topic must be positive")
    return args


def main(args: argparse.Namespace) -> None:
    if args.child_build is not None:
        json.dump(child_build(Shape(args.child_build, args.per_topic), Path(args.dir),
                              args.tracemalloc), sys.stdout)
        return
    if args.child_load is not None:
        json.dump(child_load(Path(args.child_load)), sys.stdout)
        return
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load_before = os.getloadavg()[0]
    rows = [measure(Shape(size, args.per_topic), Path(args.dir) / str(size), args.tracemalloc)
            for size in args.sizes]
    load_after = os.getloadavg()[0]
    summary: dict[str, Any] = {"date": started, "python": platform.python_version(),
               "cpus": os.cpu_count(),
               "loadavg_1min": {"before": load_before, "after": load_after},
               "brokers": BROKERS, "replication": REPLICATION, "sizes": rows}
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
        return
    print(f"{started}, {os.cpu_count()} cores, Python {summary['python']}, 1-min load "
          f"average {load_before:.2f} before, {load_after:.2f} after")
    print_table(rows)


if __name__ == "__main__":
    main(parse_args())
