"""Kafka's connection limits, sans-I/O: per side, per listener, per address, the exempt
inter-broker listener, the open-file budget, idle expiry, and the keys that set them."""

from __future__ import annotations

import pytest

from pykraft.config.server import ServerConfig
from pykraft.errors import ConfigError
from pykraft.runtime.connection_quotas import (
    ConnectionLimits,
    ConnectionQuotas,
    CreationRate,
    IdleExpiry,
    open_files_reserve,
)
from pykraft.runtime.settings import (
    connection_limits,
    dynamic_connection_keys,
    dynamic_connection_limits,
)

CONTROLLER = frozenset({"CONTROLLER"})


def _fill(quotas: ConnectionQuotas, listener: str, count: int, ip: str = "10.0.0.1") -> None:
    for _ in range(count):
        assert quotas.blocked(listener) is None
        assert quotas.admit(listener, ip) is None


def test_max_connections_blocks_each_side_on_its_own() -> None:
    quotas = ConnectionQuotas(ConnectionLimits(max_connections=3,
                                               controller_listeners=CONTROLLER))
    _fill(quotas, "PLAINTEXT", 2)
    _fill(quotas, "EXTERNAL", 1)
    assert quotas.blocked("PLAINTEXT") == quotas.blocked("EXTERNAL") == "max.connections"
    _fill(quotas, "CONTROLLER", 3)  # the controller's side counts apart, as in Kafka
    assert quotas.blocked("CONTROLLER") == "max.connections"
    quotas.release("EXTERNAL", "10.0.0.1")
    assert quotas.blocked("PLAINTEXT") is None
    assert quotas.total == 5


def test_a_listener_limit_blocks_that_listener_only() -> None:
    quotas = ConnectionQuotas(ConnectionLimits(listener_max={"EXTERNAL": 2}))
    _fill(quotas, "EXTERNAL", 2)
    assert quotas.blocked("EXTERNAL") == "listener.name.external.max.connections"
    assert quotas.blocked("PLAINTEXT") is None


def test_the_inter_broker_listener_passes_max_connections_and_evicts() -> None:
    quotas = ConnectionQuotas(ConnectionLimits(max_connections=2, protected_listener="REPL"))
    _fill(quotas, "CLIENTS", 2)
    assert quotas.blocked("CLIENTS") == "max.connections"
    assert quotas.blocked("REPL") is None
    assert quotas.admit("REPL", "10.0.0.9") is None
    assert quotas.over_side_limit("REPL")  # Kafka closes a client connection for it
    quotas.release("CLIENTS", "10.0.0.1")
    assert not quotas.over_side_limit("REPL")


def test_per_ip_limit_and_overrides_refuse_at_once() -> None:
    quotas = ConnectionQuotas(ConnectionLimits(per_ip=2, per_ip_overrides={"10.0.0.2": 0,
                                                                           "10.0.0.3": 3}))
    _fill(quotas, "PLAINTEXT", 2)
    assert quotas.admit("PLAINTEXT", "10.0.0.1") == (
        "Too many connections from /10.0.0.1 (maximum = 2)")
    assert quotas.admit("PLAINTEXT", "10.0.0.2") is not None
    _fill(quotas, "PLAINTEXT", 3, ip="10.0.0.3")
    assert quotas.admit("PLAINTEXT", "10.0.0.3") is not None
    assert quotas.total == 5  # a refused connection is not counted
    quotas.release("PLAINTEXT", "10.0.0.1")
    assert quotas.admit("PLAINTEXT", "10.0.0.1") is None


