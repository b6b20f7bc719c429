"""The analytics job on a recorded cluster history (tests/fixtures/recorded_history, made
by scripts/record_cluster_history.py, checked against the script's ``recording.json``), on
one recorded live by the same script, and on the generated history of cluster_history.py
for what the recording does not show: a stale node whose user partitions reach further
than the metadata log, a controlled-shutdown fencing, a log starting at a snapshot,
several clusters at once, and event times to check the charts against."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from html import escape
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from cluster_history import (
    EXPECTED,
    STALE_NODE,
    build,
    event_times,
    write_stale_cluster,
    write_truncated_node,
)
from pyspark.sql import SparkSession
from test_rows import read_all

from pykraft.records import control as ctl
from pykraft.records import metadata as md
from pykraft.records.batch import iter_batches
from pykraft.spark import analytics, report

pytestmark = pytest.mark.spark
FIXTURE = Path(__file__).parents[1] / "fixtures" / "recorded_history"
SCRIPT = Path(__file__).parents[2] / "scripts" / "record_cluster_history.py"
Rows = list[dict[str, Any]]
SVG = "{http://www.w3.org/2000/svg}"


def analyse(spark: SparkSession, base: Path, out: Path) -> tuple[dict[str, Rows], str]:
    """Run the analytics job on one recorded cluster: tables written to ``out``, the
    report's rows (times in epoch ms) and its HTML."""
    tables = analytics.build_tables(analytics.load_records(
        spark, analytics.cluster_inputs([str(base)])))
    analytics.write_tables(tables, out)
    data = report.collect(tables)
    return data, report.render(data)


def check_recording(base: Path, data: dict[str, Rows], html: str) -> None:
    """The tables show the voter-set changes, the topics, the broker's fence/unfence and
    the controller leader change."""
    facts = json.loads((base / "recording.json").read_text())
    (summary,) = data["summary"]
    assert summary["log_dirs"] == len(facts["controllers"]) and summary["errors"] == 0

    voter_changes = sorted(data["voter_changes"], key=lambda r: r["offset"])
    assert [sorted(r["voter_ids"]) for r in voter_changes if r["changed"]] == facts[
        "voter_sets"]

    topics = {r["topic_name"]: r for r in data["topics"]}
    assert set(topics) == {*facts["topics"], facts["late_topic"]}
    assert {n for n, r in topics.items() if r["removed_at"] is not None} == {
        facts["deleted_topic"]}
    live = sum(n for t, n in facts["topics"].items() if t != facts["deleted_topic"]) + 1
    timeline = sorted(data["topic_timeline"], key=lambda r: r["offset"])
    assert (timeline[-1]["topics"], timeline[-1]["partitions"]) == (len(topics) - 1, live)
    assert max(r["partitions"] for r in timeline) == sum(facts["topics"].values())

    victim = facts["fenced_broker"]
    periods = [r for r in data["fencing_periods"]
               if r["broker_id"] == victim and r["cause"] != "registered"]
    assert any(r["since"] >= facts["broker_killed_ms"] and r["until"] is not None
               and r["until"] >= facts["broker_restarted_ms"] for r in periods), periods
    led_by_victim = {(t, i) for t, leaders in facts["leaders_before_fencing"].items()
                     for i, leader in enumerate(leaders) if leader == victim}
    moved = {(r["topic_name"], r["partition_id"]) for r in data["partition_changes"]
             if r["leader_changed"] and r["timestamp"] >= facts["broker_killed_ms"]}
    assert led_by_victim and led_by_victim <= moved

    leaders = {r["epoch"]: r for r in data["controller_leaders"]}
    killed, new = facts["killed_controller"], facts["new_controller"]
    assert leaders[killed["epoch"]]["leader"] == killed["id"]
    assert leaders[new["epoch"]]["leader"] == new["id"] != killed["id"]
    assert leaders[new["epoch"]]["timestamp"] >= facts["controller_killed_ms"]
    assert sorted(leaders[new["epoch"]]["voters"]) == facts["controllers"]
    assert html.count("<svg") == 5 and f"broker {victim}" in html


def test_recorded_cluster_history(spark: SparkSession, tmp_path: Path) -> None:
    data, html = analyse(spark, FIXTURE, tmp_path)
    assert set(analytics.TABLES) <= {p.name for p in tmp_path.iterdir()}
    assert pq.read_table(tmp_path / "records").num_rows > 0
    check_recording(FIXTURE, data, html)


