"""Java programs on the pinned Apache Kafka's jars for the exactly-once acceptance tests:
kafka-clients 4.4.0 and its dependencies (``make kafka``, ``tests/oracle/oracle_kafka.py``),
and for Streams kafka-streams 4.4.0 with RocksDB (``scripts/fetch_kafka_streams.py``),
compiled with ``javac`` into a test's directory, run in a light JVM that logs through log4j2
to its stderr (a file the caller names), and driven one call per line (:class:`LineProbe`).

The tests run on clusters at each of :data:`TRANSACTION_VERSIONS`
(:func:`finalize_transaction_version`); :func:`transaction_epochs` shows which protocol the
clients used. The jars come as the oracle tests' do: a module calls
:func:`skip_module_off_ci` at its top (off CI, jars that cannot be fetched skip it, saying
why; with ``CI=true`` :func:`kafka_classpath` fails instead).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from functools import cache
from pathlib import Path
from typing import IO, Any

import pytest
from broker_harness import broker_call, wait_for
from process_harness import readable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import fetch_kafka_streams
import oracle_kafka
from oracle_cluster import LOG4J2_CONFIG
from oracle_kafka import in_ci, required

from pykraft.messages.kafka.api_versions_request import ApiVersionsRequest
from pykraft.records.batch import iter_batches
from pykraft.tools.features_tool import upgrade_feature
from pykraft.tools.kafka_runtime import JVM_OPTIONS
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import parse_host_port

__all__ = ["JAVA_SOURCES", "TRANSACTION_VERSIONS", "LineProbe", "ProbeError", "compile_java",
           "finalize_transaction_version", "java_command", "kafka_classpath", "kafka_tool",
           "skip_module_off_ci", "transaction_epochs"]

JAVA_SOURCES = Path(__file__).parent / "java"
#: The ``transaction.version`` levels the tests run at: 0 (a cluster formatted at pykraft's
#: default metadata.version, 3.9-IV0: the classic protocol) and 2 (KIP-890 part 2, Kafka 4's
#: default: a producer epoch per transaction, partitions added by the leaders)
TRANSACTION_VERSIONS = (0, 2)
COMPILE_TIMEOUT_S = 300.0
FEATURE_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 90.0


@cache
def streams_fetched() -> list[Path] | str:
    """Kafka Streams' own jars (``scripts/fetch_kafka_streams.py``), or why they could not be
    had."""
    try:
        jars: list[Path] = fetch_kafka_streams.fetch()
    except (fetch_kafka_streams.FetchError, OSError) as exc:
        return (f"Kafka Streams is not in .cache/kafka-streams and could not be fetched "
                f"(`make kafka`): {exc}")
    return jars


def skip_module_off_ci(*, streams: bool = False) -> None:
    """Skip the calling module, off CI, when the pinned Kafka (and with ``streams`` Kafka
    Streams' jars) cannot be had, as the oracle tests do (``oracle_kafka``)."""
    oracle_kafka.skip_module_off_ci()
    why = streams_fetched() if streams else None
    if isinstance(why, str) and not in_ci():
        pytest.skip(f"{why} [skips off CI; with CI=true it fails]", allow_module_level=True)


def kafka_classpath(*, streams: bool = False) -> str:
    """The pinned Kafka's runtime classpath, with ``streams`` Kafka Streams' jars after it;
    fails the test when they cannot be had (only reached when :func:`skip_module_off_ci` did
    not skip the module: in CI, or once fetched)."""
    if shutil.which("javac") is None:
        pytest.fail("javac is not installed (a JDK 17 is needed for the Java probes)",
                    pytrace=False)
    jars = list(required().classpath)
    if streams:
        found = streams_fetched()
        if isinstance(found, str):
            pytest.fail(f"{found} [CI=true: the test must run]", pytrace=False)
        jars += found
    return os.pathsep.join(str(jar) for jar in jars)


def finalize_transaction_version(cluster: LocalCluster, level: int) -> None:
    """Finalize ``transaction.version`` at ``level`` (``pykraft features upgrade``) unless the
    cluster is there already, and wait until every broker advertises it in ApiVersions (what
    the clients read)."""
    bootstrap = [parse_host_port(a) for a in cluster.bootstrap_servers.split(",")]
    if level:
        asyncio.run(upgrade_feature(bootstrap, "transaction.version", level,
                                    timeout_s=FEATURE_TIMEOUT_S))

    def advertised() -> bool | None:
        for broker_id in cluster.brokers:
            answer = broker_call(cluster, broker_id, ApiVersionsRequest(
                client_software_name="pykraft-tests", client_software_version="1"))
            levels = {f.name: int(f.max_version_level) for f in answer.finalized_features}
            if levels.get("transaction.version", 0) != level:
                return None
        return True

    wait_for(f"every broker at transaction.version {level}", advertised)


def transaction_epochs(cluster: LocalCluster, topic: str) -> dict[int, list[int]]:
    """Per partition of ``topic`` (the segment files of its first broker's replica), the
    producer epoch of each transaction that wrote there, in log order: that of its data
    batches before each COMMIT or ABORT marker. At transaction.version 2 the epoch grows
    with each transaction; before, a producer keeps its epoch across its transactions."""
    data = cluster.nodes[cluster.brokers[0]].data
    epochs: dict[int, list[int]] = {}
    for directory in data.glob(f"{topic}-*"):
        suffix = directory.name[len(topic) + 1:]
        if not suffix.isdigit():
            continue
        found = epochs.setdefault(int(suffix), [])
        since_marker: set[int] = set()
        for segment in sorted(directory.glob("*.log")):
            for batch in iter_batches(segment.read_bytes()):
                if not batch.header.is_transactional:
                    continue
                if batch.is_control:
                    if since_marker:
                        (epoch,) = since_marker  # one producer per partition here
                        found.append(epoch)
                    since_marker = set()
                else:
                    since_marker.add(batch.header.producer_epoch)
    return epochs


def compile_java(source: Path, classes: Path, classpath: str, *beside: Path) -> str:
    """``source`` (and the classes it uses from ``beside``) compiled into ``classes``; the
    classpath that runs it."""
    classes.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-Xlint:all", "-Werror", "-d", str(classes), "-cp", classpath,
                    str(source), *map(str, beside)], check=True, timeout=COMPILE_TIMEOUT_S)
    return os.pathsep.join([str(classes), classpath])


