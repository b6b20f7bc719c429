"""``pykraft chaos run`` on a mixed cluster (issue 26's "must show"): controllers of both
kinds, brokers of both kinds, an RF=3 topic written by idempotent acks=all producers and read
by assigned consumers and a consumer group, under the bounded schedule of faults (brokers
killed, paused and restarted, links cut, the active controller killed), then checked: nothing
acknowledged lost or duplicated, no divergent replica, no group anomaly.

The figures of a longer run of the same command are in issue 26's closing note.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oracle_cluster import KafkaInstall
from typer.testing import CliRunner

from pykraft.cli.main import app

pytestmark = pytest.mark.timeout(900)
FAULTS = "8"


def test_a_bounded_chaos_run_on_a_mixed_cluster_finds_no_anomaly(
        kafka: KafkaInstall, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [
        "chaos", "run", "--dir", str(tmp_path / "run"), "--seed", "26", "--faults", FAULTS,
        "--controllers", "2", "--kafka-controllers", "1", "--brokers", "2",
        "--kafka-brokers", "2", "--kafka-home", str(kafka.classpath[0].parent),
        "--group-consumers", "2", "--json"])
    try:
        figures = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"no JSON figures (exit {result.exit_code}): {result.output}")
    assert result.exit_code == 0, figures["examples"]
    assert figures["anomalies"] == 0
    assert figures["lost"] == figures["duplicated"] == figures["divergent_replicas"] == 0
    assert isinstance(figures["acknowledged"], int) and figures["acknowledged"] > 0
    assert sum(figures["faults"].values()) > 0
    assert figures["group"]["lag"] == 0
