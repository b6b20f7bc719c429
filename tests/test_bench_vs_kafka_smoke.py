"""bench/vs_kafka.py end to end in a tiny run (--quick): a Kafka cluster (1 controller + 3
brokers of Kafka's own) and a pykraft one, one after the other, driven through the produce
and latency workloads by Kafka's tools and librdkafka. Asserts the harness, never timing:
both systems' figures present and positive, the JSON's shape, every server process gone.

It needs Kafka's jars in .cache/kafka (``make kafka``): skipped without them, except under
CI=true, where ``make test`` fetches them first and their absence fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SCRIPT = ROOT / "bench" / "vs_kafka.py"
SYSTEMS = ("kafka", "pykraft")


def kafka_jars_present() -> bool:
    return any((ROOT / ".cache" / "kafka").glob("*/libs/kafka_*.jar"))


@pytest.fixture(autouse=True)
def needs_kafka() -> None:
    if kafka_jars_present():
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("CI=true: Kafka's jars must be in .cache/kafka (`make kafka`)")
    pytest.skip("Apache Kafka is not in .cache/kafka (`make kafka` fetches it)")


def processes_under(directory: Path) -> list[str]:
    """Command lines of live processes that name ``directory`` (the bench's servers)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(directory) in text:
            found.append(text)
    return found


#: two clusters (4 Kafka JVMs, 4 pykraft servers) and 6 tool JVMs: 2.5 minutes on 2 cores at
#: load 12, 4 at load 20-25 (the limit, 300 s by default, would cut such a machine's run)
@pytest.mark.timeout(600)
def test_quick_produce_latency_and_transactions_on_both_systems(tmp_path: Path) -> None:
    directory = tmp_path / "vs-kafka"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--workloads", "produce,latency,transactions",
         "--cluster-per", "run", "--replication", "3", "--sizes", "1024", "--partitions", "1",
         "--compression", "none", "--rates", "500", "--e2e-records", "50",
         "--txn-records", "100",
         "--dir", str(directory), "--json"],
        capture_output=True, text=True, timeout=540, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout)
    assert report["kafka_version"]
    assert "-XX:+UseG1GC" in report["kafka_server_jvm_options"]
    assert set(report["load_average"]) == {"start", "end"}
    assert report["limits"]["loopback_mb_s"] > 0
    labels = [row["label"] for row in report["rows"]]
    assert [row["workload"] for row in report["rows"]] == (
        ["produce"] * 2 + ["latency"] * 2 + ["transactions"] * 2)
    assert any(label.startswith("transactions of 100 ") for label in labels)
    assert any("[librdkafka]" in label for label in labels)
    assert "[librdkafka]" in done.stderr  # the tables print labels as text, not rich markup
    assert any("[EndToEndLatency]" in label for label in labels)
    for row in report["rows"]:
        for system in SYSTEMS:
            measured = row[system]
            assert measured["figures"], (row["label"], system)
            figures = measured["figures"]
            assert all(figures[name] > 0 for name in figures if "/s" in name), row
            assert all(value >= 0 for value in figures.values()), row  # ms: 0 when fast
            assert measured["moved_bytes"] > 0
            usage = measured["usage"]
            assert set(usage["peak_rss_mb"]) == {"1", "1000", "1001", "1002"}
            assert all(rss > 0 for rss in usage["peak_rss_mb"].values())
            assert usage["total_cpu_s"] > 0
    assert processes_under(directory) == []
    assert not (directory / "kafka").exists() and not (directory / "pykraft").exists()
