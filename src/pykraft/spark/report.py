"""The HTML report an operator opens first: per cluster, who led the quorum when, which
brokers were fenced for how long, which partitions changed leader most, how the topic
count evolved and what the log is made of. Charts are inline SVG (see :mod:`svg`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from pykraft.spark import svg

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

Rows = list[dict[str, Any]]
_REPORT_TABLES = ("log_replicas", "record_types", "topics", "topic_timeline", "partition_changes",
                  "fencing_periods", "controller_leaders", "voter_changes")
_TOP_PARTITIONS = 30
_TIME_COLUMNS = ("timestamp", "since", "until", "created_at", "removed_at")


def collect(tables: dict[str, DataFrame]) -> dict[str, Rows]:
    """The small tables as plain rows, times as epoch milliseconds (no local-zone guess)."""
    from pyspark.sql import functions as F  # noqa: N812

    out: dict[str, Rows] = {}
    for name in _REPORT_TABLES:
        frame = tables[name]
        columns = [F.unix_millis(c).alias(c) if c in _TIME_COLUMNS else F.col(c)
                   for c in frame.columns]
        out[name] = [row.asDict() for row in frame.select(*columns).collect()]
    records = tables["records"]
    summary = records.groupBy("cluster").agg(
        F.count("*").alias("records"),
        F.count("error").alias("errors"),
        F.countDistinct("log_dir").alias("log_dirs"),
        F.min(F.when(F.col("file_kind") == "segment", F.col("timestamp_ms"))).alias("first_ms"),
        F.max(F.when(F.col("file_kind") == "segment", F.col("timestamp_ms"))).alias("last_ms"))
    out["summary"] = [row.asDict() for row in summary.collect()]
    return out


def render(data: dict[str, Rows]) -> str:
    """The whole report as one HTML document."""
    clusters = sorted(row["cluster"] for row in data["summary"])
    parts = [_HEAD, "<h1>KRaft metadata report</h1>",
             _table(["cluster", "rows read (every file)", "with errors", "log dirs", "first",
                     "last"],
                    [[s["cluster"], s["records"], s["errors"], s["log_dirs"],
                      _when(s["first_ms"]), _when(s["last_ms"])]
                     for s in sorted(data["summary"], key=lambda s: s["cluster"])])]
    for cluster in clusters:
        parts.append(_cluster_section(cluster, {k: [r for r in v if r["cluster"] == cluster]
                                                for k, v in data.items()}))
    parts.append("</body></html>")
    return "\n".join(parts)


def replica_notes(replicas: Rows) -> tuple[list[str], list[str]]:
    """(which replica each cluster's history is read from, a warning per replica behind it),
    as lines for the report and the terminal."""
    used: list[str] = []
    behind: list[str] = []
    for row in sorted(replicas, key=lambda r: (r["cluster"], r["log_dir"])):
        if row["used"]:
            used.append(f"{row['cluster']}: history read from {row['log_dir']} "
                        f"(metadata log end offset {row['end_offset']})")
        elif row["offsets_behind"]:
            late = "" if row["ms_behind"] is None else f", {_duration(row['ms_behind'])}"
            behind.append(f"{row['cluster']}: {row['log_dir']} is behind: metadata log end "
                          f"offset {row['end_offset']}, {row['offsets_behind']} offsets{late} "
                          f"short of the furthest replica")
    return used, behind


def _duration(ms: int) -> str:
    seconds = ms / 1000
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _replicas_section(replicas: Rows) -> str:
    used, behind = replica_notes(replicas)
    notes = [f"<p>{escape(line)}</p>" for line in used]
    notes += [f'<p class="warn">Warning: {escape(line)}</p>' for line in behind]
    rows = [[r["log_dir"], _offset(r["log_start_offset"]), _offset(r["log_end_offset"]),
             _offset(r["snapshot_end_offset"]), _when(r["last_ms"]), r["offsets_behind"],
             "yes" if r["used"] else ""]
            for r in sorted(replicas, key=lambda r: r["log_dir"])]
    return "\n".join(["<h3>Metadata log replicas</h3>", *notes, _table(
        ["log dir", "log start", "log end", "latest snapshot", "last record",
         "offsets behind", "history"], rows)])


def _cluster_section(cluster: str, data: dict[str, Rows]) -> str:
    # The charts' time axis is the history's: the used replica's first and last record.
    used = [r for r in data["log_replicas"] if r["used"]]
    t0 = (used[0]["first_ms"] if used else None) or 0
    t1 = (used[0]["last_ms"] if used else None) or t0
    out = [f"<h2>Cluster {escape(cluster)}</h2>", _replicas_section(data["log_replicas"])]
    leaders = sorted(data["controller_leaders"], key=lambda r: r["epoch"])
    out.append("<h3>Controller leadership</h3>")
    out.append(svg.lanes(f"{cluster}: controller leader per epoch",
                         _leader_lanes(leaders, t1), t0, t1))
    out.append(_table(["epoch", "leader", "from offset", "since", "voters"],
                      [[r["epoch"], r["leader"], r["offset"], _when(r["timestamp"]),
                        _ids(r["voters"])] for r in leaders]))
    out.append("<h3>Broker fencing</h3>")
    out.append(svg.lanes(f"{cluster}: periods each broker spent fenced",
                         _fencing_lanes(data["fencing_periods"], t1), t0, t1))
    out.append("<h3>Partition leader changes</h3>")
    counts = _leader_change_counts(data["partition_changes"])
    shown = counts[:_TOP_PARTITIONS]
    top = f" (the {len(shown)} of {len(counts)} with most)" if len(shown) < len(counts) else ""
    out.append(svg.bar_chart(f"{cluster}: leader changes per partition{top}", shown) if counts
               else "<p>No partition changed leader.</p>")
    out.append("<h3>Topics and partitions over time</h3>")
    timeline = sorted(data["topic_timeline"], key=lambda r: r["offset"])
    out.append(svg.step_lines(f"{cluster}: topics and partitions", [
        ("topics", [(r["timestamp"], r["topics"]) for r in timeline]),
        ("partitions", [(r["timestamp"], r["partitions"]) for r in timeline])], t0, t1))
    out.append(_table(["topic", "id", "created", "removed"], [
        [r["topic_name"], r["topic_id"], _when(r["created_at"]), _when(r["removed_at"])]
        for r in sorted(data["topics"], key=lambda r: r["created_offset"] or -1)]))
    out.append("<h3>Voter set</h3>")
    out.append(_table(["offset", "epoch", "since", "voters", "directory ids", "changed",
                       "from"], [
        ["0-0 checkpoint" if r["offset"] < 0 else r["offset"], r["leader_epoch"],
         _when(r["timestamp"]), _ids(r["voter_ids"]), _ids(r["voter_directory_ids"]),
         "yes" if r["changed"] else "", r["source"]]
        for r in sorted(data["voter_changes"], key=lambda r: r["offset"])]))
    out.append("<h3>Records per type</h3>")
    types = sorted(((r["record_type"] or "?", r["count"]) for r in data["record_types"]),
                   key=lambda kv: (-kv[1], kv[0]))
    out.append(svg.bar_chart(f"{cluster}: records per type", types))
    return "\n".join(out)


def _leader_lanes(leaders: Rows, end_ms: float) -> list[tuple[str, list[tuple[float, float,
                                                                                  str]]]]:
    spans: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    for current, following in zip(leaders, [*leaders[1:], None], strict=True):
        until = following["timestamp"] if following else end_ms
        spans[current["leader"]].append((current["timestamp"], until, f"epoch {current['epoch']}"))
    return [(f"controller {leader}", spans[leader]) for leader in sorted(spans)]


def _fencing_lanes(periods: Rows, end_ms: float) -> list[tuple[str, list[tuple[float, float,
                                                                                 str]]]]:
    spans: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    for p in sorted(periods, key=lambda r: r["from_offset"]):
        until = p["until"] if p["until"] is not None else end_ms
        spans[p["broker_id"]].append((p["since"], until, p["cause"]))
    return [(f"broker {broker}", spans[broker]) for broker in sorted(spans)]


def _leader_change_counts(changes: Rows) -> list[tuple[str, int]]:
    """Leader changes per partition, most first. Counted by topic id: a topic deleted and
    created again under its name is another topic, labelled with its id as well."""
    counts = Counter((r["topic_id"], r["partition_id"]) for r in changes if r["leader_changed"])
    ids_of: dict[str, set[str]] = defaultdict(set)
    for r in changes:
        ids_of[r["topic_name"] or r["topic_id"]].add(r["topic_id"])
    names = {r["topic_id"]: r["topic_name"] or r["topic_id"] for r in changes}

    def label(topic_id: str, partition: int) -> str:
        name = names[topic_id]
        suffix = f" ({topic_id})" if len(ids_of[name]) > 1 else ""
        return f"{name}-{partition}{suffix}"

    labelled = [(label(*key), n) for key, n in counts.items()]
    return sorted(labelled, key=lambda kv: (-kv[1], kv[0]))


def _offset(value: int | None) -> str:
    return "-" if value is None else str(value)


def _when(ms: float | None) -> str:
    return "-" if ms is None else svg.clock(ms)


def _ids(values: Sequence[Any] | None) -> str:
    return "-" if values is None else ", ".join(str(v) for v in values)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


_HEAD = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>KRaft metadata report</title>
<style>body{font-family:sans-serif;margin:2em;max-width:960px}table{border-collapse:collapse;
margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 8px;font-size:13px}
th{background:#f3f3f3}.warn{color:#b00}h2{border-bottom:2px solid #4e79a7}</style></head><body>"""
