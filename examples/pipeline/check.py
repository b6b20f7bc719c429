"""Read what the job wrote and compare it with :mod:`expected`: the Parquet files Spark's
file sink committed (its ``_spark_metadata`` log names them: a file a killed run left
behind is not output), and the totals topic (at least once: the last record per key)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.parquet as pq
from confluent_kafka import Consumer, TopicPartition
from events import TOTALS_TOPIC
from expected import Totals


def committed_files(out: Path) -> list[Path]:
    """The data files of every batch in the sink's metadata log (``N`` and ``N.compact``
    files: a line ``v1``, then one JSON entry per file)."""
    found: dict[str, bool] = {}
    for log in sorted((out / "_spark_metadata").iterdir()):
        if log.name.startswith(".") or log.name.endswith(".tmp"):
            continue
        for line in log.read_text().splitlines()[1:]:
            entry = json.loads(line)
            found[entry["path"]] = entry["action"] != "delete"
    return [Path(unquote(urlparse(path).path)) for path, kept in sorted(found.items()) if kept]


def _window_start(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def file_totals(out: Path) -> tuple[Totals, int]:
    """(the totals the file sink holds, how many rows: more than keys means duplicates)."""
    found: Totals = {}
    rows = 0
    for path in committed_files(out):
        for row in pq.read_table(path).to_pylist():
            rows += 1
            found[(_window_start(row["window_start"]), row["country"])] = (
                row["events"], row["amount"])
    return found, rows


def topic_totals(bootstrap: str, deadline_s: float = 30.0) -> Totals:
    """The totals topic read to its end, the last record of each key."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "pipeline-check",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(TOTALS_TOPIC, 0, 0)])
        found: Totals = {}
        while (message := consumer.poll(deadline_s)) is not None:
            if message.error():
                break  # the end of the partition (or an error, which the caller sees)
            row = json.loads(message.value() or b"{}")
            start = datetime.fromisoformat(row["window_start"]).astimezone(UTC)
            found[(start, row["country"])] = (row["events"], row["amount"])
        return found
    finally:
        consumer.close()
