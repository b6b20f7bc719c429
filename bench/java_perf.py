"""Apache Kafka's own load generators (kafka-tools' ``ProducerPerformance``,
``ConsumerPerformance``, ``EndToEndLatency`` and ``VerifiableProducer``), run as
``kafka-run-class.sh`` runs a tool, and the parsers of what they print.

The same commands drive Kafka and pykraft in ``bench/vs_kafka.py``: only
``--bootstrap-server`` differs. Every run is bounded by its timeout; a tool that exits non-zero
or prints no summary is a :class:`~peers.base.BenchError` quoting its output's tail.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from peers.base import BenchError
from pykraft.tools.kafka_runtime import KAFKA_JVM_PERFORMANCE_OPTS, KafkaRuntime

PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERFORMANCE = "org.apache.kafka.tools.ConsumerPerformance"
END_TO_END_LATENCY = "org.apache.kafka.tools.EndToEndLatency"
VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
#: A VerifiableProducer record counts as sent after a moment when its throttle's schedule
#: puts it this much later: ThroughputThrottler never runs ahead of its schedule by more than
#: its 2 ms sleep quantum and a record, and ``startup_complete`` is stamped within a
#: millisecond of the schedule's start.
SENT_AFTER_MARGIN_MS = 10
#: ``kafka-run-class.sh``'s heap for a tool (``KAFKA_HEAP_OPTS`` unset), then its JVM options
TOOL_JVM_OPTIONS = ("-Xmx256M", *KAFKA_JVM_PERFORMANCE_OPTS)
_TAIL = 3000
#: ProducerPerformance's summary line, e.g. ``50000 records sent, 24789.3 records/sec
#: (2.36 MB/sec), 410.91 ms avg latency, 1022.00 ms max latency, 419 ms 50th, 862 ms 95th,
#: 1003 ms 99th, 1019 ms 99.9th.``; with ``--warmup-records`` a second one follows, of the
#: records after the warm-up: ``40000 steady state records sent, ...``
_PRODUCER_SUMMARY = re.compile(
    r"(?P<records>\d+) (?P<steady>steady state )?records sent, (?P<records_s>[\d.]+) records/sec "
    r"\((?P<mb_s>[\d.]+) MB/sec\), (?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max "
    r"latency, (?P<p50>\d+) ms 50th, (?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, "
    r"(?P<p999>\d+) ms 99\.9th\.")
_E2E_PERCENTILES = re.compile(
    r"Percentiles: 50th = (?P<p50>\d+), 99th = (?P<p99>\d+), 99\.9th = (?P<p999>\d+)")
_E2E_AVERAGE = re.compile(r"Avg latency: (?P<avg>[\d.]+) ms")


@dataclass(frozen=True, slots=True)
class ProducerSummary:
    """ProducerPerformance's totals (MB is 2^20 bytes there; latencies are send to ack)."""

    records: int
    records_s: float
    mb_s: float
    avg_ms: float
    max_ms: float
    p50_ms: int
    p95_ms: int
    p99_ms: int
    p999_ms: int


@dataclass(frozen=True, slots=True)
class ConsumerSummary:
    """ConsumerPerformance's totals: ``mb_s`` over the whole run (group join included),
    ``fetch_mb_s`` over the time after the group's first assignment."""

    mb: float
    mb_s: float
    records: int
    records_s: float
    rebalance_ms: float
    fetch_mb_s: float


@dataclass(frozen=True, slots=True)
class EndToEndSummary:
    """EndToEndLatency's figures: one record in flight at a time, produce to consume (ms)."""

    avg_ms: float
    p50_ms: int
    p99_ms: int
    p999_ms: int