@pytest.mark.integration
def test_record_a_live_history_and_analyse_it(spark: SparkSession, tmp_path: Path) -> None:
    """The script end to end on a live 3 + 3 process cluster (about 30-60 s)."""
    out = tmp_path / "recorded"
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--timeout", "45"],
                          check=False, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-2000:]
    frame = spark.read.format("kraft").load(str(out))
    assert sorted(r["offset"] for r in frame.select("offset").collect()) == sorted(
        r["offset"] for r in read_all(out))
    data, html = analyse(spark, out, tmp_path / "tables")
    check_recording(out, data, html)


def test_cluster_inputs_are_named_after_their_dirs() -> None:
    inputs = analytics.cluster_inputs(["/x/demo-cluster", "/y/demo-cluster", "/z/other"])
    assert [i.name for i in inputs] == ["demo-cluster", "demo-cluster-2", "other"]


def charts(html: str) -> dict[str, ET.Element]:
    """The report's SVG charts by their title."""
    found = {}
    for text in re.findall(r"<svg .*?</svg>", html, re.DOTALL):
        chart = ET.fromstring(text)
        title = chart.find(f"{SVG}title")
        assert title is not None and title.text is not None
        found[title.text] = chart
    return found


def lane_spans(chart: ET.Element, t0: int, t1: int) -> dict[str, list[tuple[float, float]]]:
    """Each lane's spans read back from the drawing: times from the x positions, on the
    axis whose first and last grid lines stand for ``t0`` and ``t1``."""
    grid = [float(line.get("x1", "0")) for line in chart.iter(f"{SVG}line")]
    x0, x1 = grid[0], grid[-1]

    def when(x: float) -> float:
        return t0 + (x - x0) * (t1 - t0) / (x1 - x0)

    labels = {float(t.get("y", "0")) - 14: t.text or "" for t in chart.iter(f"{SVG}text")
              if t.get("text-anchor") == "end" and (t.text or "").split()[0] in (
                  "controller", "broker")}
    spans: dict[str, list[tuple[float, float]]] = {label: [] for label in labels.values()}
    for rect in chart.iter(f"{SVG}rect"):
        x, width = float(rect.get("x", "0")), float(rect.get("width", "0"))
        spans[labels[float(rect.get("y", "0")) - 3]].append((when(x), when(x + width)))
    return spans


def flat(spans: list[tuple[float, float]]) -> list[float]:
    return [t for span in spans for t in span]


def bars(chart: ET.Element) -> dict[str, int]:
    """Label -> the figure printed at the end of its bar."""
    by_row: dict[str, dict[str, str]] = {}
    for text in chart.iter(f"{SVG}text"):
        side = "label" if text.get("text-anchor") == "end" else "value"
        by_row.setdefault(text.get("y", ""), {})[side] = text.text or ""
    return {row["label"]: int(row["value"].replace(",", "")) for row in by_row.values()}


def record_type_counts(batches: list[bytes]) -> Counter[str]:
    """Records per type of the whole history, decoded here batch by batch."""
    counts: Counter[str] = Counter()
    for batch in iter_batches(b"".join(batches)):
        for record in batch.records():
            if batch.header.is_control:
                counts[ctl.decode_control(record.key, record.value).type.name] += 1
            else:
                assert record.value is not None
                counts[md.decode_metadata_record(record.value).type_name] += 1
    return counts