def test_the_open_file_limit_keeps_a_reserve_and_internal_listeners_get_half_of_it() -> None:
    open_files = 256
    reserve = open_files_reserve(open_files)
    assert reserve == 64
    quotas = ConnectionQuotas(ConnectionLimits(controller_listeners=CONTROLLER,
                                               protected_listener="REPL"), open_files)
    _fill(quotas, "CLIENTS", open_files - reserve)
    assert quotas.blocked("CLIENTS") == "open files (RLIMIT_NOFILE)"
    _fill(quotas, "CONTROLLER", reserve // 4)
    _fill(quotas, "REPL", reserve // 4)
    assert quotas.blocked("CONTROLLER") == quotas.blocked("REPL") == (
        "open files (RLIMIT_NOFILE)")
    assert quotas.total == open_files - reserve // 2
    assert open_files_reserve(1 << 20) == (1 << 20) // 8


def test_creation_rate_throttles_each_side_and_listener_but_not_inter_broker() -> None:
    # 2 windows of 1 s: a rate spans 1 s at least (Kafka's Rate), the burst is 1 s worth
    limits = ConnectionLimits(creation_rate=2, listener_creation_rate={"EXTERNAL": 1},
                              protected_listener="REPL", controller_listeners=CONTROLLER,
                              quota_window_num=2)
    rate = CreationRate(limits)
    assert [rate.accepted("CLIENTS", 0) for _ in range(3)] == [0, 0, 500]  # (3 - 2) / 2 s
    assert rate.accepted("REPL", 0) == 0  # exempt from the side's rate
    assert rate.accepted("CONTROLLER", 0) == 0  # the other side has its own
    assert rate.accepted("EXTERNAL", 0) == 1000  # the side's 4 a second: capped at a window
    rate = CreationRate(ConnectionLimits(listener_creation_rate={"EXTERNAL": 1},
                                         quota_window_num=2))
    assert rate.accepted("EXTERNAL", 0) == 0
    # 2 over 1.1 s (the oldest window's 100 ms and one whole window): (2 / 1.1 - 1) * 1.1 s
    assert rate.accepted("EXTERNAL", 100) == 900
    rate.taken_back("EXTERNAL", 100)  # its address was over its own rate after all
    assert rate.accepted("EXTERNAL", 100) == 900  # not 1900 (capped at 1000)
    assert rate.accepted("CLIENTS", 100) == 0


def test_creation_rate_passes_kafkas_burst_then_throttles() -> None:
    rate = CreationRate(ConnectionLimits(creation_rate=10))  # 11 windows: 10 s at the rate
    assert {rate.accepted("CLIENTS", 0) for _ in range(100)} == {0}
    assert rate.accepted("CLIENTS", 0) == 100  # 10.1 a second: (0.1 / 10) * 10 s


def test_a_changed_creation_rate_holds_for_the_rate_kept_so_far() -> None:
    rate = CreationRate(ConnectionLimits(quota_window_num=2))
    assert {rate.accepted("CLIENTS", 0) for _ in range(5)} == {0}  # not limited
    rate.limits = ConnectionLimits(creation_rate=2, quota_window_num=2)
    assert rate.accepted("CLIENTS", 0) == 1000  # 6 a second already
    rate.limits = ConnectionLimits(creation_rate=0, quota_window_num=2)
    assert rate.accepted("CLIENTS", 5000) == 1000  # none allowed: a window each


def test_idle_expiry_closes_the_oldest_first_and_activity_keeps_one_open() -> None:
    idle: IdleExpiry[str] = IdleExpiry(max_idle_ms=100)
    idle.touch("a", 0)
    idle.touch("b", 10)
    idle.touch("c", 20)
    assert idle.next_check_ms(50) == 101
    idle.touch("a", 60)
    assert idle.expired(115) == ["b"]
    assert idle.expired(200) == ["b", "c", "a"]
    idle.remove("b")
    assert idle.least_recent(lambda key: key != "c") == "a"
    assert len(idle) == 2


def _limits(**props: str) -> ConnectionLimits:
    config = ServerConfig({"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
                           "controller.listener.names": "CONTROLLER", **props})
    return connection_limits(config, None)


def test_the_keys_with_kafkas_defaults() -> None:
    limits = _limits()
    assert (limits.max_connections, limits.per_ip, limits.max_idle_ms,
            limits.failed_authentication_delay_ms) == (2**31 - 1, 2**31 - 1, 600_000, 100)
    assert limits.controller_listeners == CONTROLLER
    limits = _limits(**{"max.connections": "20", "listener.name.plaintext.max.connections": "5",
                        "max.connection.creation.rate": "30",
                        "listener.name.controller.max.connection.creation.rate": "4",
                        "max.connections.per.ip": "0",
                        "max.connections.per.ip.overrides": "127.0.0.2:3, localhost:7",
                        "connections.max.idle.ms": "2000",
                        "connection.failed.authentication.delay.ms": "500"})
    assert limits.max_connections == 20 and limits.listener_max == {"PLAINTEXT": 5}
    assert (limits.creation_rate, limits.listener_creation_rate) == (30, {"CONTROLLER": 4})
    assert limits.per_ip == 0 and limits.per_ip_overrides["127.0.0.2"] == 3
    assert limits.per_ip_overrides["127.0.0.1"] == 7  # localhost, resolved
    assert (limits.max_idle_ms, limits.failed_authentication_delay_ms) == (2000, 500)


@pytest.mark.parametrize(("props", "message"), [
    ({"max.connections": "-1"},
     "Invalid value -1 for configuration max.connections: Value must be at least 0"),
    ({"max.connections.per.ip": "many"},
     "Invalid value many for configuration max.connections.per.ip: Not a number of type INT"),
    ({"listener.name.controller.max.connection.creation.rate": "-1"},
     "listener.name.controller.max.connection.creation.rate: Value must be at least 0"),
    ({"listener.name.plaintext.max.connections": "-2"},
     "listener.name.plaintext.max.connections: Value must be at least 0"),
    ({"max.connections.per.ip": "0"}, "max.connections.per.ip can be set to zero only if "
                                      "max.connections.per.ip.overrides property is set"),
    ({"max.connections.per.ip.overrides": "127.0.0.1"}, "expected host:count"),
    ({"max.connections.per.ip.overrides": "no-such-host.invalid:3"},
     "max.connections.per.ip.overrides"),
    ({"connection.failed.authentication.delay.ms": "700", "connections.max.idle.ms": "700"},
     "connection.failed.authentication.delay.ms=700 should always be less than "
     "connections.max.idle.ms=700"),
])
def test_bad_values_are_refused_by_name(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        _limits(**props)


def test_dynamic_configs_change_the_limits_kafka_lets_change() -> None:
    static = {"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
              "controller.listener.names": "CONTROLLER", "max.connections": "20",
              "connections.max.idle.ms": "5000"}
    layer = {"max.connections.per.ip": "4", "listener.name.plaintext.max.connections": "7",
             "connections.max.idle.ms": "1000", "log.cleaner.threads": "2"}
    dynamic = dynamic_connection_keys(layer)
    assert dynamic == {"max.connections.per.ip": "4",
                       "listener.name.plaintext.max.connections": "7"}
    limits = dynamic_connection_limits(static, dynamic, None)
    assert (limits.max_connections, limits.per_ip, limits.listener_max) == (
        20, 4, {"PLAINTEXT": 7})
    assert limits.max_idle_ms == 5000  # read-only: the static value stays
    with pytest.raises(ConfigError, match="can be set to zero only if"):
        dynamic_connection_limits(static, {"max.connections.per.ip": "0"}, None)

