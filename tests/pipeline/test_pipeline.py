"""examples/pipeline/run.py end to end: its output equals the plain-Python totals in both
sinks, the Parquet rows exactly once, wherever the job runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from spark_servers import connect_server, spark_env, standalone_cluster

#: Above pytest's 300 s default: a run starts a pykraft cluster and two Spark JVMs (its own
#: bound, run_pipeline's timeout, is what stops a stuck one).
pytestmark = pytest.mark.timeout(1500)
RUN = Path(__file__).resolve().parents[2] / "examples" / "pipeline" / "run.py"
EVENTS = 1500
PER_TRIGGER = 300  # six micro-batches of input, and the watermark's own


def run_pipeline(tmp_path: Path, *args: str) -> str:
    """run.py's output, after checking it exited 0 (its totals all equal)."""
    done = subprocess.run(
        [sys.executable, str(RUN), "--dir", str(tmp_path / "pipeline"), "--events",
         str(EVENTS), "--max-offsets-per-trigger", str(PER_TRIGGER), *args],
        capture_output=True, text=True, timeout=1200, check=False,
        env={**spark_env(), "COLUMNS": "120", "PYKRAFT_PORT_RANGE":
             os.environ.get("PYKRAFT_PORT_RANGE", "")})
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def jars(found: list[Path]) -> str:
    return ",".join(str(jar) for jar in found)


def test_a_job_killed_mid_stream_resumes_with_no_loss_and_no_duplicates(
        tmp_path: Path, connector: list[Path]) -> None:
    out = run_pipeline(tmp_path, "--master", "local[2]", "--jars", jars(connector),
                       "--kill-after-batches", "2")
    assert "job SIGKILLed after" in out  # and the exit status says the totals are equal


def test_the_job_runs_on_a_standalone_cluster(tmp_path: Path, connector: list[Path]) -> None:
    """Spark's connector shipped to the executors by spark.jars."""
    with standalone_cluster(tmp_path) as master:
        run_pipeline(tmp_path, "--master", master, "--jars", jars(connector))


def test_the_job_runs_through_spark_connect(tmp_path: Path) -> None:
    """pykraft's own source and sink, which a Connect client registers itself (the
    server needs no package)."""
    with connect_server(tmp_path, ()) as remote:
        run_pipeline(tmp_path, "--remote", remote, "--format", "pykraft")
