"""Spark's own servers for the pipeline tests, from PySpark's install on 127.0.0.1: a
standalone cluster (a master and one worker) and a Spark Connect server. Each is a real
process group, ready when it answers, and stopped by its PID."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

import pyspark

from pykraft.tools.local_cluster import free_ports

SPARK_HOME = Path(pyspark.__file__).resolve().parent
READY_S = 180.0


def spark_env() -> dict[str, str]:
    """Every Spark process runs this interpreter's Python workers (pyarrow, pykraft)."""
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}


@contextmanager
def _process(command: Sequence[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=spark_env(), stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(60)


def _until(what: str, ready: Callable[[], bool], process: subprocess.Popen[bytes],
           log: Path) -> None:
    """Wait for ``ready()`` (asked each time the process has not exited within a second)."""
    for _ in range(int(READY_S)):
        if ready():
            return
        with suppress(subprocess.TimeoutExpired):
            process.wait(1)
            raise AssertionError(f"{what} exited ({process.returncode}):\n"
                                 f"{log.read_text()[-4000:]}")
    raise AssertionError(f"{what} not ready in {READY_S:.0f} s:\n{log.read_text()[-4000:]}")


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as answer:
            state = json.load(answer)
    except OSError:
        return 0
    return sum(1 for worker in state.get("workers", ()) if worker.get("state") == "ALIVE")


@contextmanager
def standalone_cluster(logs: Path) -> Iterator[str]:
    """A master and a 2-core worker; the master's URL once the worker is registered."""
    master_port, master_ui, worker_port, worker_ui = free_ports(4)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master = [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", str(master_port), "--webui-port", str(master_ui)]
    url = f"spark://127.0.0.1:{master_port}"
    worker = [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
              "--port", str(worker_port), "--webui-port", str(worker_ui), "--cores", "2",
              "--memory", "2g", "--work-dir", str(logs / "work"), url]
    with _process(master, logs / "master.log") as started, \
            _process(worker, logs / "worker.log"):
        _until("the standalone master and worker", lambda: _alive_workers(master_ui) == 1,
               started, logs / "master.log")
        yield url


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def connect_server(logs: Path, jars: Sequence[Path]) -> Iterator[str]:
    """A Spark Connect server on local[2] with ``jars`` on its classpath; its sc:// URL."""
    (port,) = free_ports(1)
    command = [str(SPARK_HOME / "bin" / "spark-submit"), "--class",
               "org.apache.spark.sql.connect.service.SparkConnectServer",
               "--master", "local[2]", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
               "--conf", f"spark.connect.grpc.binding.port={port}",
               "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.ui.enabled=false",
               "--conf", "spark.sql.session.timeZone=UTC"]
    command += ["--jars", ",".join(str(jar) for jar in jars)] if jars else []
    with _process(command, logs / "connect.log") as server:
        _until("the Spark Connect server", lambda: _listening(port), server,
               logs / "connect.log")
        yield f"sc://127.0.0.1:{port}"
