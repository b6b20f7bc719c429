"""The analytics job on a recorded cluster history (tests/fixtures/recorded_history, made
by scripts/record_cluster_history.py, checked against the script's ``recording.json``), on
one recorded live by the same script, and on the generated history of cluster_history.py
for what the recording does not show: a lagging replica, a controlled-shutdown fencing,
several clusters at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from cluster_history import EXPECTED
from pyspark.sql import SparkSession
from test_rows import read_all

from pykraft.spark import analytics, report

pytestmark = pytest.mark.spark
FIXTURE = Path(__file__).parents[1] / "fixtures" / "recorded_history"
SCRIPT = Path(__file__).parents[2] / "scripts" / "record_cluster_history.py"
Rows = list[dict[str, Any]]


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


def test_generated_history_tables_and_report(spark: SparkSession, history: Path,
                                             tmp_path: Path) -> None:
    inputs = analytics.cluster_inputs([str(history), str(history)])
    assert [i.name for i in inputs] == ["demo-cluster", "demo-cluster-2"]
    tables = analytics.build_tables(analytics.load_records(spark, inputs))
    analytics.write_tables(tables, tmp_path)
    data = report.collect(tables)
    html = report.render(data)

    def table(name: str) -> list[dict[str, Any]]:
        rows = pq.read_table(tmp_path / name).to_pylist()
        return [r for r in rows if r["cluster"] == "demo-cluster"]

    leaders = sorted((r["epoch"], r["leader"]) for r in table("controller_leaders"))
    assert tuple(leaders) == EXPECTED.controller_leaders
    topics = {r["topic_name"]: r for r in table("topics")}
    assert set(topics) == set(EXPECTED.topics)
    assert [n for n, r in topics.items() if r["removed_offset"] is not None] == list(
        EXPECTED.removed_topics)
    orders0 = sorted((r for r in table("partition_changes")
                      if r["topic_name"] == "orders" and r["partition_id"] == 0),
                     key=lambda r: r["offset"])
    assert [r["leader"] for r in orders0 if r["leader_changed"]] == [102, 101]
    assert orders0[0]["leader"] == EXPECTED.orders_0_leaders[0]
    fenced_after_start = {r["broker_id"] for r in table("fencing_periods")
                          if r["cause"] != "registered"}
    assert fenced_after_start == set(EXPECTED.fenced_brokers)  # 102: controlled shutdown
    voter_sets = [tuple(r["voter_ids"]) for r in sorted(table("voter_changes"),
                                                        key=lambda r: r["offset"])]
    assert tuple(voter_sets) == EXPECTED.voter_sets
    # node 3 lags: the history tables must come from the longest replica
    assert {r["log_dirs"] for r in data["summary"]} == {3}
    assert html.count("<svg") == 2 * 5 and "Cluster demo-cluster-2" in html
