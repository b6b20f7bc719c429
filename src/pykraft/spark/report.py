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
_REPORT_TABLES = ("record_types", "topics", "topic_timeline", "partition_changes",
                  "fencing_periods", "controller_leaders", "voter_changes")
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
             _table(["cluster", "records", "with errors", "log dirs", "first", "last"],
                    [[s["cluster"], s["records"], s["errors"], s["log_dirs"],
                      _when(s["first_ms"]), _when(s["last_ms"])]
                     for s in sorted(data["summary"], key=lambda s: s["cluster"])])]
    for cluster in clusters:
        parts.append(_cluster_section(cluster, {k: [r for r in v if r["cluster"] == cluster]
                                                for k, v in data.items()}))
    parts.append("</body></html>")
    return "\n".join(parts)


def _cluster_section(cluster: str, data: dict[str, Rows]) -> str:
    summary = data["summary"][0]
    t0 = summary["first_ms"] or 0
    t1 = summary["last_ms"] or t0
    out = [f"<h2>Cluster {escape(cluster)}</h2>"]
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
    out.append(svg.bar_chart(f"{cluster}: leader changes per partition", counts) if counts
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
    out.append(_table(["offset", "epoch", "voters", "directory ids", "changed"], [
        [r["offset"], r["leader_epoch"], _ids(r["voter_ids"]),
         _ids(r["voter_directory_ids"]), r["changed"]]
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
    counts = Counter(f"{r['topic_name'] or r['topic_id']}-{r['partition_id']}"
                     for r in changes if r["leader_changed"])
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:30]


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
th{background:#f3f3f3}h2{border-bottom:2px solid #4e79a7}</style></head><body>"""
