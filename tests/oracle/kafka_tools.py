"""Kafka's own tools run against a Kafka cluster and a pykraft cluster, outputs compared.

A :class:`ToolRun` is one tool invocation: the main class a ``kafka-*.sh`` script runs and
its arguments, where ``{bootstrap}``, ``{controller}``, ``{broker_data}``,
``{controller_data}`` and ``{files}`` stand for the cluster's broker and controller
addresses, its nodes' data directories and a scratch directory. Every run of one cluster
goes through ``java/ToolBatch.java`` (compiled once per module by :func:`with_tool_batch`,
with the two classes kafka-shell 4.3.0 needs on 4.4.0's jars) in a single JVM: a JVM start
costs 2-8 s on a loaded 2-core machine, and the comparison makes dozens of runs per cluster.
The two clusters' batches run side by side.

What is compared is each run's exit code, standard output and standard error after
:func:`normalise`, whose rules are the only differences forgiven:

* the cluster's own strings (its addresses, data directories, cluster id, scratch
  directory) become ``<bootstrap>``, ``<controller>``, ``<broker-data>``,
  ``<controller-data>``, ``<cluster-id>``, ``<files>``;
* Kafka's UUIDs in base64 (topic ids, directory ids, member ids' suffixes) become
  ``<uuid>``; log4j's ``[date time,ms]`` prefix becomes ``[<time>]``; epoch milliseconds
  (13 digits) become ``<ms>``; a record batch's ``crc: <n>`` becomes ``crc: <crc>`` (it
  covers the batch's timestamps);
* a run's own ``masks`` (regular expressions) become ``<masked>``: the offsets of the
  metadata log, whose length depends on how many records (NoOps, registrations) each
  cluster's controller wrote, not on the state the runs compare, and the followers' lag at
  the instant asked; a record batch's size,
  which depends on its records' timestamp deltas (varints), so on the machine's pace;
* a run marked ``measures=True`` (the perf tools, whose output is measurements: rates,
  latencies, durations) has every number replaced by ``<n>``;
* a run marked ``unordered=True`` (a consumer reading two partitions, which interleave as
  fetches return) has its standard output's lines sorted.

A run marked ``errors_only=True`` compares its exit code and stderr alone, and its stdout
must show no invalid batch: dump-log over each cluster's metadata log, whose records differ
by design (each controller writes its own registrations, NoOps and feature levels), and the
metadata shell (its output varies run to run: see :mod:`kafka_tool_runs`).
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest
import typer.main
import typer.testing
from oracle_cluster import KAFKA, PYKRAFT, KafkaInstall, Kind, OracleCluster
from typer.testing import CliRunner

JAVA_SOURCES = Path(__file__).with_name("java")
JAVAC_TIMEOUT_S = 120.0
#: ToolBatch takes over the shutdown hooks a tool adds to the JVM (java.lang's own map);
#: log4j's own hook must not be one (it would stop the logging of the runs after)
OPEN_JAVA_LANG = "--add-opens=java.base/java.lang=ALL-UNNAMED -Dlog4j.shutdownHookEnabled=false"
BATCH_TIMEOUT_S = 600.0
#: How long a read after a write is repeated, and the pause between (ToolBatch's too).
SETTLE_S = 15.0
SETTLE_PAUSE_S = 0.1
SAME, DIFFERS = "same", "differs"

_UUID = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{21}[AQgw](?![A-Za-z0-9_-])")
_LOG4J_TIME = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\]")
#: not the digits after a decimal point: a throughput of 12.1234567890123 is not a time
_EPOCH_MS = re.compile(r"(?<![\d.])1\d{12}(?!\d)")
_CRC = re.compile(r"crc: \d+")
_NUMBER = re.compile(r"(?<![A-Za-z<])-?\d+(\.\d+)?")


@dataclass(frozen=True, slots=True)
class ToolRun:
    """One invocation of a tool: its name in the matrix (``tool``, ``operation``), the main
    class, the arguments (with the placeholders above) and what it reads on stdin."""

    tool: str
    operation: str
    main_class: str
    args: tuple[str, ...]
    stdin: str | None = None
    measures: bool = False
    unordered: bool = False
    masks: tuple[str, ...] = ()
    errors_only: bool = False
    #: A read right after a write: repeated (boundedly) until its output holds this text, as
    #: a broker answers from its own metadata image, which may not hold the write yet.
    until: str | None = None
    #: A read right after a deletion: repeated (boundedly) while its output holds this text.
    until_gone: str | None = None

    @property
    def name(self) -> str:
        return f"{self.tool}.{self.operation}"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run gave: exit code, standard output and error (normalised)."""

    code: int
    stdout: str
    stderr: str