def parse_producer_summary(output: str) -> ProducerSummary:
    """ProducerPerformance's steady-state summary if it printed one (``--warmup-records``),
    else its last full summary line (its progress lines lack the percentiles)."""
    matches = list(_PRODUCER_SUMMARY.finditer(output))
    if not matches:
        raise BenchError(f"no ProducerPerformance summary in: {output[-_TAIL:]}")
    found = next((m for m in matches if m["steady"]), matches[-1])
    return ProducerSummary(
        int(found["records"]), float(found["records_s"]), float(found["mb_s"]),
        float(found["avg"]), float(found["max"]), int(found["p50"]), int(found["p95"]),
        int(found["p99"]), int(found["p999"]))


def parse_consumer_summary(output: str) -> ConsumerSummary:
    """The values line under ConsumerPerformance's header (``start.time, end.time,
    data.consumed.in.MB, MB.sec, ...``), by column name."""
    lines = output.splitlines()
    for index, line in enumerate(lines[:-1]):
        if line.startswith("start.time"):
            names = [name.strip() for name in line.split(",")]
            values = dict(zip(names, (v.strip() for v in lines[index + 1].split(",")),
                              strict=False))
            try:
                return ConsumerSummary(
                    float(values["data.consumed.in.MB"]), float(values["MB.sec"]),
                    int(values["data.consumed.in.nMsg"]), float(values["nMsg.sec"]),
                    float(values["rebalance.time.ms"]), float(values["fetch.MB.sec"]))
            except (KeyError, ValueError) as exc:
                raise BenchError(f"unreadable ConsumerPerformance summary ({exc}): "
                                 f"{line!r} / {lines[index + 1]!r}") from None
    raise BenchError(f"no ConsumerPerformance summary in: {output[-_TAIL:]}")


def parse_end_to_end(output: str) -> EndToEndSummary:
    """EndToEndLatency's ``Avg latency`` and ``Percentiles`` lines."""
    average, percentiles = _E2E_AVERAGE.search(output), _E2E_PERCENTILES.search(output)
    if average is None or percentiles is None:
        raise BenchError(f"no EndToEndLatency summary in: {output[-_TAIL:]}")
    return EndToEndSummary(float(average["avg"]), int(percentiles["p50"]),
                           int(percentiles["p99"]), int(percentiles["p999"]))


@dataclass(frozen=True, slots=True)
class JavaTools:
    """Kafka's tool classes from ``runtime``'s jars, in JVMs of :data:`TOOL_JVM_OPTIONS`."""

    runtime: KafkaRuntime
    log4j2: Path

    @classmethod
    def of(cls, runtime: KafkaRuntime, log4j2: Path) -> JavaTools:
        return cls(replace(runtime, jvm_options=TOOL_JVM_OPTIONS), log4j2)

    def run(self, main_class: str, args: list[str], timeout_s: float) -> str:
        """The tool's stdout once it exited 0 within ``timeout_s``."""
        command = self.runtime.java(main_class, *args, log4j2=self.log4j2)
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False,
                                  stdin=subprocess.DEVNULL, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise BenchError(f"{main_class} ran over {timeout_s:.0f} s") from exc
        if done.returncode != 0:
            raise BenchError(f"{main_class} exited {done.returncode}: "
                             f"{(done.stdout + done.stderr)[-_TAIL:]}")
        return done.stdout

    def produce(self, bootstrap: str, topic: str, records: int, size: int, *,
                throughput: int = -1, acks: str, compression: str, timeout_s: float,
                warmup_records: int = 0) -> ProducerSummary:
        """``kafka-producer-perf-test``: ``records`` of ``size`` bytes, unthrottled (-1) or
        at about ``throughput`` records/s; with ``warmup_records``, the figures of the
        records after those (a JIT-warm JVM)."""
        warmup = ["--warmup-records", str(warmup_records)] if warmup_records else []
        return parse_producer_summary(self.run(PRODUCER_PERFORMANCE, [
            "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
            *warmup, "--record-size", str(size), "--throughput", str(throughput),
            "--command-property", f"acks={acks}", f"compression.type={compression}"],
            timeout_s))

    def consume(self, bootstrap: str, topic: str, records: int, group: str,
                timeout_s: float) -> ConsumerSummary:
        """``kafka-consumer-perf-test``: ``records`` from the start of ``topic`` in a new
        ``group``."""
        return parse_consumer_summary(self.run(CONSUMER_PERFORMANCE, [
            "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
            "--group", group, "--timeout", "30000"], timeout_s))

    def end_to_end(self, bootstrap: str, topic: str, records: int, size: int,
                   timeout_s: float) -> EndToEndSummary:
        """``kafka-e2e-latency`` at acks=all: one record produced and consumed at a time."""
        return parse_end_to_end(self.run(END_TO_END_LATENCY, [
            "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
            "--producer-acks", "all", "--record-size", str(size)], timeout_s))

    @contextmanager
    def verifiable_producer(self, bootstrap: str, topic: str, rate: int,
                            properties: dict[str, str]) -> Iterator[VerifiableSends]:
        """``kafka-verifiable-producer`` sending to ``topic`` at ``rate`` records/s with
        acks=all and ``properties``, until the block ends (then stopped by SIGTERM)."""
        with tempfile.TemporaryDirectory(prefix="verifiable-") as directory:
            config = Path(directory) / "producer.properties"
            config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
            errors = Path(directory) / "stderr"
            with errors.open("w") as stderr:
                process = subprocess.Popen(
                    self.runtime.java(VERIFIABLE_PRODUCER, "--bootstrap-server", bootstrap,
                                      "--topic", topic, "--throughput", str(rate),
                                      "--acks", "-1", "--producer.config", str(config),
                                      log4j2=self.log4j2),
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                    text=True)
                sends = VerifiableSends(process, rate, errors)
                try:
                    yield sends
                finally:
                    sends.stop()


