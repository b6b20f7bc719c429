"""Config validation, DescribeConfigs, AlterConfigs and IncrementalAlterConfigs."""

from __future__ import annotations

from typing import Any

import pytest
from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

from pykraft.config.broker_configs import BROKER_CONFIG_DEFS, unknown_key_warnings
from pykraft.controller import config_control
from pykraft.controller.config_control import describe_configs
from pykraft.controller.config_defs import TOPIC_CONFIGS
from pykraft.messages.kafka import alter_configs_request as legacy
from pykraft.messages.kafka.alter_configs_response import AlterConfigsResponse
from pykraft.messages.kafka.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from pykraft.messages.kafka.describe_configs_response import DescribeConfigsResponse
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.messages.kafka.incremental_alter_configs_response import (
    IncrementalAlterConfigsResponse,
)
from pykraft.protocol.errors import ErrorCode

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster()
    c.elect()
    c.start_brokers([None])
    c.call(create_topic("t"))
    return c


def incremental(cluster: Cluster, resource_type: int, name: str,
                *ops: tuple[str, int, str | None], validate_only: bool = False
                ) -> tuple[ErrorCode, str | None]:
    response = cluster.call(IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=resource_type, resource_name=name,
        configs=tuple(AlterableConfig(name=k, config_operation=op, value=v)
                      for k, op, v in ops)),), validate_only=validate_only))
    assert isinstance(response, IncrementalAlterConfigsResponse)
    return ErrorCode(response.responses[0].error_code), response.responses[0].error_message


def stored(cluster: Cluster, resource_type: int, name: str) -> dict[str, str]:
    return dict(cluster.controller.image.configs.get((resource_type, name)))


def test_incremental_operations(cluster: Cluster) -> None:
    assert incremental(cluster, TOPIC, "t", ("retention.ms", SET, "100"),
                       ("cleanup.policy", APPEND, "compact"))[0] == ErrorCode.NONE
    assert stored(cluster, TOPIC, "t") == {"retention.ms": "100",
                                           "cleanup.policy": "delete,compact"}
    assert incremental(cluster, TOPIC, "t", ("cleanup.policy", SUBTRACT, "delete"),
                       ("retention.ms", DELETE, None))[0] == ErrorCode.NONE
    assert stored(cluster, TOPIC, "t") == {"cleanup.policy": "compact"}
    assert cluster.replayed_image() == cluster.controller.image


@pytest.mark.parametrize(("resource", "ops", "code"), [
    ((TOPIC, "t"), [("retention.ms", SET, "x")], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("retention.ms", SET, "-2")], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("segment.bytes", SET, str(2**31))], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("segment.bytes", SET, "1048575")], ErrorCode.INVALID_CONFIG),  # Kafka 4
    ((TOPIC, "t"), [("internal.segment.bytes", SET, "13")], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("min.cleanable.dirty.ratio", SET, "1.5")], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("min.cleanable.dirty.ratio", SET, "nan")], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("preallocate", SET, "yes")], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("compression.type", SET, "brotli")], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("cleanup.policy", APPEND, "shred")], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("retention.ms", APPEND, "1")], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("unknown.key", SET, "1")], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("retention.ms", SET, None)], ErrorCode.INVALID_CONFIG),
    ((TOPIC, "t"), [("retention.ms", 9, "1")], ErrorCode.INVALID_REQUEST),
    ((TOPIC, "t"), [("retention.ms", SET, "1"), ("retention.ms", SET, "2")],
     ErrorCode.INVALID_REQUEST),
    ((TOPIC, "missing"), [("retention.ms", SET, "1")], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ((TOPIC, "bad name"), [("retention.ms", SET, "1")], ErrorCode.INVALID_TOPIC_EXCEPTION),
    ((BROKER, "one"), [("num.io.threads", SET, "1")], ErrorCode.INVALID_REQUEST),
    ((BROKER, "1"), [("log.cleaner.min.cleanable.ratio", SET, "2")], ErrorCode.INVALID_CONFIG),
    ((BROKER, "1"), [("num.io.threads", SET, "4")], ErrorCode.INVALID_REQUEST),
    ((8, "1"), [("kafka.foo", SET, "DEBUG")], ErrorCode.INVALID_REQUEST),
])
def test_invalid_changes_are_refused_whole(cluster: Cluster, resource: tuple[int, str],
                                           ops: list[tuple[str, int, str | None]],
                                           code: ErrorCode) -> None:
    before = len(cluster.raft.batches)
    assert incremental(cluster, *resource, *ops)[0] == code
    assert len(cluster.raft.batches) == before


