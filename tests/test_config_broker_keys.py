"""Which supplied keys are unknown (Kafka warns, then starts) and the broker key table."""

from __future__ import annotations

from pykraft.config.broker_configs import (
    BROKER_CONFIG_DEFS,
    is_known,
    static_layer,
    synonyms,
    unknown_key_warnings,
)
from pykraft.config.server import CONFIG_DEFS, INTERNAL_METADATA_LOG_SEGMENT_BYTES, ServerConfig
from pykraft.runtime.settings import NodeSettings


def test_a_typo_is_warned_with_the_closest_key() -> None:
    assert unknown_key_warnings(["contoller.quorum.election.timeout.ms"]) == [
        "The configuration 'contoller.quorum.election.timeout.ms' was supplied but isn't a "
        "known config. Did you mean 'controller.quorum.election.timeout.ms'?"]
    assert unknown_key_warnings(["pykraft.evnt.loop", "zzzz"]) == [
        "The configuration 'pykraft.evnt.loop' was supplied but isn't a known config. "
        "Did you mean 'pykraft.event.loop'?",
        "The configuration 'zzzz' was supplied but isn't a known config."]


def test_known_keys_and_free_prefixes_are_not_warned() -> None:
    assert unknown_key_warnings([
        "node.id", "log.retention.hours", "ssl.keystore.password", "pykraft.event.loop",
        "metrics.port", "unstable.api.versions.enable",
        "listener.name.plaintext.ssl.keystore.location",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config",
        "config.providers.file.class", "rsm.config.bucket", "remote.log.metadata.topic.x",
    ]) == []


def test_every_key_pykraft_reads_is_a_described_broker_key_with_the_same_default() -> None:
    for key in CONFIG_DEFS:
        if key.key == INTERNAL_METADATA_LOG_SEGMENT_BYTES:  # Kafka's internal: never described
            assert key.key not in BROKER_CONFIG_DEFS and is_known(key.key)
            continue
        described = BROKER_CONFIG_DEFS[key.key]
        if key.default:
            assert described.default == key.default, key.key
        else:  # unset in pykraft: Kafka's null or empty, never a value pykraft ignores
            assert not described.default, key.key
        assert described.doc == key.doc


def test_kafka_broker_table_facts() -> None:
    assert len(BROKER_CONFIG_DEFS) == 350 + 6  # Kafka 4.4's public keys, pykraft's six
    retention = BROKER_CONFIG_DEFS["log.retention.ms"]
    assert (retention.default, retention.update_mode) == (None, "cluster-wide")
    assert BROKER_CONFIG_DEFS["log.retention.hours"].default == "168"
    assert BROKER_CONFIG_DEFS["background.threads"].minimum == 1
    assert BROKER_CONFIG_DEFS["ssl.keystore.password"].sensitive
    assert synonyms("log.retention.minutes") == (
        "log.retention.ms", "log.retention.minutes", "log.retention.hours")
    assert synonyms("listener.name.internal.ssl.keystore.type") == (
        "listener.name.internal.ssl.keystore.type", "ssl.keystore.type")
    assert synonyms("listener.name.x.plain.sasl.jaas.config") == (
        "listener.name.x.plain.sasl.jaas.config", "sasl.jaas.config")
    assert synonyms("log.flush.scheduler.interval.ms") == ("log.flush.scheduler.interval.ms",)


def test_server_config_keeps_unknown_keys_for_the_warning() -> None:
    config = ServerConfig({"node.id": "1", "contoller.quorum.election.timeout.ms": "5"})
    assert config.get("controller.quorum.election.timeout.ms") == 1000
    assert "contoller.quorum.election.timeout.ms" in config.raw
    assert NodeSettings.__dataclass_fields__["config_warnings"].default == ()


def test_node_id_and_broker_id_fill_each_other_in_as_kafka_config_does() -> None:
    assert static_layer({"node.id": "4"}) == {"node.id": "4", "broker.id": "4"}
    assert static_layer({"broker.id": "5"}) == {"broker.id": "5", "node.id": "5"}
    assert static_layer({"node.id": "4", "broker.id": "4"}) == {"node.id": "4", "broker.id": "4"}
