"""Metadata analytics: what happened in one or more KRaft clusters, as Parquet tables.

Input: metadata log directories (a node dir, or a whole cluster dir holding every node's
copy), each labelled with a cluster name; only ``__cluster_metadata-0`` and
``bootstrap.checkpoint`` are read (see :mod:`files`). Every replica holds a prefix of the
same committed log, so the history tables read one replica per cluster: the one whose
metadata log reaches furthest (its log end offset or latest snapshot; ties: the log that
starts earliest, then the first by path). ``log_replicas`` says which one that is and how
far behind each other replica is; the ``records`` table keeps every row of every file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pykraft.spark.source import SOURCE_NAME

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

TABLES = ("records", "log_replicas", "record_types", "topics", "topic_timeline",
          "partition_changes", "broker_events", "fencing_periods", "controller_leaders",
          "voter_changes")


@dataclass(frozen=True, slots=True)
class ClusterInput:
    name: str
    path: str


def cluster_inputs(paths: list[str]) -> list[ClusterInput]:
    """Label each path with its directory name, made unique with a suffix when repeated."""
    seen: dict[str, int] = {}
    inputs = []
    for path in paths:
        base = Path(path).resolve().name or "cluster"
        seen[base] = seen.get(base, 0) + 1
        name = base if seen[base] == 1 else f"{base}-{seen[base]}"
        inputs.append(ClusterInput(name, path))
    return inputs


def load_records(spark: SparkSession, inputs: list[ClusterInput]) -> DataFrame:
    frames = [spark.read.format(SOURCE_NAME).option("cluster", i.name).load(i.path)
              for i in inputs]
    records = frames[0]
    for frame in frames[1:]:
        records = records.unionByName(frame)
    # Cached: every table reads it, and each scan of a Python source costs a worker round.
    return records.withColumn("timestamp", _ts("timestamp_ms")).cache()


def build_tables(records: DataFrame) -> dict[str, DataFrame]:
    """Every table of :data:`TABLES`, lazily (nothing runs until written or collected)."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

    replicas = _log_replicas(records).cache()
    log = _canonical_log(records, replicas).cache()
    kind = F.coalesce(F.col("record_type"), F.col("control_type_name"))
    tables: dict[str, DataFrame] = {
        "records": records,
        "log_replicas": replicas,
        "record_types": log.groupBy("cluster", kind.alias("record_type")).count(),
    }
    # A log whose oldest segments were deleted after a snapshot (Kafka's metadata retention)
    # starts from that snapshot's topics and partitions; without them, counts and leader
    # changes of what was created earlier would be wrong.
    state = log.unionByName(_starting_state(records, replicas))
    tables["topics"] = topics = _topics(state)
    tables["topic_timeline"] = _topic_timeline(state)
    tables["partition_changes"] = _partition_changes(state, topics)
    tables["broker_events"] = broker_events = _broker_events(log)
    tables["fencing_periods"] = _fencing_periods(broker_events)
    tables["controller_leaders"] = _controller_leaders(log)
    tables["voter_changes"] = _voter_changes(records, log)
    return tables


def write_tables(tables: dict[str, DataFrame], out: Path) -> None:
    for name, frame in tables.items():
        frame.write.mode("overwrite").parquet(str(out / name))


def _ts(column: str) -> Column:
    from pyspark.sql import functions as F  # noqa: N812

    return F.timestamp_millis(F.col(column))


