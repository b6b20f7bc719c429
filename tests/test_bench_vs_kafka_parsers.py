"""The parsers of Kafka's load generators' summaries in bench/java_perf.py, on output
captured from Kafka 4.4.0's tools (tests/fixtures/vs_kafka), and their errors on output
without a summary (a tool that died early must not read as a figure); VerifiableProducer's
acknowledgements read as they come."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from java_perf import (
    VerifiableSends,
    parse_consumer_summary,
    parse_end_to_end,
    parse_producer_summary,
)
from peers.base import BenchError

CAPTURED = Path(__file__).parent / "fixtures" / "vs_kafka"


def test_producer_performance_summary() -> None:
    summary = parse_producer_summary((CAPTURED / "producer_performance.out").read_text())
    assert summary.records == 50000
    assert summary.records_s == pytest.approx(16254.876463)
    assert summary.mb_s == pytest.approx(1.55)
    assert (summary.avg_ms, summary.max_ms) == (pytest.approx(855.41), pytest.approx(1175.0))
    assert (summary.p50_ms, summary.p95_ms, summary.p99_ms, summary.p999_ms) == (
        938, 1100, 1139, 1172)


def test_producer_progress_lines_are_not_the_summary() -> None:
    progress = ("81233 records sent, 16246.6 records/sec (1.55 MB/sec), 855.4 ms avg "
                "latency, 1175.0 ms max latency.\n")
    with pytest.raises(BenchError, match="no ProducerPerformance summary"):
        parse_producer_summary(progress)
    final = (CAPTURED / "producer_performance.out").read_text()
    assert parse_producer_summary(progress + final).records == 50000


def test_producer_performance_steady_state_after_its_warmup() -> None:
    """With --warmup-records the steady-state line, not the whole run's, is the figure."""
    summary = parse_producer_summary(
        (CAPTURED / "producer_performance_warmup.out").read_text())
    assert summary.records == 40000
    assert summary.records_s == pytest.approx(35971.223022)
    assert (summary.p50_ms, summary.p99_ms, summary.p999_ms) == (19, 76, 109)


def test_consumer_performance_summary_by_column_name() -> None:
    summary = parse_consumer_summary((CAPTURED / "consumer_performance.out").read_text())
    assert summary.mb == pytest.approx(4.7684)
    assert summary.mb_s == pytest.approx(0.8488)
    assert summary.records == 50000
    assert summary.records_s == pytest.approx(8899.9644)
    assert summary.rebalance_ms == pytest.approx(5094)
    assert summary.fetch_mb_s == pytest.approx(9.0999)


def test_consumer_performance_without_values_is_an_error() -> None:
    header = (CAPTURED / "consumer_performance.out").read_text().splitlines()[0]
    with pytest.raises(BenchError, match="no ConsumerPerformance summary"):
        parse_consumer_summary(header + "\n")
    with pytest.raises(BenchError, match="unreadable ConsumerPerformance summary"):
        parse_consumer_summary(header + "\nWARNING: Exiting before consuming\n")


def test_end_to_end_latency_summary() -> None:
    summary = parse_end_to_end((CAPTURED / "end_to_end_latency.out").read_text())
    assert summary.avg_ms == pytest.approx(14.2889)
    assert (summary.p50_ms, summary.p99_ms, summary.p999_ms) == (12, 58, 207)
    with pytest.raises(BenchError, match="no EndToEndLatency summary"):
        parse_end_to_end("0\t207.415457\n")


#: VerifiableProducer's lines as its source prints them (Jackson, timestamp and name first)
VERIFIABLE_LINES = [
    {"timestamp": 1000, "name": "startup_complete"},
    *({"timestamp": 1002 + index, "name": "producer_send_success", "key": None,
       "value": str(index), "topic": "t", "partition": 0, "offset": index}
      for index in range(20)),  # acknowledged as sent, until the kill at 1020
    *({"timestamp": 1400 + index, "name": "producer_send_success", "key": None,
       "value": str(index), "topic": "t", "partition": 0, "offset": index}
      for index in range(20, 60)),  # the records queued during the outage, then new ones
    {"timestamp": 1500, "name": "shutdown_complete"},
]


def test_verifiable_producer_first_ack_of_a_record_sent_after_a_moment(
        tmp_path: Path) -> None:
    lines = "".join(json.dumps(row) + "\n" for row in VERIFIABLE_LINES)
    process = subprocess.Popen([sys.executable, "-c", f"print({lines!r}, end='')"],
                               stdout=subprocess.PIPE, text=True)
    stderr = tmp_path / "stderr"
    stderr.write_text("")
    sends = VerifiableSends(process, 1000, stderr)
    try:
        sends.wait_acknowledged(20, 30)
        # at 1000 records/s from 1000 ms, record 30 is the first sent 10 ms after 1020 ms
        assert sends.first_ack_sent_after(1020, 30) == 1430
        with pytest.raises(BenchError, match="exited 0 before"):
            sends.first_ack_sent_after(2000, 30)  # no such record before it exited
    finally:
        sends.stop()
