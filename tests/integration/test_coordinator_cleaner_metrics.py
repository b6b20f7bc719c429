"""The log cleaner's, the group and transaction coordinators' and the client quotas' Kafka
metrics of a real broker (1 controller + 1 broker), scraped around a run that commits a
group's offsets, completes a transaction, compacts a topic and throttles a producer: each
one moves as Kafka's does (issue 31, item 10)."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from process_harness import Samples, scrape, wait_for
from test_broker_metrics import (  # type: ignore[import-not-found]
    Metered,
    running_metered,
    value,
)

sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import PROPERTIES, create_topic
from java_kafka import tool_outcome

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SINGLE = {**PROPERTIES, "offsets.topic.replication.factor": "1",
          "offsets.topic.num.partitions": "1",
          "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
          "transaction.state.log.num.partitions": "1",
          # Kafka's least offset map (just over 1 MiB: 43,690 keys), so 500 keys show as 1 %
          "log.cleaner.dedupe.buffer.size": str(1024 * 1024 + 24),
          "log.cleaner.backoff.ms": "100"}
KEYS = 500
LC, LCM = "kafka_log_logcleaner_", "kafka_log_logcleanermanager_"
GCM = "kafka_server_group_coordinator_metrics_"
GMM = "kafka_coordinator_group_groupmetadatamanager_"
TCM = "kafka_server_transaction_coordinator_metrics_"
QUOTA = {"resource": "Produce", "user": "", "clientId": "throttled"}


@pytest.fixture
def metered(tmp_path: Path) -> Iterator[Metered]:
    with running_metered(tmp_path / "c", SINGLE, 1) as running:
        yield running


def _until(metered: Metered, what: str, holds: dict[str, float]) -> Samples:
    """Scrape the broker until each unlabelled series in ``holds`` is at least that."""
    port = metered.ports[metered.cluster.brokers[0]]
    def probe() -> Samples | None:
        samples = scrape(port)
        return samples if samples is not None and all(
            value(samples, name) >= least for name, least in holds.items()) else None
    found: Samples = wait_for(what, probe)
    return found


def _commit_as_a_group(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for number in range(10):
        producer.produce("plain", b"v", b"k%d" % number)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "metered",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["plain"])
    try:
        wait_for("a record consumed", lambda: (
            m if (m := consumer.poll(0.5)) is not None and m.error() is None else None), 60)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def _transaction(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "metered-txn"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("plain", b"in a transaction")
    producer.commit_transaction(30)


def test_cleaner_coordinator_and_quota_metrics_move(metered: Metered) -> None:
    cluster = metered.cluster
    bootstrap = cluster.bootstrap_servers
    broker = cluster.brokers[0]
    before = metered.scrape(broker)
    assert value(before, GCM + "offset_commit_count") == 0
    assert math.isnan(value(before, TCM + "partition_load_time_max"))
    assert value(before, LC + "cleaner_recopy_percent") == 0
    create_topic(bootstrap, "plain", 1)

    # a classic group commits; a transaction loads __transaction_state and completes
    _commit_as_a_group(bootstrap)
    _transaction(bootstrap)
    grouped = _until(metered, "the group's offsets and the transaction's load", {
        GCM + "offset_commit_count": 1, GCM + "offset_count": 1,
        GCM + "group_completed_rebalance_count": 1, GMM + "numoffsets": 1})
    assert value(grouped, GCM + "group_count", protocol="classic") == 1
    assert value(grouped, GCM + "classic_group_count", state="Empty") == 1  # consumer left
    assert value(grouped, GMM + "numgroupsempty") == 1
    assert value(grouped, TCM + "partition_load_time_max") >= 0  # a number: loaded
    assert value(grouped, "kafka_coordinator_transaction_transactionmarkerchannelmanager_"
                          "unknowndestinationqueuesize") == 0

    # a compacted topic of 500 keys, written twice: the cleaner's pass shows in its gauges
    create_topic(bootstrap, "compacted", 1, configs={"cleanup.policy": "compact",
                                                     "internal.segment.bytes": "4000"})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.size": 1})
    for number in range(2 * KEYS):
        producer.produce("compacted", b"v%d" % number, b"k%d" % (number % KEYS))
    assert producer.flush(30) == 0
    cleaned = _until(metered, "a cleaning", {LC + "cleaner_recopy_percent": 1,
                                             LC + "max_buffer_utilization_percent": 1})
    assert value(cleaned, LC + "cleaner_recopy_percent") < 100
    assert value(cleaned, LC + "deadthreadcount") == 0
    assert value(cleaned, LCM + "time_since_last_run_ms") >= 0
    # min.cleanable ratio 1.0: the dirty records stay and max-dirty-percent shows them
    code, out = tool_outcome(cluster, None, "configs", "--alter", "--entity-type", "topics",
                             "--entity-name", "compacted", "--add-config",
                             "min.cleanable.dirty.ratio=1.0")
    assert code == 0, out
    for number in range(2 * KEYS, 4 * KEYS):
        producer.produce("compacted", b"v%d" % number, b"k%d" % (number % KEYS))
    assert producer.flush(30) == 0
    _until(metered, "dirty records left", {LCM + "max_dirty_percent": 50})

    # a client-id quota of 2 KB/s: the producer's rate and throttle time per client id
    code, out = tool_outcome(cluster, None, "configs", "--alter", "--entity-type", "clients",
                             "--entity-name", "throttled", "--add-config",
                             "producer_byte_rate=2000")
    assert code == 0, out
    slow = Producer({"bootstrap.servers": bootstrap, "client.id": "throttled",
                     "linger.ms": 0})
    def throttled() -> Samples | None:
        slow.produce("plain", b"x" * 5000)
        slow.flush(30)
        samples = metered.scrape(broker)
        return samples if value(samples, "kafka_server_quota_throttle_time",
                                **QUOTA) > 0 else None
    found: Samples = wait_for("the producer throttled", throttled, 60)
    assert value(found, "kafka_server_quota_byte_rate", **QUOTA) > 0
