import re
from pathlib import Path

import pytest

from pykraft.config.server import Endpoint, ServerConfig, VoterSpec, parse_voter
from pykraft.errors import ConfigError
from pykraft.ids import uuid_from_str


def _config(**props: str) -> ServerConfig:
    return ServerConfig({k.replace("_", "."): v for k, v in props.items()})


def test_controller_config() -> None:
    cfg = ServerConfig(
        {
            "process.roles": "controller",
            "node.id": "1",
            "listeners": "CONTROLLER://127.0.0.1:9093",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094",
            "log.dirs": "/a,/b",
        }
    )
    assert cfg.node_id == 1
    assert cfg.is_controller
    assert cfg.static_voters == (
        VoterSpec(1, "127.0.0.1", 9093),
        VoterSpec(2, "127.0.0.1", 9094),
    )
    assert cfg.metadata_log_dir == Path("/a")
    assert cfg.advertised_controller_endpoints() == (Endpoint("CONTROLLER", "127.0.0.1", 9093),)
    assert cfg.get("controller.quorum.election.timeout.ms") == 1000


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"node.id": "x"}, "node.id"),
        ({"process.roles": "router"}, "process.roles"),
        ({"controller.quorum.voters": "1@host"}, "controller.quorum.voters"),
        ({"listeners": "PLAINTEXT//h:1"}, "listeners"),
        ({"controller.quorum.auto.join.enable": "maybe"}, "auto.join"),
        ({"pykraft.event.loop": "trio"}, "pykraft.event.loop"),
    ],
)
def test_bad_values_name_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ServerConfig(props)


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("unclean.leader.election.enable", "yes", "Expected value to be either true or false"),
        ("auto.create.topics.enable", "1", "Expected value to be either true or false"),
        ("num.partitions", "abc", "Not a number of type INT"),
        ("num.partitions", "0", "Value must be at least 1"),
        ("log.retention.hours", "forever", "Not a number of type INT"),
        ("log.retention.ms", "1_000", "Not a number of type LONG"),
        ("message.max.bytes", "1MB", "Not a number of type INT"),
        ("message.max.bytes", "2147483648", "Not a number of type INT"),
        ("offsets.topic.replication.factor", "40000", "Not a number of type SHORT"),
        ("offsets.topic.replication.factor", "0", "Value must be at least 1"),
        ("compression.zstd.level", "23", "Value must be no more than 22"),
        ("node.id", "x", "Not a number of type INT"),
    ],
)
def test_kafka_keys_are_checked_as_kafkas_config_def_checks_them(
        key: str, value: str, reason: str) -> None:
    """KafkaConfig refuses to start on a value of the wrong type or out of its key's range,
    naming the key as written (``message.max.bytes``, not the topic's synonym)."""
    with pytest.raises(ConfigError) as refused:
        ServerConfig({key: value})
    assert str(refused.value) == f"Invalid value {value} for configuration {key}: {reason}"


@pytest.mark.parametrize(("key", "value"), [
    ("unclean.leader.election.enable", " TRUE "), ("num.partitions", "+3"),
    ("log.retention.hours", "-1"),
    # Kafka 3.9 gives default.replication.factor no validator: a negative one is refused
    # only when a topic is created with it, not at start
    ("default.replication.factor", "-3"),
])
def test_values_kafka_accepts_are_accepted(key: str, value: str) -> None:
    assert ServerConfig({key: value}).raw[key] == value


def test_missing_required_key_is_named() -> None:
    with pytest.raises(ConfigError, match=r"node\.id"):
        _ = ServerConfig({}).node_id


def test_dynamic_voter_syntax() -> None:
    spec = parse_voter("3@localhost:9095:XHhkr4tkSsD900pOQ8pPfg", "x", with_directory=True)
    assert spec == VoterSpec(3, "localhost", 9095, uuid_from_str("XHhkr4tkSsD900pOQ8pPfg"))
    with pytest.raises(ConfigError, match="directory id"):
        parse_voter("3@localhost:9095:nope", "x", with_directory=True)


def test_event_loop_defaults_to_uvloop_and_takes_asyncio() -> None:
    assert ServerConfig({}).get("pykraft.event.loop") == "uvloop"
    assert ServerConfig({"pykraft.event.loop": " AsyncIO "}).get("pykraft.event.loop") == "asyncio"