def java_command(classpath: str, main_class: str, *args: str,
                 jvm_options: tuple[str, ...] = JVM_OPTIONS) -> list[str]:
    """``java`` running ``main_class`` in a light JVM whose log4j2 logs INFO and up to
    stderr (``tests/oracle/log4j2.properties``)."""
    return ["java", *jvm_options, f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}",
            "-cp", classpath, main_class, *args]


#: How long one run of a Kafka tool may take (a JVM start on a loaded machine included).
TOOL_TIMEOUT_S = 120


def tool_outcome(cluster: LocalCluster, command: str | None, *args: str) -> tuple[int, str]:
    """Exit code and stdout of a tool run against ``cluster``'s brokers: Kafka's
    (``command`` a tool's main class, in a JVM) or pykraft's (``command`` None: ``args``
    start with the pykraft command, run in process)."""
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    if command is None:
        from typer.testing import CliRunner

        from pykraft.cli.main import app
        result = CliRunner().invoke(app, [args[0], *bootstrap, *args[1:]])
        return result.exit_code, result.stdout
    done = kafka_tool(cluster, command, *args)
    return done.returncode, done.stdout


def kafka_tool(cluster: LocalCluster, main_class: str, *args: str,
               stdin: str = "") -> subprocess.CompletedProcess[str]:
    """Kafka's tool ``main_class`` run against ``cluster``'s brokers (``--bootstrap-server``
    first) in a JVM reading ``stdin``: its exit code, stdout and stderr."""
    return subprocess.run(java_command(kafka_classpath(), main_class, "--bootstrap-server",
                                       cluster.bootstrap_servers, *args),
                          input=stdin, capture_output=True, text=True,
                          timeout=TOOL_TIMEOUT_S, check=False)


class ProbeError(AssertionError):
    """A call failed in the JVM: ``error`` is the Java exception's simple class name."""

    def __init__(self, op: str, error: str, message: str | None) -> None:
        super().__init__(f"{op}: {error}: {message}")
        self.error = error
        self.message = message


class LineProbe:
    """A JVM that reads one call per line (tab-separated words) and answers each with one
    JSON line, ``{"ok": true, "result": ...}`` or ``{"ok": false, "error": ..., "message":
    ...}``; its stderr goes to ``log``."""

    def __init__(self, command: list[str], log: Path) -> None:
        self._log = log
        with log.open("ab") as err:
            self._jvm = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True)

    def call(self, op: str, *args: object) -> Any:
        """The call's result; :class:`ProbeError` with the Java exception if it failed."""
        answer = self.answer(op, *args)
        if not answer["ok"]:
            raise ProbeError(op, answer["error"], answer.get("message"))
        return answer.get("result")

    def answer(self, op: str, *args: object) -> dict[str, Any]:
        stdin, stdout = self._pipes()
        stdin.write("\t".join([op, *map(str, args)]) + "\n")
        stdin.flush()
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while not readable(stdout, 1.0):
            if self._jvm.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no answer to {op} within {CALL_TIMEOUT_S:.0f} s; the "
                                     f"probe's log:\n{self.log_tail()}")
        line = stdout.readline()
        if not line:
            raise AssertionError(f"the probe exited during {op}; its log:\n{self.log_tail()}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def log_tail(self, chars: int = 3000) -> str:
        return self._log.read_text(errors="replace")[-chars:]

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self._jvm.stdin is not None and self._jvm.stdout is not None
        return self._jvm.stdin, self._jvm.stdout

    def close(self) -> None:
        """EOF on its stdin (it closes its clients and exits), SIGKILL after a bound."""
        stdin, _ = self._pipes()
        with contextlib.suppress(OSError):  # it may have exited already
            stdin.close()
        try:
            self._jvm.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._jvm.kill()
            self._jvm.wait(timeout=10)
