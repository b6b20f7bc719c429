"""Reading one topic of N records, every way a Spark user can, in one run: Spark's Kafka
connector, pykraft's ``format("pykraft")``, ``format("kafka-segments")`` on the broker's log
dir (whole, and with a pushed-down ``partition = 0``), one confluent-kafka consumer (no
Spark), and the same rows from Parquet (Spark, and pyarrow alone).

    python bench/spark_read.py [--records 1000000] [--value-bytes 100] [--partitions 3]
        [--master local[2]] [--dir DIR] [--json]

A 1-broker pykraft cluster is started (and stopped) under ``--dir``, the topic produced
once by an idempotent producer; each way then reads every record (Spark: ``count`` and
``sum(length(value))``, so every value is read) and its rows/s and MB/s (key + value bytes)
are printed with the ratio to the consumer's, and the load average before and after. Each
way runs once, in the order listed, after one untimed warm-up query per source: check
``uptime`` first, other work on the same cores skews every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 (Spark's own convention)
from rich.console import Console
from rich.table import Table

from pykraft.spark.session import spark_session

ROOT = Path(__file__).resolve().parents[1]
TOPIC = "bench-read"
WARM_UP_TOPIC = "bench-warm-up"  # 1,000 records each way reads first, untimed
WARM_UP_RECORDS = 1000
SEGMENT_BYTES = 64 * 1024 * 1024
CONSUME_DEADLINE_S = 600.0
console = Console(stderr=True)


@dataclass
class Figure:
    way: str
    rows: int
    payload_bytes: int
    seconds: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.payload_bytes / self.seconds / 1e6


def start_cluster(base: Path) -> str:
    """A 1-controller 1-broker cluster with 64 MiB segments; its bootstrap servers."""
    up = subprocess.run([sys.executable, "-m", "pykraft", "cluster", "up", "--controllers",
                         "1", "--brokers", "1", "--dir", str(base), "--detach",
                         f"--override=log.segment.bytes={SEGMENT_BYTES}"],
                        capture_output=True, text=True, timeout=120, check=True)
    found = re.search(r"bootstrap servers (\S+)", up.stdout)
    if found is None:
        raise SystemExit(f"cluster up printed no bootstrap servers:\n{up.stdout}{up.stderr}")
    return found.group(1).rstrip(";,")


def produce(bootstrap: str, topic: str, records: int, value_bytes: int,
            partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "linger.ms": 20, "batch.size": 1 << 20})
    value = b"v" * value_bytes
    for index in range(records):
        while True:
            try:
                producer.produce(topic, key=b"%09d" % index, value=value,
                                 partition=index % partitions)
                break
            except BufferError:
                producer.poll(0.1)  # the local queue is full: let deliveries drain it
    if producer.flush(300):
        raise SystemExit("not every record was acknowledged")


def consumer_read(bootstrap: str, topic: str, partitions: int) -> tuple[int, int]:
    """(rows, key + value bytes) read by one consumer from offset 0 to every end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-read",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "fetch.max.bytes": 50 << 20})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    rows = size = 0
    ended: set[int] = set()
    deadline = time.monotonic() + CONSUME_DEADLINE_S
    try:
        while len(ended) < partitions and time.monotonic() < deadline:
            # consume() returns when it has all it asked for or at its timeout: a long
            # timeout is waited out in full on the last, short, batch (30 s of 36 s)
            for message in consumer.consume(10_000, 0.2):
                if message.error():
                    ended.add(message.partition() or 0)
                    continue
                rows += 1
                size += len(message.key() or b"") + len(message.value() or b"")
    finally:
        consumer.close()
    if len(ended) < partitions:
        raise SystemExit(f"the consumer did not reach every end in {CONSUME_DEADLINE_S:.0f} s")
    return rows, size


def counted(frame: DataFrame) -> tuple[int, int]:
    (row,) = frame.agg(F.count("*").alias("rows"), F.sum(
        F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))
    ).alias("bytes")).collect()
    return int(row["rows"]), int(row["bytes"] or 0)


def timed(way: str, read: Callable[[], tuple[int, int]]) -> Figure:
    began = time.perf_counter()
    rows, size = read()
    figure = Figure(way, rows, size, time.perf_counter() - began)
    console.print(f"{way}: {rows} rows in {figure.seconds:.1f} s")
    return figure