def test_a_bad_key_fails_the_whole_resource(cluster: Cluster) -> None:
    code, message = incremental(cluster, TOPIC, "t", ("retention.ms", SET, "100"),
                                ("bogus", SET, "1"))
    assert code == ErrorCode.INVALID_CONFIG and "bogus" in (message or "")
    assert stored(cluster, TOPIC, "t") == {}


def test_validate_only(cluster: Cluster) -> None:
    assert incremental(cluster, BROKER, "", ("message.max.bytes", SET, "4"),
                       validate_only=True)[0] == ErrorCode.NONE
    assert stored(cluster, BROKER, "") == {}


def test_legacy_alter_configs_replaces_everything(cluster: Cluster) -> None:
    incremental(cluster, TOPIC, "t", ("retention.ms", SET, "100"), ("preallocate", SET, "true"))
    response = cluster.call(legacy.AlterConfigsRequest(resources=(legacy.AlterConfigsResource(
        resource_type=TOPIC, resource_name="t",
        configs=(legacy.AlterableConfig(name="segment.ms", value="1000"),)),),
        validate_only=False))
    assert isinstance(response, AlterConfigsResponse)
    assert response.responses[0].error_code == ErrorCode.NONE
    assert stored(cluster, TOPIC, "t") == {"segment.ms": "1000"}