@dataclass(slots=True)
class ClusterTools:
    """One cluster's substitutions for the placeholders, and where its batch's files go."""

    cluster: OracleCluster
    files: Path
    values: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.files.mkdir(parents=True, exist_ok=True)
        self.values = {
            "bootstrap": self.cluster.bootstrap_servers,
            "controller": self.cluster.controllers[0].listener("controller"),
            "broker_data": str(self.cluster.brokers[0].data),
            "controller_data": str(self.cluster.controllers[0].data),
            "files": str(self.files),
        }

    def argument(self, template: str) -> str:
        return template.format_map(self.values)

    def placeholders(self) -> list[tuple[str, str]]:
        """(value, placeholder) pairs, longest value first (paths nest)."""
        pairs = [(value, f"<{key.replace('_', '-')}>") for key, value in self.values.items()]
        pairs.append((self.cluster.cluster_id, "<cluster-id>"))
        return sorted(pairs, key=lambda pair: -len(pair[0]))


def masked_epoch_ms(text: str) -> str:
    """Epoch milliseconds as ``<ms>``, but not 13 digits after a decimal point."""
    return _EPOCH_MS.sub("<ms>", text)


def normalise(text: str, tools: ClusterTools, run: ToolRun, *, stdout: bool) -> str:
    """The rules of the module docstring, in that order."""
    for value, placeholder in tools.placeholders():
        text = text.replace(value, placeholder)
    text = _LOG4J_TIME.sub("[<time>]", text)
    text = _UUID.sub("<uuid>", text)
    text = masked_epoch_ms(text)
    text = _CRC.sub("crc: <crc>", text)
    for mask in run.masks:
        text = re.sub(mask, "<masked>", text)
    if run.measures:
        text = _NUMBER.sub("<n>", text)
    if run.unordered and stdout:
        text = "".join(sorted(text.splitlines(keepends=True)))
    return text


def with_tool_batch(kafka: KafkaInstall, classes: Path) -> KafkaInstall:
    """``java/`` compiled into ``classes``, which leads the returned install's classpath."""
    classpath = os.pathsep.join(str(jar) for jar in kafka.classpath)
    sources = [str(source) for source in sorted(JAVA_SOURCES.rglob("*.java"))]
    done = subprocess.run(["javac", "-nowarn", "-d", str(classes), "-cp", classpath, *sources],
                          capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S, check=False,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"javac {JAVA_SOURCES} failed: {done.stderr}"
    return KafkaInstall(kafka.version, (classes, *kafka.classpath))


def run_batch(kafka: KafkaInstall, tools: ClusterTools, runs: Sequence[ToolRun],
              ) -> dict[str, Outcome]:
    """Every run, in order, in one JVM; the outcomes by run name."""
    batch = tools.files / f"batch-{len(list(tools.files.glob('batch-*')))}"
    output = batch / "outputs"
    output.mkdir(parents=True)
    lines = []
    for index, run in enumerate(runs):
        stdin = "-"
        if run.stdin is not None:
            stdin_file = batch / f"{index}.stdin"
            stdin_file.write_text(tools.argument(run.stdin))
            stdin = str(stdin_file)
        name = (f"{index}?{run.until}" if run.until is not None else
                f"{index}?!{run.until_gone}" if run.until_gone is not None else str(index))
        fields = [name, stdin, run.main_class, *(tools.argument(a) for a in run.args)]
        assert not any("\t" in f or "\n" in f for f in fields), fields
        lines.append("\t".join(fields))
    script = batch / "runs.tsv"
    script.write_text("\n".join(lines) + "\n")
    command = kafka.java("ToolBatch", str(script), str(output), log_level="WARN")
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=BATCH_TIMEOUT_S, check=False,
                          env={**os.environ, "JDK_JAVA_OPTIONS": OPEN_JAVA_LANG})
    assert done.returncode == 0, f"ToolBatch failed: {done.stdout}\n{done.stderr}"

    def read(index: int, suffix: str) -> str:
        return (output / f"{index}.{suffix}").read_text(errors="replace")
    return {run.name: Outcome(int(read(index, "rc")),
                              normalise(read(index, "out"), tools, run, stdout=True),
                              normalise(read(index, "err"), tools, run, stdout=False))
            for index, run in enumerate(runs)}


