"""The migrating controller's ZooKeeper session: its settings, read with Kafka's names and
defaults (migration-plan §1), and kazoo's answers and exceptions as the ``ZkClient`` results
and errors, on a fake kazoo. The session against a real ZooKeeper:
``tests/migration_e2e/test_zk_session_live.py``."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    NoAuthError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.retry import KazooRetry

from pykraft.config.server import ServerConfig
from pykraft.errors import ConfigError, PyKraftError
from pykraft.migration.zk_ops import (
    CheckOp,
    CreateOp,
    DeleteOp,
    SetDataOp,
    ZkError,
    ZkOpResult,
    ZkUnavailableError,
)
from pykraft.migration.zk_tree import ZkRead
from pykraft.runtime.settings import ZkClientSettings, split_chroot
from pykraft.runtime.zk_session import RECONNECT_MAX_DELAY_S, ZkRequestError, ZkSession


def _settings(properties: dict[str, str]) -> ZkClientSettings:
    return ZkClientSettings.of(ServerConfig(properties))


def test_kafkas_defaults() -> None:
    settings = _settings({"zookeeper.connect": "127.0.0.1:2181"})
    assert settings == ZkClientSettings("127.0.0.1:2181", 18000, 18000, 10, set_acl=False)
    assert (settings.hosts, settings.chroot) == ("127.0.0.1:2181", None)


def test_the_connection_timeout_defaults_to_the_session_timeout() -> None:
    settings = _settings({
        "zookeeper.connect": "a:1,b:2/kafka/one", "zookeeper.session.timeout.ms": "6000",
        "zookeeper.max.in.flight.requests": "3"})
    assert (settings.session_timeout_ms, settings.connection_timeout_ms,
            settings.max_in_flight_requests) == (6000, 6000, 3)
    assert (settings.hosts, settings.chroot) == ("a:1,b:2", "/kafka/one")
    explicit = _settings({
        "zookeeper.connect": "a:1", "zookeeper.connection.timeout.ms": "2500"})
    assert explicit.connection_timeout_ms == 2500


@pytest.mark.parametrize(("connect", "hosts", "chroot"), [
    ("h:1", "h:1", None), ("h:1/", "h:1", None), ("h:1,i:2/k", "h:1,i:2", "/k")])
def test_chroot(connect: str, hosts: str, chroot: str | None) -> None:
    assert split_chroot(connect) == (hosts, chroot)


@pytest.mark.parametrize(("properties", "message"), [
    ({}, "zookeeper.connect"),
    ({"zookeeper.connect": "h:1,,i:2"}, "host:port"),
    ({"zookeeper.connect": "/chroot"}, "host:port"),
    ({"zookeeper.connect": "h:1/a//b"}, "not a ZooKeeper path"),
    ({"zookeeper.connect": "h:1/a/"}, "not a ZooKeeper path"),
    ({"zookeeper.connect": "h:1", "zookeeper.session.timeout.ms": "soon"},
     "zookeeper.session.timeout.ms: expected an integer"),
    ({"zookeeper.connect": "h:1", "zookeeper.max.in.flight.requests": "0"},
     "zookeeper.max.in.flight.requests"),
])
def test_bad_settings_are_refused_naming_the_key(properties: dict[str, str],
                                                  message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _settings(properties)


class Pending:
    """A kazoo async result, already settled."""

    def __init__(self, value: object) -> None:
        self.value = value

    def get(self, timeout: float) -> object:
        del timeout
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value


class FakeKazoo:
    """What ZkSession uses of KazooClient, answering from ``answers`` by method."""

    answers: dict[str, object] = {}
    started: list[str] = []
    connected = True

    def __init__(self, hosts: str, timeout: float, connection_retry: KazooRetry) -> None:
        self.hosts, self.timeout = hosts, timeout
        self.connection_retry = connection_retry
        self.ops: list[str] = []

    def add_listener(self, listener: Callable[[str], bool]) -> None:
        self.listener = listener

    def start(self, timeout: float) -> None:
        if "start" in self.answers:
            raise KazooTimeoutError("Connection time-out")
        self.started.append(self.hosts)

    def stop(self) -> None: ...

    def close(self) -> None: ...

    def get_async(self, path: str) -> Pending:
        return Pending(self.answers["get"])

    def get_children_async(self, path: str) -> Pending:
        return Pending(self.answers["children"])

    def ensure_path_async(self, path: str) -> Pending:
        return Pending(True)

    def transaction(self) -> FakeKazoo:
        return self

    def __getattr__(self, op: str) -> object:  # create / set_data / delete / check
        return lambda *args, **kwargs: self.ops.append(op)

    def commit_async(self) -> Pending:
        return Pending(self.answers["multi"])


def fake_session(**answers: object) -> ZkSession:
    FakeKazoo.answers = answers
    FakeKazoo.started = []
    made = ZkSession(ZkClientSettings("h:1/chroot", session_timeout_ms=6000),
                     client_factory=FakeKazoo)
    made.start()
    return made


def test_kazoos_answers_become_zk_results() -> None:
    stat = ZnodeStat(0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0)
    session = fake_session(get=(b"x", stat), children=["b", "a"],
                           multi=["/p", stat, True, True])
    assert FakeKazoo.started == ["h:1", "h:1/chroot"]  # the chroot is made first
    assert session.get("/p") == ZkRead(b"x", 7)
    assert session.children("/") == ["b", "a"]
    assert session.multi([CreateOp("/p", b""), SetDataOp("/p", b"y", 6), DeleteOp("/q"),
                          CheckOp("/r", 1)]) == [
        ZkOpResult(ZkError.OK, "/p", 0), ZkOpResult(ZkError.OK, "/p", 7),
        ZkOpResult(ZkError.OK, "/q"), ZkOpResult(ZkError.OK, "/r")]
    failed = fake_session(multi=[RolledBackError(), BadVersionError(), RuntimeInconsistency()])
    assert [r.error for r in failed.multi([CheckOp("/a", 1), CheckOp("/b", 2),
                                           DeleteOp("/c")])] == [
        ZkError.ROLLED_BACK, ZkError.BAD_VERSION, ZkError.ROLLED_BACK]


@pytest.mark.parametrize("error", [ConnectionLoss(), SessionExpiredError(),
                                   ConnectionClosedError(), KazooTimeoutError()])
def test_a_lost_zookeeper_is_unavailable(error: Exception) -> None:
    session = fake_session(get=error, multi=error)
    with pytest.raises(ZkUnavailableError):
        session.get("/p")
    with pytest.raises(ZkUnavailableError):
        session.multi([CheckOp("/p", 0)])


def test_nothing_is_sent_while_disconnected() -> None:
    """kazoo queues a request made while it reconnects and sends it once connected, after
    the caller gave up on it; the session refuses it at once instead."""
    session = fake_session(multi=[True])
    client = session._client
    assert isinstance(client, FakeKazoo)
    client.connected = False
    with pytest.raises(ZkUnavailableError, match="not connected"):
        session.multi([CheckOp("/p", 0)])
    assert client.ops == []


def test_other_refusals_are_request_errors() -> None:
    session = fake_session(get=NoNodeError(), children=NoAuthError())
    assert session.get("/p") is None
    with pytest.raises(ZkRequestError, match="NOAUTH") as refused:
        session.children("/p")
    assert refused.value.error is ZkError.NO_AUTH


def test_reconnect_attempts_stay_at_most_a_second_apart() -> None:
    """ZooKeeper's Java client pauses below a second between attempts; kazoo's default
    backoff reaches an hour, past the session timeout of a server back from an outage."""
    session = fake_session()
    client = session._client
    assert isinstance(client, FakeKazoo)
    retry = client.connection_retry
    assert (retry.max_tries, retry.max_delay) == (-1, RECONNECT_MAX_DELAY_S) and \
        RECONNECT_MAX_DELAY_S <= 1.0


def test_each_connection_calls_on_connected() -> None:
    """A reconnection (a new session after an expiry too) tells the caller at once, so what
    waited for ZooKeeper is retried then."""
    FakeKazoo.answers = {}
    FakeKazoo.started = []
    connected: list[str] = []
    session = ZkSession(ZkClientSettings("h:1"), client_factory=FakeKazoo,
                        on_connected=lambda: connected.append("up"))
    session.start()
    client = session._client
    assert isinstance(client, FakeKazoo)
    for state in (KazooState.SUSPENDED, KazooState.CONNECTED, KazooState.LOST,
                  KazooState.CONNECTED):
        assert client.listener(state) is False
    assert connected == ["up", "up"]


def test_start_and_close() -> None:
    with pytest.raises(ZkUnavailableError, match="within 18000 ms"):
        FakeKazoo.answers = {"start": True}
        ZkSession(ZkClientSettings("h:1"), client_factory=FakeKazoo).start()
    session = fake_session()
    with pytest.raises(PyKraftError, match="already started"):
        session.start()
    session.close()
    session.close()
    with pytest.raises(ZkUnavailableError, match="not started"):
        session.get("/p")