def test_more_config_records_than_one_operation_takes_refuse_every_resource(
        cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's bounded record list (MAX_RECORDS_PER_USER_OP, here 2), validate_only too:
    every resource gets POLICY_VIOLATION, nothing is written."""
    monkeypatch.setattr(config_control, "MAX_RECORDS_PER_USER_OP", 2)
    for name in ("u", "v"):
        cluster.call(create_topic(name))
    before = len(cluster.raft.batches)
    too_large = (ErrorCode.POLICY_VIOLATION,
                 "Unable to perform excessively large batch operation.")
    for validate_only in (False, True):
        assert incremental(cluster, TOPIC, "t", ("retention.ms", SET, "100"),
                           ("preallocate", SET, "true"), ("segment.ms", SET, "1000"),
                           validate_only=validate_only) == too_large
    response = cluster.call(legacy.AlterConfigsRequest(resources=tuple(
        legacy.AlterConfigsResource(resource_type=resource_type, resource_name=name,
                                    configs=(legacy.AlterableConfig(name="segment.ms",
                                                                    value="1000"),))
        for resource_type, name in ((TOPIC, "t"), (TOPIC, "zz"), (TOPIC, "u"), (TOPIC, "v"))),
        validate_only=False))
    assert isinstance(response, AlterConfigsResponse)
    assert [(r.error_code, r.error_message) for r in response.responses] == [too_large] * 4
    assert len(cluster.raft.batches) == before
    assert incremental(cluster, TOPIC, "t", ("retention.ms", SET, "100"),
                       ("preallocate", SET, "true"))[0] == ErrorCode.NONE


def describe(cluster: Cluster, resource_type: int, name: str,
             keys: tuple[str, ...] | None = None) -> DescribeConfigsResponse:
    response = cluster.call(DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=keys),),
        include_synonyms=True))
    assert isinstance(response, DescribeConfigsResponse)
    return response


@pytest.mark.parametrize(("name", "code"), [
    ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION), ("..", ErrorCode.INVALID_TOPIC_EXCEPTION)])
def test_describe_a_topic_that_is_not_there(cluster: Cluster, name: str,
                                            code: ErrorCode) -> None:
    """Kafka's ConfigHelper validates the name first: an illegal one is invalid, not unknown."""
    assert describe(cluster, TOPIC, name).results[0].error_code == code


def test_describe_configs_sources(cluster: Cluster) -> None:
    """Controller node 0 describes itself: every Kafka broker key, dynamic layers first."""
    incremental(cluster, BROKER, "", ("message.max.bytes", SET, "4"))
    incremental(cluster, BROKER, "0", ("message.max.bytes", SET, "6"),
                ("log.segment.bytes", SET, "2097152"))
    incremental(cluster, TOPIC, "t", ("retention.ms", SET, "100"))
    broker = describe(cluster, BROKER, "0").results[0]
    assert broker.error_code == ErrorCode.NONE
    entries = {c.name: (c.value, c.config_source) for c in broker.configs}
    assert set(entries) == set(BROKER_CONFIG_DEFS)
    assert entries["message.max.bytes"] == ("6", 2) and entries["num.network.threads"] == ("3", 5)
    io = next(c for c in broker.configs if c.name == "message.max.bytes")
    assert [(s.value, s.source) for s in io.synonyms] == [("6", 2), ("4", 3), ("1048588", 5)]
    cluster_default = describe(cluster, BROKER, "").results[0]
    assert [(c.name, c.value, c.config_source, [s.source for s in c.synonyms])
            for c in cluster_default.configs] == [("message.max.bytes", "4", 3, [3])]
    other = describe(cluster, BROKER, "2").results[0]
    assert (other.error_code, other.error_message) == (
        ErrorCode.INVALID_REQUEST,
        "Unexpected broker id, expected 0 or empty string, but received 2")
    topic = describe(cluster, TOPIC, "t", ("retention.ms", "segment.ms")).results[0]
    assert [(c.name, c.value, c.config_source) for c in topic.configs] == [
        ("retention.ms", "100", 1), ("segment.ms", TOPIC_CONFIGS["segment.ms"].default, 5)]
    assert describe(cluster, TOPIC, "nope").results[0].error_code == \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


STATIC = {"node.id": "0", "log.retention.hours": "1", "ssl.keystore.password": "secret",
          "contoller.quorum.election.timeout.ms": "1500"}


def describe_static(cluster: Cluster, *, documentation: bool) -> dict[str, Any]:
    request = DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=BROKER, resource_name="0", configuration_keys=()),),
        include_synonyms=True, include_documentation=documentation)
    response = describe_configs(cluster.controller.committed_image, request, node_id=0,
                                static=STATIC)
    return {c.name: c for c in response.results[0].configs}


def test_describe_layers_static_dynamic_synonyms_and_secrets(cluster: Cluster) -> None:
    assert incremental(cluster, BROKER, "0", ("log.retention.ms", SET, "5000"))[0] == \
        ErrorCode.NONE
    entries = describe_static(cluster, documentation=True)
    retention = entries["log.retention.ms"]
    assert (retention.value, retention.config_source, retention.read_only) == ("5000", 2, False)
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("log.retention.ms", "5000", 2), ("log.retention.hours", "1", 4),
        ("log.retention.hours", "168", 5)]
    node = entries["node.id"]
    assert (node.value, node.config_source, node.read_only, node.config_type) == ("0", 4, True, 3)
    assert node.documentation == "this node's id, unique in the cluster"
    secret = entries["ssl.keystore.password"]
    assert (secret.value, secret.is_sensitive, secret.config_type, secret.config_source) == (
        None, True, 9, 4)
    assert [s.value for s in secret.synonyms] == [None]
    # a key Kafka does not know has no type: described, but hidden like a secret
    typo = entries["contoller.quorum.election.timeout.ms"]
    assert (typo.value, typo.is_sensitive, typo.config_type, typo.documentation) == (
        None, True, 0, None)
    unset = entries["log.roll.ms"]  # Kafka's default is null; its synonym holds the hours
    assert (unset.value, unset.config_source, unset.synonyms) == (None, 5, ())
    assert all(c.documentation is None
               for c in describe_static(cluster, documentation=False).values())


