"""Kafka's MBean names under the JMX exporter's rule, the request metrics' bookkeeping, and
the example Grafana dashboard naming only series pykraft exports."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

from prometheus_client.core import Metric

from pykraft.broker.broker_metrics import broker_families
from pykraft.broker.client_quotas import BrokerQuotas
from pykraft.broker.coordinator_metrics import coordinator_families
from pykraft.broker.coordinator_topics import OffsetsTopicConfig
from pykraft.broker.group_coordinator import GroupCoordinatorService
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.broker.topic_metrics import BrokerTopicStats
from pykraft.broker.txn_coordinator import TxnCoordinatorService
from pykraft.config.server import ServerConfig
from pykraft.ids import TopicPartition
from pykraft.image import MetadataDelta, Provenance
from pykraft.image.image import MetadataImage
from pykraft.log.log_manager import LogManager
from pykraft.messages.kafka.produce_response import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ClientQuotaRecord, EntityData
from pykraft.runtime.controller_metrics import controller_families
from pykraft.runtime.jmx_names import prometheus_name
from pykraft.runtime.request_metrics import (
    RequestMetrics,
    also_named,
    error_counts,
    note_response,
    parked,
)
from pykraft.security.session import anonymous
from pykraft.storage.log_config import LogConfig
from pykraft.txn.config import TxnConfig

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "pykraft-broker.json"


def samples(families: Iterable[Metric]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in families for s in family.samples}


def test_the_exporter_rule_names_meters_gauges_and_dashed_names() -> None:
    assert prometheus_name("kafka.server", "BrokerTopicMetrics",
                           "MessagesInPerSec") == "kafka_server_brokertopicmetrics_messagesin"
    assert prometheus_name("kafka.controller", "KafkaController", "ActiveControllerCount") == (
        "kafka_controller_kafkacontroller_activecontrollercount")
    assert prometheus_name("kafka.log", "LogCleanerManager", "time-since-last-run-ms") == (
        "kafka_log_logcleanermanager_time_since_last_run_ms")


def test_topic_counts_go_to_the_topic_and_to_all_topics() -> None:
    stats = BrokerTopicStats()
    stats.produced("a", 100, 3)
    stats.produced("b", 10, 1)
    stats.produce_failed("a", unexpected=True)
    stats.produce_failed("a", unexpected=False, rejected_bytes=7)
    stats.sent("b", 40)
    stats.retain({"a"})
    found = samples(stats.families())
    name = "kafka_server_brokertopicmetrics_"
    assert found[(name + "messagesin_total", ())] == 4
    assert found[(name + "messagesin_total", (("topic", "a"),))] == 3
    assert found[(name + "totalproducerequests_total", (("topic", "a"),))] == 3
    assert found[(name + "failedproducerequests_total", ())] == 1
    assert found[(name + "bytesrejected_total", (("topic", "a"),))] == 7
    assert found[(name + "bytesout_total", ())] == 40
    assert (name + "bytesout_total", (("topic", "b"),)) not in found  # no longer hosted


def test_a_request_is_counted_by_version_error_and_time() -> None:
    metrics = RequestMetrics()

    async def serve() -> None:
        times, token = metrics.begin()
        try:
            also_named("FetchConsumer")
            with parked():
                assert samples(metrics.families())[
                    ("kafka_network_requestchannel_requestqueuesize", ())] == 0
                await asyncio.sleep(0)
            note_response(ProduceResponse(responses=(TopicProduceResponse(
                name="t", partition_responses=(
                    PartitionProduceResponse(index=0, error_code=ErrorCode.NONE),
                    PartitionProduceResponse(
                        index=1, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER))),)))
            metrics.record(ApiKey.FETCH, 13, times, arrived=1.0, started=1.5, handled=2.5,
                           sent=3.0)
        finally:
            metrics.end(token)

    asyncio.run(serve())
    found = samples(metrics.families())
    req = "kafka_network_requestmetrics_"
    for request in ("Fetch", "FetchConsumer"):
        assert found[(req + "requests_total", (("request", request), ("version", "13")))] == 1
        assert found[(req + "errors_total", (("error", "NONE"), ("request", request)))] == 1
        assert found[(req + "errors_total", (("error", "NOT_LEADER_OR_FOLLOWER"),
                                             ("request", request)))] == 1
        assert found[(req + "totaltimems_sum", (("request", request),))] == 2000
        assert found[(req + "requestqueuetimems_sum", (("request", request),))] == 500
        assert found[(req + "responsesendtimems_sum", (("request", request),))] == 500
        assert found[(req + "totaltimems_bucket", (("le", "+Inf"), ("request", request)))] == 1
    assert found[("kafka_network_requestchannel_requestqueuesize", ())] == 0


def test_error_counts_walk_every_error_code_of_a_response() -> None:
    assert error_counts(object()) == {}
    assert error_counts(ProduceResponse()) == {}


def _coordinators(replicas: ReplicaManager) -> list[Metric]:
    """The families of a broker's group and transaction coordinators (nothing loaded) and
    of its quotas, one client's produce recorded under a quota."""
    def unused(*_args: object, **_kwargs: object) -> NoReturn:
        raise AssertionError("not called")

    groups = GroupCoordinatorService(replicas, lambda: 0, unused, OffsetsTopicConfig())
    transactions = TxnCoordinatorService(replicas, lambda: 0, TxnConfig(), producer_ids=unused,
                                         connect=unused, request_timeout_ms=1_000)
    delta = MetadataDelta(MetadataImage())
    delta.replay(ClientQuotaRecord(entity=(EntityData(entity_type="client-id",
                                                      entity_name="c"),),
                                   key="producer_byte_rate", value=1000.0))
    image = delta.apply(Provenance(10, 1, 0))
    quotas = BrokerQuotas(ServerConfig({}), lambda: 0, lambda: image)

    async def produce() -> None:
        quotas.throttle_produce(anonymous("127.0.0.1:1"), "c", 1_000_000)

    asyncio.run(produce())
    return list(coordinator_families(groups, transactions, quotas))


def test_the_dashboard_names_only_exported_series(tmp_path: Path) -> None:
    replicas = ReplicaManager(1, LogManager([tmp_path], LogConfig()), {})
    replicas.cleaner.started = True
    replicas.cleaner.mark_uncleanable(TopicPartition("t", 0), tmp_path)
    replicas.cleaner.uncleanable_bytes = {tmp_path: 100}
    replicas.cleaner.end_pass(0.0)
    requests = RequestMetrics()
    times, token = requests.begin()
    try:
        note_response(ProduceResponse(responses=(TopicProduceResponse(
            name="t", partition_responses=(PartitionProduceResponse(index=0),)),)))
        requests.record(ApiKey.PRODUCE, 9, times, arrived=0, started=0, handled=0, sent=0)
    finally:
        requests.end(token)
    replicas.topic_stats.produced("t", 1, 1)
    exported = {s.name for family in (*requests.families(), *broker_families(replicas),
                                      *controller_families(MetadataImage(), active=True),
                                      *_coordinators(replicas))
                for s in family.samples}
    expressions = [target["expr"] for panel in json.loads(DASHBOARD.read_text())["panels"]
                   for target in panel["targets"]]
    named = {name for expr in expressions for name in re.findall(r"\bkafka_[a-z_]+", expr)}
    assert named and named <= exported, named - exported
