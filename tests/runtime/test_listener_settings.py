"""Listeners and their protocols as a node reads them: every broker listener is bound with
its listener.security.protocol.map protocol, the inter-broker listener is Kafka's choice,
and TLS settings are checked before the node starts."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from tls_fixtures import pem_files, pki

from pykraft.config.server import ServerConfig
from pykraft.errors import ConfigError
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.runtime.controller_registration import registration_request
from pykraft.runtime.node import RaftNode
from pykraft.runtime.settings import NodeSettings, load_settings
from pykraft.security.session import SecurityProtocol
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage


def _settings(tmp_path: Path, **props: str) -> NodeSettings:
    config = ServerConfig({
        "process.roles": "broker", "node.id": "1000",
        **({"process.roles": "controller", "node.id": "1"} if "CONTROLLER://" in props.get(
            "listeners", "") else {}),
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": "1@127.0.0.1:9093", "log.dirs": str(tmp_path / "data"),
        **{key.replace("_", "."): value for key, value in props.items()}})
    format_storage(FormatRequest(config=config, cluster_id=uuid_to_str(random_uuid()),
                                 mode=QuorumMode.STATIC))
    return load_settings(config)


def test_without_a_map_kraft_listeners_keep_working_as_plaintext(tmp_path: Path) -> None:
    settings = _settings(tmp_path, listeners="PLAINTEXT://127.0.0.1:9092")
    assert settings.protocol_of("CONTROLLER") == SecurityProtocol.PLAINTEXT
    assert settings.controller_tls is None
    assert settings.broker is not None
    assert [(s.name, s.protocol) for s in settings.broker.listeners] == [
        ("PLAINTEXT", SecurityProtocol.PLAINTEXT)]


def test_every_broker_listener_is_bound_with_its_protocol(tmp_path: Path) -> None:
    keys = pki()
    ssl_keys = {k.replace(".", "_"): v
                for k, v in pem_files(tmp_path, keys.server, keys.ca, "server").items()}
    settings = _settings(
        tmp_path, listeners="PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094",
        advertised_listeners="PLAINTEXT://127.0.0.1:9092,EXTERNAL://broker.example:19094",
        listener_security_protocol_map="PLAINTEXT:PLAINTEXT,EXTERNAL:SSL,CONTROLLER:SSL",
        **ssl_keys)
    broker = settings.broker
    assert broker is not None
    assert [(s.name, s.protocol, s.advertised.host, s.tls is not None)
            for s in broker.listeners] == [
        ("PLAINTEXT", SecurityProtocol.PLAINTEXT, "127.0.0.1", False),
        ("EXTERNAL", SecurityProtocol.SSL, "broker.example", True)]
    assert broker.inter_broker_listener == "PLAINTEXT"
    assert broker.inter_broker_tls is None
    assert settings.controller_tls is not None  # the controller listener is SSL


def test_the_inter_broker_listener_is_kafkas_choice(tmp_path: Path) -> None:
    keys = pki()
    ssl_keys = {k.replace(".", "_"): v
                for k, v in pem_files(tmp_path, keys.server, keys.ca, "server").items()}
    settings = _settings(tmp_path, listeners="PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9094",
                         security_inter_broker_protocol="SSL",
                         listener_security_protocol_map="PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                                        "CONTROLLER:PLAINTEXT", **ssl_keys)
    assert settings.broker is not None
    assert settings.broker.inter_broker_listener == "SSL"
    assert settings.broker.inter_broker_tls is not None


@pytest.mark.parametrize(("props", "message"), [
    ({"listeners": "EXTERNAL://127.0.0.1:9092"},
     "No security protocol defined for listener EXTERNAL"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"},
     "No security protocol defined for listener CONTROLLER"),
    # with an SSL listener, Kafka no longer maps controller listeners to PLAINTEXT itself
    ({"listeners": "SSL://127.0.0.1:9092", "security.inter.broker.protocol": "SSL"},
     "No security protocol defined for listener CONTROLLER"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092",
      "listener.security.protocol.map": "PLAINTEXT:TLS,CONTROLLER:PLAINTEXT"},
     "listener.security.protocol.map"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092", "inter.broker.listener.name": "REPLICATION"},
     "inter.broker.listener.name must be a listener name defined in advertised.listeners"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9092", "inter.broker.listener.name": "PLAINTEXT",
      "security.inter.broker.protocol": "PLAINTEXT"},
     "Only one of inter.broker.listener.name and security.inter.broker.protocol"),
    ({"listeners": "SSL://127.0.0.1:9092", "security.inter.broker.protocol": "SSL",
      "listener.security.protocol.map": "SSL:SSL,CONTROLLER:PLAINTEXT"}, "no key store"),
])
def test_bad_listener_settings_are_refused(tmp_path: Path, props: dict[str, str],
                                           message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        _settings(tmp_path, **{k.replace(".", "_"): v for k, v in props.items()})


def test_a_controller_binds_and_registers_its_listeners_with_their_protocols(
        tmp_path: Path) -> None:
    keys = pki()
    ssl_keys = {k.replace(".", "_"): v
                for k, v in pem_files(tmp_path, keys.server, keys.ca, "server").items()}
    settings = _settings(tmp_path, listeners="CONTROLLER://127.0.0.1:9093",
                         listener_security_protocol_map="CONTROLLER:SSL", **ssl_keys)
    assert [(s.name, s.protocol, s.tls is not None)
            for s in settings.controller_listeners] == [
        ("CONTROLLER", SecurityProtocol.SSL, True)]
    assert settings.controller_tls is not None  # and its peers are reached over TLS
    request = registration_request(1, uuid.UUID(int=1),
                                   cast(RaftNode, SimpleNamespace(settings=settings)))
    assert [(e.name, int(e.security_protocol)) for e in request.listeners] == [
        ("CONTROLLER", int(SecurityProtocol.SSL))]