def run_both(kafka: KafkaInstall, clusters: Mapping[Kind, ClusterTools],
             runs: Sequence[ToolRun]) -> tuple[dict[Kind, dict[str, Outcome]], float]:
    """The same batch against both clusters, side by side; the outcomes by kind and the
    wall time it took."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
        futures = {kind: pool.submit(run_batch, kafka, tools, runs)
                   for kind, tools in clusters.items()}
        outcomes = {kind: future.result() for kind, future in futures.items()}
    return outcomes, time.monotonic() - started


INVALID_BATCH = "isvalid: false"


def compared(run: ToolRun, outcome: Outcome) -> tuple[int, str, str]:
    """What of an outcome must agree (see ``errors_only``)."""
    if run.errors_only:
        return outcome.code, outcome.stderr, str(INVALID_BATCH in outcome.stdout)
    return outcome.code, outcome.stdout, outcome.stderr


def verdict(run: ToolRun, kafka: Outcome, pykraft: Outcome) -> str:
    """``same`` or ``differs``."""
    return SAME if compared(run, kafka) == compared(run, pykraft) else DIFFERS


def difference(run: ToolRun, kafka: Outcome, pykraft: Outcome) -> str:
    """How the two outcomes differ: exit codes, then a diff of each stream (Kafka's first)."""
    parts = [f"{run.name}: exit code {kafka.code} on Kafka, {pykraft.code} on pykraft"]
    for label, theirs, ours in (("stdout", kafka.stdout, pykraft.stdout),
                                ("stderr", kafka.stderr, pykraft.stderr)):
        parts += difflib.unified_diff(theirs.splitlines(), ours.splitlines(),
                                      f"{label} on Kafka", f"{label} on pykraft", lineterm="")
    return "\n".join(parts)


def matrix(rows: Iterable[tuple[str, str, str, str]]) -> str:
    """The tools matrix: tool x operation -> same / differs, with a note."""
    table = [f"{'tool':<26} {'operation':<38} {'result':<12} note"]
    table += [f"{tool:<26} {operation:<38} {result:<12} {note}"
              for tool, operation, result, note in rows]
    return "\n".join(table)


def run_in_process(tools: ClusterTools, runs: Sequence[ToolRun], *,
                   after_each: Callable[[], None] | None = None) -> dict[str, Outcome]:
    """Each run of the ``pykraft`` CLI through typer's CliRunner, in order (``after_each``
    called after each); the outcomes by run name. A run that raised has the traceback
    appended to its stderr (what the console script would print).

    typer's CliRunner builds the click commands of the whole ``pykraft`` app at each
    invoke (0.2-0.5 s of CPU, more than most runs take); they are built once here."""
    from pykraft.cli.main import app

    runner = CliRunner()
    outcomes = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", cache(typer.main.get_command))
        for run in runs:
            outcomes[run.name] = outcome = _invoke(runner, app, tools, run)
            deadline = time.monotonic() + SETTLE_S
            while (outcome.code == 0 and time.monotonic() < deadline
                   and ((run.until is not None and run.until not in outcome.stdout)
                        or (run.until_gone is not None and run.until_gone in outcome.stdout))):
                time.sleep(SETTLE_PAUSE_S)  # a bounded wait for the broker's image
                outcomes[run.name] = outcome = _invoke(runner, app, tools, run)
            if after_each is not None:
                after_each()
    return outcomes


def _invoke(runner: CliRunner, app: typer.Typer, tools: ClusterTools, run: ToolRun,
            ) -> Outcome:
    """One run: its exit code and normalised streams."""
    done = runner.invoke(app, [tools.argument(arg) for arg in run.args],
                         input=None if run.stdin is None else tools.argument(run.stdin))
    stderr = done.stderr
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        stderr += "".join(traceback.format_exception(done.exception))
    return Outcome(done.exit_code, normalise(done.stdout, tools, run, stdout=True),
                   normalise(stderr, tools, run, stdout=False))


__all__ = ["DIFFERS", "KAFKA", "PYKRAFT", "SAME", "ClusterTools", "Outcome", "ToolRun",
           "compared", "difference", "masked_epoch_ms", "matrix", "normalise", "run_both",
           "run_in_process", "verdict"]