def test_read_only_and_per_broker_keys_are_refused_as_kafka_does(cluster: Cluster) -> None:
    assert incremental(cluster, BROKER, "0", ("node.id", SET, "3")) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [node.id]")
    for name in ("", "0"):
        assert incremental(cluster, BROKER, name, ("ssl.keystore.password", SET, "x")) == (
            ErrorCode.INVALID_REQUEST, "These security configs can be dynamically updated "
            "only per-listener using the listener prefix: [ssl.keystore.password]")
    override = "listener.name.external.ssl.keystore.password"
    assert incremental(cluster, BROKER, "", (override, SET, "x")) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs at default cluster level, "
        f"broker id must be specified: [{override}]")
    # dynamic in Kafka (4.4's max.decompressed.message.bytes too), read once at start by
    # pykraft or not at all: refused, never accepted and ignored
    assert incremental(cluster, BROKER, "", ("max.decompressed.message.bytes", SET, "9")) == (
        ErrorCode.INVALID_REQUEST,
        "Cannot update these configs dynamically: [max.decompressed.message.bytes]")
    assert incremental(cluster, BROKER, "0", (override, SET, "x")) == (
        ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: [{override}]")
    # a key nobody knows is stored, as Kafka 4.4 stores it (zookeeper.* is one since 4.0)
    for key in ("no.such.key", "zookeeper.connect"):
        assert incremental(cluster, BROKER, "0", (key, SET, "x"))[0] == ErrorCode.NONE


def test_describe_reads_the_committed_image(cluster: Cluster) -> None:
    cluster.submit(IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=TOPIC, resource_name="t",
        configs=(AlterableConfig(name="retention.ms", config_operation=SET, value="7"),)),),
        validate_only=False))
    ticket = cluster.submit(DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=TOPIC, resource_name="t", configuration_keys=("retention.ms",)),)))
    response = cluster.responses[ticket]
    assert isinstance(response, DescribeConfigsResponse)
    assert response.results[0].configs[0].config_source == 5  # not yet committed


@pytest.mark.parametrize(("key", "value"), [
    ("compression.gzip.level", "5"), ("compression.gzip.level", "-1"),
    ("compression.lz4.level", "10"), ("compression.zstd.level", "7"),
    ("message.timestamp.before.max.ms", "1000"), ("message.timestamp.after.max.ms", "2000"),
    ("local.retention.ms", "5"), ("local.retention.bytes", "5"),
    ("remote.copy.lag.ms", "5"), ("remote.copy.lag.bytes", "5"),
    ("remote.log.copy.disable", "true"), ("remote.log.delete.on.disable", "true"),
    ("remote.storage.enable", "false"), ("errors.deadletterqueue.group.enable", "true"),
    ("max.decompressed.message.bytes", "100")])
def test_kafka_4_4s_topic_keys_are_accepted(cluster: Cluster, key: str, value: str) -> None:
    """Each key Kafka 4.4's LogConfig accepts (the oracle test creates a topic with each)."""
    assert incremental(cluster, TOPIC, "t", (key, SET, value)) == (ErrorCode.NONE, None)
    assert stored(cluster, TOPIC, "t") == {key: value}


@pytest.mark.parametrize(("key", "value", "message"), [
    ("compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: "
     "Value must be between 1 and 9 or equal to -1"),
    ("compression.lz4.level", "18", "Invalid value 18 for configuration compression.lz4.level: "
     "Value must be no more than 17"),
    ("message.downconversion.enable", "true",  # removed in Kafka 4.0 with message format v0/v1
     "Unknown topic config name: message.downconversion.enable"),
    ("remote.storage.enable", "true", "Tiered Storage functionality is disabled in the broker. "
     "Topic cannot be configured with remote log storage.")])
def test_topic_values_kafka_4_4_refuses(cluster: Cluster, key: str, value: str,
                                        message: str) -> None:
    assert incremental(cluster, TOPIC, "t", (key, SET, value)) == (ErrorCode.INVALID_CONFIG,
                                                                   message)