def test_report_figures_equal_the_known_history(spark: SparkSession, tmp_path: Path) -> None:
    """On the stale-node trap of cluster_history: the history is node 2's (node 1's user
    partitions reach offset 5,000,049 but its metadata log stops 5 batches early), node 1
    is warned about, no row comes from a user partition, and every figure of the report
    and its charts equals what the generated history's own events say. A second cluster,
    one node whose log starts at a snapshot, has the same topic and partition figures."""
    write_stale_cluster(tmp_path / "stale")
    write_truncated_node(tmp_path / "truncated" / "node-1" / "data")
    tables = analytics.build_tables(analytics.load_records(spark, analytics.cluster_inputs(
        [str(tmp_path / "stale"), str(tmp_path / "truncated")])))
    analytics.write_tables(tables, tmp_path / "tables")
    everything = report.collect(tables)
    html = report.render(everything)
    assert all("__cluster_metadata-0" in r["file"] or r["file"].endswith("bootstrap.checkpoint")
               for r in pq.read_table(tmp_path / "tables" / "records").to_pylist())
    assert [r["errors"] for r in everything["summary"]] == [0, 0]
    data = {k: [r for r in rows if r["cluster"] == "stale"] for k, rows in everything.items()}

    replicas = {Path(r["log_dir"]).parent.name: r for r in data["log_replicas"]}
    assert [n for n, r in replicas.items() if r["used"]] == ["node-2"]
    times = event_times()
    stale = replicas[f"node-{STALE_NODE}"]
    missing = sum(len(b.records()) for b in iter_batches(b"".join(build()[-5:])))
    assert (stale["offsets_behind"], stale["ms_behind"]) == (
        missing, times["end"] - times["voters-4"])
    used, behind = report.replica_notes(data["log_replicas"])
    assert len(used) == 1 and "node-2" in used[0]
    assert len(behind) == 1 and f"node-{STALE_NODE}/data is behind" in behind[0]
    assert f"Warning: {escape(behind[0])}" in html

    drawn = {title.removeprefix("stale: "): chart for title, chart in charts(html).items()}
    t0, t1 = times["epoch-1"], times["end"]
    leaders = lane_spans(drawn["controller leader per epoch"], t0, t1)
    epochs = [(e, times[f"epoch-{e}"]) for e, _ in EXPECTED.controller_leaders]
    ends = [t for _, t in epochs[1:]] + [t1]
    expected_lanes = {f"controller {leader}": [(start, end)] for ((_, leader), (_, start), end)
                      in zip(EXPECTED.controller_leaders, epochs, ends, strict=True)}
    assert leaders.keys() == expected_lanes.keys()
    for lane, spans in expected_lanes.items():
        assert flat(leaders[lane]) == pytest.approx(flat(spans), abs=150), lane  # 0.1 px

    fencing = lane_spans(drawn["periods each broker spent fenced"], t0, t1)
    startup = (times["registered"], times["unfenced"])
    expected_fencing = {f"broker {b}": [startup] for b in (101, 102, 103)}
    expected_fencing["broker 101"].append((times["fenced-101"], times["unfenced-101"]))
    expected_fencing["broker 102"].append((times["shutdown-102"], times["unfenced-102"]))
    assert fencing.keys() == expected_fencing.keys()
    for lane, spans in expected_fencing.items():
        assert flat(fencing[lane]) == pytest.approx(flat(spans), abs=150), lane

    changes = len(EXPECTED.orders_0_leaders) - 1
    assert bars(drawn["leader changes per partition"]) == {"orders-0": changes, "orders-1": 1}
    assert bars(drawn["records per type"]) == record_type_counts(build())

    lines = drawn["topics and partitions"]
    legend = sorted(t.text or "" for t in lines.iter(f"{SVG}text") if "max" in (t.text or ""))
    assert legend == [f"partitions (max {EXPECTED.partitions})",
                      f"topics (max {len(EXPECTED.topics)})"]

    voter_sets = [tuple(r["voter_ids"]) for r in sorted(data["voter_changes"],
                                                        key=lambda r: r["offset"])]
    assert tuple(voter_sets) == EXPECTED.voter_sets
    orders0 = sorted((r for r in pq.read_table(tmp_path / "tables" / "partition_changes")
                      .to_pylist() if r["cluster"] == "stale" and r["topic_name"] == "orders"
                      and r["partition_id"] == 0), key=lambda r: r["offset"])
    assert [orders0[0]["leader"]] + [r["leader"] for r in orders0 if r["leader_changed"]] == \
        list(EXPECTED.orders_0_leaders)
    assert html.count("<svg") == 2 * 5 and "Cluster truncated" in html

    truncated = {k: [r for r in rows if r["cluster"] == "truncated"]
                 for k, rows in everything.items()}
    timeline = sorted(truncated["topic_timeline"], key=lambda r: r["offset"])
    counts = [(r["topics"], r["partitions"]) for r in timeline]
    live = (len(EXPECTED.topics) - len(EXPECTED.removed_topics), 3)
    assert counts == [(len(EXPECTED.topics), EXPECTED.partitions), live]
    topics = {r["topic_name"]: (r["created_offset"], r["removed_offset"] is not None)
              for r in truncated["topics"]}
    assert topics == {"orders": (None, False), "payments": (None, True)}
    assert bars(drawn["truncated: leader changes per partition"]) == {
        "orders-0": changes, "orders-1": 1}
