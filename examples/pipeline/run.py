"""The pipeline end to end, as `make pipeline` runs it: a local pykraft cluster (or the
one at ``--bootstrap``), its topics, the input produced, the streaming job run (and with
``--kill-after-batches N`` SIGKILLed once N micro-batches are committed, then run again
from its checkpoint), and its output compared with a plain-Python computation.

    python examples/pipeline/run.py [--dir DIR | --bootstrap HOST:PORT] [--format kafka|pykraft]
        [--events N] [--kill-after-batches N] [--master M | --remote URL]

Exit status 0 when the Parquet output and the totals topic both equal the expected totals
(the Parquet rows exactly once). Everything it starts, it stops.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path

from check import file_totals, topic_totals
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from events import EVENTS_TOPIC, TOTALS_TOPIC, USERS_TOPIC, events, users
from expected import totals
from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SEED = 7
USER_COUNT = 50
JOB_TIMEOUT_S = 900.0
console = Console()


@contextmanager
def local_cluster(base: Path) -> Iterator[str]:
    """`pykraft cluster up` (one controller, one broker) in ``base``; its bootstrap servers."""
    up = subprocess.run([sys.executable, "-m", "pykraft", "cluster", "up", "--controllers",
                         "1", "--brokers", "1", "--dir", str(base), "--detach"],
                        capture_output=True, text=True, timeout=120, check=True)
    found = re.search(r"bootstrap servers (\S+)", up.stdout)
    if found is None:
        raise SystemExit(f"cluster up printed no bootstrap servers:\n{up.stdout}{up.stderr}")
    try:
        yield found.group(1).rstrip(";,")
    finally:
        subprocess.run([sys.executable, "-m", "pykraft", "cluster", "down", "--dir", str(base)],
                       capture_output=True, timeout=120, check=False)


def produce_input(bootstrap: str, event_count: int) -> None:
    """The topics (users compacted) and their records, by an idempotent producer."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics([
        NewTopic(USERS_TOPIC, 1, 1, config={"cleanup.policy": "compact"}),
        NewTopic(EVENTS_TOPIC, 3, 1), NewTopic(TOTALS_TOPIC, 1, 1)])
    for future in created.values():
        future.result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for user in users(SEED, USER_COUNT):
        producer.produce(USERS_TOPIC, key=user.user.encode(), value=user.value())
    for event in events(SEED, event_count, USER_COUNT):
        producer.produce(EVENTS_TOPIC, key=event.user.encode(), value=event.value(),
                         timestamp=int(event.at.timestamp() * 1000))
        producer.poll(0)
    if producer.flush(60):
        raise SystemExit("the input was not all acknowledged")


def connector_classpath() -> str:
    """Spark's Kafka connector and its jars, fetched (once, then cached) by the project's
    script: its classpath, comma-separated for ``spark.jars``."""
    fetched = subprocess.run([sys.executable, str(ROOT / "scripts" / "fetch_spark_kafka.py")],
                             capture_output=True, text=True, timeout=900, check=True)
    return ",".join(fetched.stdout.strip().split(os.pathsep))


def job_command(args: argparse.Namespace, bootstrap: str, work: Path) -> list[str]:
    command = [sys.executable, str(HERE / "job.py"), "--bootstrap", bootstrap,
               "--out", str(work / "out"), "--checkpoint", str(work / "checkpoint"),
               "--format", args.format,
               "--max-offsets-per-trigger", str(args.max_offsets_per_trigger)]
    command += ["--master", args.master] if args.master else []
    command += ["--jars", args.jars] if args.jars else []
    return command + (["--remote", args.remote] if args.remote else [])


def committed_batches(work: Path) -> int:
    """Micro-batches the file sink's query has committed (its checkpoint's commit log)."""
    commits = work / "checkpoint" / "files" / "commits"
    return sum(1 for p in commits.glob("[0-9]*") if p.name.isdigit()) if commits.is_dir() else 0


def run_job(command: list[str], work: Path, kill_after: int | None) -> bool:
    """The job to its end (True), or SIGKILLed with its JVM once ``kill_after`` batches
    are committed (False: the job ended first, nothing to kill)."""
    job = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + JOB_TIMEOUT_S
    try:
        while job.poll() is None and time.monotonic() < deadline:
            if kill_after is not None and committed_batches(work) >= kill_after:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait(60)
                return False
            with suppress(subprocess.TimeoutExpired):  # its end, or time to look again
                job.wait(0.2)
        if job.poll() is None:
            raise SystemExit(f"the job did not finish in {JOB_TIMEOUT_S:.0f} s")
        if job.returncode:
            errors = job.stderr.read() if job.stderr else ""
            raise SystemExit(f"the job failed ({job.returncode}):\n{errors}")
        return True
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait(60)


def compare(bootstrap: str, work: Path, event_count: int) -> bool:
    want = totals(events(SEED, event_count, USER_COUNT), users(SEED, USER_COUNT))
    files, rows = file_totals(work / "out")
    topic = topic_totals(bootstrap)
    table = Table(title="pipeline output against the plain-Python totals")
    for column in ("sink", "windows x countries", "rows", "equal"):
        table.add_column(column)
    table.add_row("parquet (exactly once)", str(len(files)), str(rows),
                  str(files == want and rows == len(want)))
    table.add_row(f"topic {TOTALS_TOPIC} (last per key)", str(len(topic)), "-",
                  str(topic == want))
    table.add_row("expected", str(len(want)), str(len(want)), "-")
    console.print(table)
    return files == want and rows == len(want) and topic == want


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help="where the local cluster and the job's files go")
    parser.add_argument("--bootstrap", help="an existing cluster (its topics must not exist)")
    parser.add_argument("--format", choices=("kafka", "pykraft"), default="kafka")
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=500)
    parser.add_argument("--kill-after-batches", type=int)
    parser.add_argument("--master")
    parser.add_argument("--remote")
    parser.add_argument("--jars", help="Spark's Kafka connector for --format kafka (default: "
                        "the classpath `make spark-kafka` prints; none through --remote)")
    args = parser.parse_args()
    if args.jars is None and args.format == "kafka" and not args.remote:
        args.jars = connector_classpath()
    base = args.dir or Path(tempfile.mkdtemp(prefix="pykraft-pipeline-"))
    work = base / "job"
    with (local_cluster(base / "cluster") if args.bootstrap is None
          else nullcontext(args.bootstrap)) as bootstrap:
        console.print(f"cluster: {bootstrap}; producing {args.events} events")
        produce_input(bootstrap, args.events)
        command = job_command(args, bootstrap, work)
        if args.kill_after_batches is not None and not run_job(
                command, work, args.kill_after_batches):
            console.print(f"job SIGKILLed after {committed_batches(work)} committed "
                              "batches; running it again from its checkpoint")
        run_job(command, work, None)
        console.print(f"job done: {committed_batches(work)} batches committed")
        return 0 if compare(bootstrap, work, args.events) else 1


if __name__ == "__main__":
    sys.exit(main())