def test_zookeeper_keys_are_unknown_as_in_kafka_4(cluster: Cluster) -> None:
    """Kafka 4 has no zookeeper.* key: one in the properties file is warned about and
    described as any unknown key (hidden, no type); none is listed otherwise."""
    assert unknown_key_warnings(["zookeeper.connect"]) == [
        "The configuration 'zookeeper.connect' was supplied but isn't a known config."]
    request = DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=BROKER, resource_name="0", configuration_keys=()),),
        include_synonyms=True)
    response = describe_configs(cluster.controller.committed_image, request, node_id=0,
                                static={"node.id": "0", "zookeeper.connect": "zk:2181"})
    entries = {c.name: c for c in response.results[0].configs}
    assert [name for name in entries if name.startswith("zookeeper.")] == ["zookeeper.connect"]
    zk = entries["zookeeper.connect"]
    assert (zk.value, zk.is_sensitive, zk.config_type, zk.config_source) == (None, True, 0, 4)


def test_a_topics_configs_show_the_broker_layers_as_kafka_does(cluster: Cluster) -> None:
    """Kafka 4.4's answer for the same state (tests/oracle compares the two): each topic key
    lists its own value, then its first broker synonym's layers."""
    assert incremental(cluster, BROKER, "", ("log.retention.ms", SET, "5000000"))[0] == \
        ErrorCode.NONE
    incremental(cluster, TOPIC, "t", ("message.timestamp.after.max.ms", SET, "2000"))
    request = DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=TOPIC, resource_name="t", configuration_keys=None),),
        include_synonyms=True)
    response = describe_configs(cluster.controller.committed_image, request, node_id=0, static={
        "node.id": "0", "log.retention.hours": "100", "message.max.bytes": "2000000"})
    entries = {c.name: (c.value, c.config_source, [(s.name, s.value, s.source)
                                                    for s in c.synonyms])
               for c in response.results[0].configs}
    assert set(entries) == set(TOPIC_CONFIGS)
    assert entries["retention.ms"] == ("5000000", 3, [
        ("log.retention.ms", "5000000", 3), ("log.retention.hours", "100", 4),
        ("log.retention.hours", "168", 5)])
    assert entries["max.message.bytes"] == ("2000000", 4, [
        ("message.max.bytes", "2000000", 4), ("message.max.bytes", "1048588", 5)])
    assert entries["message.timestamp.after.max.ms"] == ("2000", 1, [
        ("message.timestamp.after.max.ms", "2000", 1),
        ("log.message.timestamp.after.max.ms", "3600000", 5)])
    assert entries["cleanup.policy"] == ("delete", 5, [("log.cleanup.policy", "delete", 5)])
    assert entries["segment.ms"] == ("604800000", 5, [])  # log.roll.ms is null
    assert entries["local.retention.ms"] == ("-2", 5, [("log.local.retention.ms", "-2", 5)])
    assert entries["remote.storage.enable"] == ("false", 5, [])


def test_the_internal_segment_bytes_key_is_described_only_when_set(cluster: Cluster) -> None:
    """Kafka 4's floor of segment.bytes is 1 MiB; its tests roll small segments through
    ``internal.segment.bytes``, which DescribeConfigs lists only for a topic that sets it
    (Kafka 4.4 does so: tests/oracle/test_kafka_configs.py)."""
    def described() -> dict[str, tuple[str | None, int]]:
        return {c.name: (c.value, c.config_source)
                for c in describe(cluster, TOPIC, "t").results[0].configs}

    assert "internal.segment.bytes" not in described()
    assert incremental(cluster, TOPIC, "t", ("internal.segment.bytes", SET, "200"))[0] == (
        ErrorCode.NONE)
    assert stored(cluster, TOPIC, "t")["internal.segment.bytes"] == "200"
    assert described()["internal.segment.bytes"] == ("200", 1)
    assert described()["segment.bytes"] == ("1073741824", 5)