def _log_replicas(records: DataFrame) -> DataFrame:
    """One row per node log dir: where its metadata log starts and ends, how far behind
    the furthest replica of its cluster it is, and whether the history is read from it.

    The reach is the log end offset (the last offset of a batch whose CRC holds, + 1) or
    the end offset of its latest snapshot, whichever is greater.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    segment = (F.col("file_kind") == "segment") & F.col("crc_ok")
    per_dir = records.groupBy("cluster", "log_dir").agg(
        F.min(F.when(segment, F.col("offset"))).alias("log_start_offset"),
        (F.max(F.when(segment, F.col("offset"))) + 1).alias("log_end_offset"),
        F.max("snapshot_end_offset").alias("snapshot_end_offset"),
        F.min(F.when(segment, F.col("timestamp_ms"))).alias("first_ms"),
        F.max(F.when(segment, F.col("timestamp_ms"))).alias("last_ms"))
    reach = F.coalesce(F.greatest("log_end_offset", "snapshot_end_offset"), F.lit(0))
    cluster = Window.partitionBy("cluster")
    best = cluster.orderBy(F.col("end_offset").desc(), F.col("log_start_offset").asc_nulls_last(),
                           F.col("log_dir"))
    ranked = per_dir.withColumn("end_offset", reach).withColumn(
        "used", F.row_number().over(best) == 1)
    return ranked.select(
        "*", (F.max("end_offset").over(cluster) - F.col("end_offset")).alias("offsets_behind"),
        (F.max("last_ms").over(cluster) - F.col("last_ms")).alias("ms_behind"))


def _canonical_log(records: DataFrame, replicas: DataFrame) -> DataFrame:
    """Segment rows of the replica :func:`_log_replicas` chose in each cluster."""
    from pyspark.sql import functions as F  # noqa: N812

    chosen = replicas.filter("used").select("cluster", "log_dir")
    return records.filter(F.col("file_kind") == "segment").join(chosen, ["cluster", "log_dir"])


def _starting_state(records: DataFrame, replicas: DataFrame) -> DataFrame:
    """The TopicRecords and PartitionRecords of the snapshot the history's log starts from:
    the used replica's latest snapshot ending at or before its first segment offset (none
    when the log starts at 0), at offset -1 and the log's first record's time."""
    from pyspark.sql import functions as F  # noqa: N812

    used = replicas.filter("used").select("cluster", "log_dir", "log_start_offset", "first_ms")
    snapshots = records.filter((F.col("file_kind") == "snapshot") & F.col("record_type").isin(
        "TOPIC_RECORD", "PARTITION_RECORD")).join(used, ["cluster", "log_dir"]).filter(
        F.col("log_start_offset").isNull()
        | (F.col("snapshot_end_offset") <= F.col("log_start_offset")))
    latest = snapshots.groupBy("cluster").agg(
        F.max("snapshot_end_offset").alias("snapshot_end_offset"))
    return snapshots.join(latest, ["cluster", "snapshot_end_offset"]).withColumn(
        "offset", F.lit(-1).cast("bigint")).withColumn("timestamp", _ts("first_ms")).select(
        *records.columns)


def _topics(log: DataFrame) -> DataFrame:
    """Each topic's creation and removal; a topic of the starting snapshot has no creation
    offset or time (it was created before the log)."""
    from pyspark.sql import functions as F  # noqa: N812

    created = (F.col("record_type") == "TOPIC_RECORD") & (F.col("offset") >= 0)
    removed = F.col("record_type") == "REMOVE_TOPIC_RECORD"
    named = F.col("record_type") == "TOPIC_RECORD"
    return (log.filter(named | removed).groupBy("cluster", "topic_id").agg(
        F.max("topic_name").alias("topic_name"),
        F.min(F.when(created, F.col("offset"))).alias("created_offset"),
        F.min(F.when(created, F.col("timestamp"))).alias("created_at"),
        F.min(F.when(removed, F.col("offset"))).alias("removed_offset"),
        F.min(F.when(removed, F.col("timestamp"))).alias("removed_at")))


def _topic_timeline(log: DataFrame) -> DataFrame:
    """Topics and partitions alive after each record that changed their number."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    partitions_of = (log.filter(F.col("record_type") == "PARTITION_RECORD")
                     .groupBy("cluster", "topic_id").agg(F.count("*").alias("n")))
    deltas = log.filter(F.col("record_type").isin(
        "TOPIC_RECORD", "PARTITION_RECORD", "REMOVE_TOPIC_RECORD")).join(
        partitions_of, ["cluster", "topic_id"], "left").select(
        "cluster", "offset", "timestamp",
        F.when(F.col("record_type") == "TOPIC_RECORD", 1)
         .when(F.col("record_type") == "REMOVE_TOPIC_RECORD", -1).otherwise(0).alias("dt"),
        F.when(F.col("record_type") == "PARTITION_RECORD", 1)
         .when(F.col("record_type") == "REMOVE_TOPIC_RECORD", -F.coalesce(F.col("n"), F.lit(0)))
         .otherwise(0).alias("dp"))
    running = Window.partitionBy("cluster").orderBy("offset").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    # the starting snapshot's records share offset -1: one point
    deltas = deltas.groupBy("cluster", "offset", "timestamp").agg(
        F.sum("dt").alias("dt"), F.sum("dp").alias("dp"))
    return deltas.select("cluster", "offset", "timestamp",
                         F.sum("dt").over(running).alias("topics"),
                         F.sum("dp").over(running).alias("partitions"))