class VerifiableSends:
    """A running VerifiableProducer's acknowledgements as they come: its values are the
    records' indexes, and each ``producer_send_success`` line carries the wall-clock ms of
    its callback."""

    def __init__(self, process: subprocess.Popen[str], rate: int, stderr: Path) -> None:
        self._process = process
        self._rate = rate
        self._stderr = stderr
        self._changed = threading.Condition()
        self._started_ms: int | None = None
        self._acks: list[tuple[int, int]] = []  # (index, wall ms)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            with self._changed:
                if row.get("name") == "startup_complete":
                    self._started_ms = int(row["timestamp"])
                elif row.get("name") == "producer_send_success":
                    self._acks.append((int(row["value"]), int(row["timestamp"])))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _wait(self, found: Callable[[], int | None], what: str, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while (result := found()) is None:
                if self._process.poll() is not None and not self._reader.is_alive():
                    raise BenchError(f"VerifiableProducer exited {self._process.returncode} "
                                     f"before {what}: {self._stderr.read_text()[-_TAIL:]}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BenchError(f"VerifiableProducer: no {what} in {timeout_s:.0f} s")
                self._changed.wait(min(left, 1.0))
        return result

    def wait_acknowledged(self, records: int, timeout_s: float) -> None:
        """Until ``records`` records are acknowledged."""
        self._wait(lambda: 1 if len(self._acks) >= records else None,
                   f"{records} acknowledgements", timeout_s)

    def first_ack_sent_after(self, wall_ms: float, timeout_s: float) -> int:
        """The wall-clock ms of the first acknowledgement of a record sent after
        ``wall_ms`` (by its throttle's schedule, :data:`SENT_AFTER_MARGIN_MS` on); the
        callbacks stamp and print in order, so the first such line is the earliest."""
        seen = 0

        def found() -> int | None:
            nonlocal seen
            if self._started_ms is None:
                return None
            first = (wall_ms + SENT_AFTER_MARGIN_MS - self._started_ms) * self._rate / 1000
            for index, at in self._acks[seen:]:
                if index >= first:
                    return at
            seen = len(self._acks)
            return None

        return self._wait(found, "acknowledgement of a record sent after the fault",
                          timeout_s)

    def stop(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._reader.join(30)
