"""The streaming job: purchase events joined to a compacted users topic, totals per country
in 10-minute event-time windows, written to Parquet (exactly once, Spark's file sink) and
to a pykraft topic (at least once, Spark's Kafka sink: a key per window and country).

    python examples/pipeline/job.py --bootstrap HOST:PORT --out DIR --checkpoint DIR
        [--format kafka | pykraft] [--max-offsets-per-trigger N] [--master M | --remote URL]
        [--jars JAR,JAR...]

``--format kafka`` is Spark's own Kafka connector (a JVM package: ``--jars`` takes the
classpath `make spark-kafka` prints; through Connect, the server's ``spark.jars``),
``pykraft`` pykraft's Python data source (no JVM package: Spark Connect, managed clusters).
Both take Spark's Kafka options. The job processes what the topics hold when it starts
(``trigger(availableNow=True)``), in micro-batches of at most N events, then stops; run again
with the same ``--checkpoint`` it goes on from where the last run committed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from events import EVENTS_TOPIC, TOTALS_TOPIC, USERS_TOPIC
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 (Spark's own convention)
from pyspark.sql.streaming.query import StreamingQuery

from pykraft.spark.session import spark_session

WATERMARK = "30 minutes"  # more than any disorder of the input's event times
WINDOW = "10 minutes"
EVENT_SCHEMA = "user string, amount int, ts timestamp"


def _text(column: str) -> Column:
    return F.col(column).cast("string")


def latest_users(spark: SparkSession, source: str, bootstrap: str) -> DataFrame:
    """The compacted users topic as a table: each key's last value, tombstones dropped
    (the log may not be cleaned yet: compaction is the broker's, the reader's view is
    the same either way)."""
    records = (spark.read.format(source).option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", USERS_TOPIC).load())
    return (records.groupBy(_text("key").alias("user"))
            .agg(F.max_by("value", "offset").alias("value"))
            .where(F.col("value").isNotNull())
            .select("user", F.get_json_object(_text("value"), "$.country").alias("country")))


def totals(spark: SparkSession, source: str, bootstrap: str,
           max_offsets_per_trigger: int) -> DataFrame:
    """The streaming totals: (window_start, window_end, country, events, amount)."""
    events = (spark.readStream.format(source).option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", EVENTS_TOPIC).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(max_offsets_per_trigger)).load()
              .select(F.from_json(_text("value"), EVENT_SCHEMA).alias("event"))
              .select("event.*").withWatermark("ts", WATERMARK))
    joined = events.join(latest_users(spark, source, bootstrap), "user")
    return (joined.groupBy(F.window("ts", WINDOW), "country")
            .agg(F.count("*").alias("events"), F.sum("amount").alias("amount"))
            .select(F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"), "country", "events", "amount"))


def start(spark: SparkSession, *, source: str, bootstrap: str, out: Path, checkpoint: Path,
          max_offsets_per_trigger: int) -> list[StreamingQuery]:
    """Both sinks' queries, started (each with its own checkpoint)."""
    table = totals(spark, source, bootstrap, max_offsets_per_trigger)
    files = (table.writeStream.format("parquet").outputMode("append")
             .option("path", str(out)).option("checkpointLocation", str(checkpoint / "files"))
             .trigger(availableNow=True).start())
    keyed = table.select(
        F.concat_ws("|", "country", F.date_format("window_start", "yyyy-MM-dd'T'HH:mm'Z'"))
        .alias("key"), F.to_json(F.struct("*")).alias("value"))
    topic = (keyed.writeStream.format(source).outputMode("append")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", TOTALS_TOPIC)
             .option("checkpointLocation", str(checkpoint / "topic"))
             .trigger(availableNow=True).start())
    return [files, topic]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--format", choices=("kafka", "pykraft"), default="kafka")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=500)
    parser.add_argument("--master")
    parser.add_argument("--remote")
    parser.add_argument("--jars", default="", help="comma-separated jars for spark.jars")
    args = parser.parse_args()
    spark = spark_session(args.master, args.remote, app_name="pykraft-pipeline",
                          jars=[jar for jar in args.jars.split(",") if jar])
    try:
        for query in start(spark, source=args.format, bootstrap=args.bootstrap, out=args.out,
                           checkpoint=args.checkpoint,
                           max_offsets_per_trigger=args.max_offsets_per_trigger):
            query.awaitTermination()
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
