"""The migrating controller's ZooKeeper settings, read with Kafka's names and defaults
(migration-plan §1). The session itself runs against a real ZooKeeper in
``tests/migration_e2e/test_zk_session_live.py``."""

from __future__ import annotations

import pytest

from pykraft.errors import ConfigError
from pykraft.runtime.zk_session import ZkSessionSettings, split_chroot


def test_kafkas_defaults() -> None:
    settings = ZkSessionSettings.from_properties({"zookeeper.connect": "127.0.0.1:2181"})
    assert settings == ZkSessionSettings("127.0.0.1:2181", 18000, 18000, 10)
    assert (settings.hosts, settings.chroot) == ("127.0.0.1:2181", None)


def test_the_connection_timeout_defaults_to_the_session_timeout() -> None:
    settings = ZkSessionSettings.from_properties({
        "zookeeper.connect": "a:1,b:2/kafka/one", "zookeeper.session.timeout.ms": "6000",
        "zookeeper.max.in.flight.requests": "3"})
    assert (settings.session_timeout_ms, settings.connection_timeout_ms,
            settings.max_in_flight_requests) == (6000, 6000, 3)
    assert (settings.hosts, settings.chroot) == ("a:1,b:2", "/kafka/one")
    explicit = ZkSessionSettings.from_properties({
        "zookeeper.connect": "a:1", "zookeeper.connection.timeout.ms": "2500"})
    assert explicit.connection_timeout_ms == 2500


@pytest.mark.parametrize(("connect", "hosts", "chroot"), [
    ("h:1", "h:1", None), ("h:1/", "h:1", None), ("h:1,i:2/k", "h:1,i:2", "/k")])
def test_chroot(connect: str, hosts: str, chroot: str | None) -> None:
    assert split_chroot(connect) == (hosts, chroot)


@pytest.mark.parametrize(("properties", "message"), [
    ({}, "zookeeper.connect must also be set"),
    ({"zookeeper.connect": "  "}, "zookeeper.connect must also be set"),
    ({"zookeeper.connect": "h:1,,i:2"}, "host:port"),
    ({"zookeeper.connect": "/chroot"}, "host:port"),
    ({"zookeeper.connect": "h:1/a//b"}, "not a ZooKeeper path"),
    ({"zookeeper.connect": "h:1/a/"}, "not a ZooKeeper path"),
    ({"zookeeper.connect": "h:1", "zookeeper.session.timeout.ms": "soon"},
     "zookeeper.session.timeout.ms: expected an integer"),
    ({"zookeeper.connect": "h:1", "zookeeper.session.timeout.ms": "-1"}, "at least 0"),
    ({"zookeeper.connect": "h:1", "zookeeper.max.in.flight.requests": "0"}, "at least 1"),
])
def test_bad_settings_are_refused_naming_the_key(properties: dict[str, str],
                                                  message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ZkSessionSettings.from_properties(properties)