def ways(spark: SparkSession, bootstrap: str, name: str, log_dir: Path, parquet: Path,
         partitions: int) -> list[tuple[str, Callable[[], tuple[int, int]]]]:
    """How each way reads topic ``name`` (or ``parquet``, its rows written once)."""
    def topic(source: str) -> DataFrame:
        return (spark.read.format(source).option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", name).load())

    def segments(pushdown: bool = False) -> DataFrame:
        return (spark.read.format("kafka-segments").option("subscribe", name)
                .option("pushdown", str(pushdown).lower()).load(str(log_dir)))

    def parquet_pyarrow() -> tuple[int, int]:
        table = pq.read_table(parquet, columns=["key", "value"])
        lengths = [pc.sum(pc.binary_length(table[name])).as_py() or 0
                   for name in ("key", "value")]
        return table.num_rows, sum(lengths)

    return [
        ("confluent-kafka consumer", lambda: consumer_read(bootstrap, name, partitions)),
        ('Spark format("kafka") (the connector)', lambda: counted(topic("kafka"))),
        ('Spark format("pykraft")', lambda: counted(topic("pykraft"))),
        ('Spark format("kafka-segments")', lambda: counted(segments())),
        ('Spark format("kafka-segments") where partition = 0',
         lambda: counted(segments(pushdown=True).where("partition = 0"))),
        ("Spark read.parquet", lambda: counted(spark.read.parquet(str(parquet)))),
        ("pyarrow read_table (no Spark)", parquet_pyarrow),
    ]


def table(figures: list[Figure], before: tuple[float, ...], after: tuple[float, ...]) -> Table:
    base = figures[0]
    out = Table(title=f"reading {base.rows:,} records (load {before[0]:.2f} -> {after[0]:.2f})")
    for column in ("way", "rows", "s", "rows/s", "MB/s", "x consumer"):
        out.add_column(column, justify="left" if column == "way" else "right")
    for figure in figures:
        out.add_row(figure.way, f"{figure.rows:,}", f"{figure.seconds:.1f}",
                    f"{figure.rows_per_s:,.0f}", f"{figure.mb_per_s:.1f}",
                    f"{figure.rows_per_s / base.rows_per_s:.2f}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pykraft-bench-spark-read"))
    parser.add_argument("--json", action="store_true", help="print JSON (tables to stderr)")
    args = parser.parse_args()
    if args.dir.exists() and any(args.dir.iterdir()):
        parser.error(f"--dir {args.dir} is not empty")
    sys.path.insert(0, str(ROOT / "scripts"))
    import fetch_spark_kafka

    base = args.dir / "cluster"
    bootstrap = start_cluster(base)
    try:
        console.print(f"producing {args.records:,} records to {bootstrap}")
        produce(bootstrap, TOPIC, args.records, args.value_bytes, args.partitions)
        produce(bootstrap, WARM_UP_TOPIC, WARM_UP_RECORDS, args.value_bytes, args.partitions)
        spark = spark_session(args.master, app_name="bench-spark-read",
                              jars=fetch_spark_kafka.fetch())
        log_dir = next(base.glob(f"*/*/{TOPIC}-0")).parent
        planned = {}
        for name in (WARM_UP_TOPIC, TOPIC):
            parquet = args.dir / f"{name}.parquet"
            spark.read.format("kafka-segments").option("subscribe", name).load(
                str(log_dir)).write.parquet(str(parquet))
            planned[name] = ways(spark, bootstrap, name, log_dir, parquet, args.partitions)
        for _, read in planned[WARM_UP_TOPIC]:  # a source's first query pays its start-up
            read()
        before = os.getloadavg()
        figures = [timed(way, read) for way, read in planned[TOPIC]]
        after = os.getloadavg()
        spark.stop()
    finally:
        subprocess.run([sys.executable, "-m", "pykraft", "cluster", "down", "--dir",
                        str(base)], capture_output=True, timeout=120, check=False)
    console.print(table(figures, before, after))
    if args.json:
        print(json.dumps({"load_before": before, "load_after": after, "figures": [
            {**asdict(f), "rows_per_s": round(f.rows_per_s), "mb_per_s": round(f.mb_per_s, 2)}
            for f in figures]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
