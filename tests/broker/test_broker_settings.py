"""process.roles validation for brokers and combined nodes (refused before any storage)."""

from __future__ import annotations

import pytest

from pykraft.config.server import ServerConfig
from pykraft.errors import ConfigError
from pykraft.runtime.settings import load_settings

BASE = {
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "log.dirs": "/nonexistent/pykraft-test",
}


def settings_for(props: dict[str, str]) -> None:
    load_settings(ServerConfig({**BASE, **props}))


@pytest.mark.parametrize(("props", "message"), [
    ({"process.roles": "broker", "node.id": "1", "listeners": "PLAINTEXT://127.0.0.1:9092"},
     "broker-only node cannot be a voter"),
    ({"process.roles": "broker", "node.id": "2", "listeners": "CONTROLLER://127.0.0.1:9093"},
     "no listener outside controller.listener.names"),
    ({"process.roles": "broker,controller", "node.id": "2",
      "listeners": "CONTROLLER://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092"},
     "is not in controller.quorum.voters"),
    ({"process.roles": "broker", "node.id": "2", "listeners": "PLAINTEXT://127.0.0.1:9092",
      "broker.heartbeat.interval.ms": "0"}, "broker.heartbeat.interval.ms"),
    ({"process.roles": "broker", "node.id": "2", "listeners": "PLAINTEXT://127.0.0.1:9092",
      "replica.selector.class": "com.example.NearestReplicaSelector"},
     "com.example.NearestReplicaSelector for configuration replica.selector.class: pykraft "
     "cannot load Java classes"),
])
def test_refused_with_the_key_at_fault(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_for(props)