def _partition_changes(log: DataFrame, topics: DataFrame) -> DataFrame:
    """Each partition record with the leader and ISR in force after it and what changed."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    rows = log.filter(F.col("record_type").isin("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"))
    history = Window.partitionBy("cluster", "topic_id", "partition_id").orderBy("offset")
    upto = history.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    state = rows.select(
        "cluster", "offset", "timestamp", "topic_id", "partition_id", "record_type",
        F.last("leader", ignorenulls=True).over(upto).alias("leader"),
        F.last("isr", ignorenulls=True).over(upto).alias("isr"),
        F.last("replicas", ignorenulls=True).over(upto).alias("replicas"))
    previous = Window.partitionBy("cluster", "topic_id", "partition_id").orderBy("offset")
    changes = state.select(
        "*",
        (F.lag("leader").over(previous).isNotNull()
         & (F.lag("leader").over(previous) != F.col("leader"))).alias("leader_changed"),
        (F.lag("isr").over(previous).isNotNull()
         & (F.lag("isr").over(previous) != F.col("isr"))).alias("isr_changed"))
    names = topics.select("cluster", "topic_id", "topic_name")
    return changes.filter(F.col("offset") >= 0).join(names, ["cluster", "topic_id"], "left")


_BROKER_EVENTS = {
    "REGISTER_BROKER_RECORD": "registered",
    "UNREGISTER_BROKER_RECORD": "unregistered",
    "FENCE_BROKER_RECORD": "fenced",
    "UNFENCE_BROKER_RECORD": "unfenced",
    "BROKER_REGISTRATION_CHANGE_RECORD": "registration-changed",
}


def _broker_events(log: DataFrame) -> DataFrame:
    """Registrations, fencing and unfencing, with the fenced state in force after each."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    event = F.create_map(*[F.lit(x) for pair in _BROKER_EVENTS.items() for x in pair])
    rows = log.filter(F.col("record_type").isin(*_BROKER_EVENTS))
    upto = Window.partitionBy("cluster", "broker_id").orderBy("offset").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    # An unregistered broker is out of the cluster: count it as fenced until it registers.
    fenced = F.when(F.col("record_type") == "UNREGISTER_BROKER_RECORD", True).otherwise(
        F.col("fenced"))
    return rows.select("cluster", "offset", "timestamp", "broker_id", "broker_epoch",
                       event[F.col("record_type")].alias("event"),
                       F.last(fenced, ignorenulls=True).over(upto).alias("fenced"))


def _fencing_periods(events: DataFrame) -> DataFrame:
    """One row per stretch a broker spent fenced; ``until`` is null while it still is."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    order = Window.partitionBy("cluster", "broker_id").orderBy("offset")
    flips = events.filter(F.col("fenced").isNotNull()).withColumn(
        "before", F.lag("fenced").over(order)).filter(
        F.col("before").isNull() | (F.col("before") != F.col("fenced")))
    spans = flips.select("*", F.lead("offset").over(order).alias("until_offset"),
                         F.lead("timestamp").over(order).alias("until"))
    return spans.filter("fenced").select(
        "cluster", "broker_id", F.col("offset").alias("from_offset"),
        F.col("timestamp").alias("since"), "until_offset", "until",
        F.col("event").alias("cause"))


def _controller_leaders(log: DataFrame) -> DataFrame:
    """One row per controller epoch: who led it, from which offset and time."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    changes = log.filter(F.col("control_type_name") == "LEADER_CHANGE")
    first = Window.partitionBy("cluster", "leader_epoch").orderBy("offset")
    return (changes.withColumn("n", F.row_number().over(first)).filter("n = 1")
            .select("cluster", F.col("leader_epoch").alias("epoch"), "leader", "offset",
                    "timestamp", F.col("voter_ids").alias("voters")))


def _voter_changes(records: DataFrame, log: DataFrame) -> DataFrame:
    """Each voter set written to the log (KRaftVoters), marking those that differ from the
    previous one. A dynamic quorum's initial set comes from the 0-0 checkpoint, which only
    the nodes formatted with it hold (any replica's: they are the same bootstrap). A static
    quorum writes no KRaftVoters: its set is the one each LeaderChange names."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    voters = F.col("control_type_name") == "KRAFT_VOTERS"
    bootstrap = records.filter(voters & (F.col("snapshot_end_offset") == 0))
    first_dir = bootstrap.groupBy("cluster").agg(F.min("log_dir").alias("log_dir"))
    initial = bootstrap.join(first_dir, ["cluster", "log_dir"]).withColumn(
        "offset", F.lit(-1).cast("bigint"))
    dynamic = log.filter(voters).unionByName(initial)
    static = log.filter(F.col("control_type_name") == "LEADER_CHANGE").join(
        dynamic.select("cluster").distinct(), ["cluster"], "left_anti")
    order = Window.partitionBy("cluster").orderBy("offset")
    return dynamic.unionByName(static).select(
        "cluster", "offset", "timestamp", "leader_epoch", "voter_ids", "voter_directory_ids",
        F.coalesce(F.lag(F.array_sort("voter_ids")).over(order) != F.array_sort("voter_ids"),
                   F.lit(True)).alias("changed"),
        F.when(voters, "KRaftVoters").otherwise("LeaderChange").alias("source"))
