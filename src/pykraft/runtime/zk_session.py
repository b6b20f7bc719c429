"""A migrating controller's ZooKeeper session: :class:`pykraft.migration.zk_ops.ZkClient` on
kazoo, configured with Kafka's ``zookeeper.*`` names (migration-plan §1, §5).

Kafka's controller builds its client with ``KafkaZkClient.createZkClient("KRaft Migration",
...)``: ``zookeeper.connect`` (with a chroot, created first if missing), a session of
``zookeeper.session.timeout.ms`` (18000), the first connection awaited for
``zookeeper.connection.timeout.ms`` (the session timeout when unset), at most
``zookeeper.max.in.flight.requests`` (10) requests outstanding. This module does the same
with kazoo, which runs its own threads: every call here blocks until ZooKeeper answers (or
the connection timeout passes), so the runtime calls them off its event loop (in an
executor). A lost connection or an expired session raises :class:`ZkUnavailableError`; kazoo
reconnects (with a new session after an expiry) on its own, and the caller retries later.
Its attempts are at most :data:`RECONNECT_MAX_DELAY_S` apart, as ZooKeeper's Java client
(a random pause below a second between attempts): kazoo's default backoff grows to an hour,
and a session whose server came back after a long outage would expire waiting for it.

Over TLS (``zookeeper.ssl.client.enable``) every connection kazoo opens is wrapped in the
context :mod:`pykraft.runtime.zk_tls` made from Kafka's ``zookeeper.ssl.*`` keys (kazoo's own
TLS options take only PEM files and no protocol bounds), with the ZooKeeper server's host as
written in ``zookeeper.connect`` as the name its certificate must hold. kazoo retries a failed
handshake as any failed connection, until the connection timeout: the session's error then
names the handshake's failure (an unknown CA, a wrong host name), which Kafka's client only
logs.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    RolledBackError,
    RuntimeInconsistency,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError, SequentialThreadingHandler
from kazoo.handlers.utils import create_tcp_connection
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.retry import KazooRetry

from pykraft.errors import PyKraftError
from pykraft.migration.zk_ops import (
    CheckOp,
    CreateOp,
    DeleteOp,
    SetDataOp,
    ZkError,
    ZkOp,
    ZkOpResult,
    ZkUnavailableError,
)
from pykraft.migration.zk_tree import ZkRead
from pykraft.runtime.settings import ZkClientSettings

__all__ = ["TlsHandler", "ZkRequestError", "ZkSession"]

T = TypeVar("T")

RECONNECT_MAX_DELAY_S = 1.0

#: kazoo's exception classes as ZooKeeper's result codes (a failed multi's results are these
#: exceptions' instances; ops before the failing one come back RolledBackError, ops after it
#: RuntimeInconsistency: both were not applied)
_ERRORS: tuple[tuple[type[KazooException], ZkError], ...] = (
    (NoNodeError, ZkError.NO_NODE),
    (NodeExistsError, ZkError.NODE_EXISTS),
    (BadVersionError, ZkError.BAD_VERSION),
    (NotEmptyError, ZkError.NOT_EMPTY),
    (RolledBackError, ZkError.ROLLED_BACK),
    (RuntimeInconsistency, ZkError.ROLLED_BACK),
    (NoAuthError, ZkError.NO_AUTH),
    (SessionExpiredError, ZkError.SESSION_EXPIRED),  # ConnectionClosedError too
    (ConnectionLoss, ZkError.CONNECTION_LOSS),
)
#: what means "ZooKeeper did not answer": the caller retries later
_UNAVAILABLE = (ConnectionLoss, SessionExpiredError, OperationTimeoutError, KazooTimeoutError)


class ZkRequestError(PyKraftError):
    """ZooKeeper refused a request for another reason than a missing node or a lost
    connection (``NOAUTH`` on a read, or a code the migration does not tell apart): Kafka's
    migration treats these as faults, not as retries."""

    def __init__(self, path: str, error: ZkError | None, cause: KazooException) -> None:
        super().__init__(f"ZooKeeper answered {path} with "
                         f"{error.value if error else type(cause).__name__} {cause}".rstrip())
        self.error = error


class ZkSession:
    """One ZooKeeper session for the migration; :meth:`start` before use, :meth:`close`
    at the end. Thread-safe: kazoo serialises requests on its connection thread."""

    def __init__(self, settings: ZkClientSettings,
                 client_factory: Callable[..., KazooClient] = KazooClient,
                 on_connected: Callable[[], None] = lambda: None) -> None:
        self.settings = settings
        self._factory = client_factory
        self._on_connected = on_connected
        """Called on kazoo's thread each time the session is (re)connected, a new session
        after an expiry included: the caller retries then what waited for ZooKeeper."""
        self._timeout_s = settings.connection_timeout_ms / 1000
        self._in_flight = threading.BoundedSemaphore(settings.max_in_flight_requests)
        self._client: KazooClient | None = None

    def start(self) -> None:
        """Connect (creating the chroot first if missing, as Kafka's controller does); a
        :class:`ZkUnavailableError` if no server answers within the connection timeout."""
        if self._client is not None:
            raise PyKraftError("the ZooKeeper session is already started")
        if self.settings.chroot is not None:
            root = self._connected(self.settings.hosts)
            try:
                self._bounded(root.ensure_path_async(self.settings.chroot))
            except _UNAVAILABLE as exc:
                raise ZkUnavailableError(f"could not create the chroot "
                                         f"{self.settings.chroot}: {exc}") from exc
            finally:
                _stop(root)
        self._client = self._connected(self.settings.connect)
        self._client.add_listener(self._state_changed)

    def _state_changed(self, state: str) -> bool:
        if state == KazooState.CONNECTED:
            self._on_connected()
        return False  # kazoo keeps a listener that returns False

    def _connected(self, hosts: str) -> KazooClient:
        timeout = self.settings.session_timeout_ms / 1000
        retry = KazooRetry(max_tries=-1, max_delay=RECONNECT_MAX_DELAY_S)
        # a handler per client: kazoo starts and stops its client's handler with the client
        tls = None if self.settings.tls is None else TlsHandler(self.settings.tls)
        client = (self._factory(hosts=hosts, timeout=timeout, connection_retry=retry)
                  if tls is None else
                  self._factory(hosts=hosts, timeout=timeout, connection_retry=retry,
                                handler=tls, use_ssl=True))
        try:
            client.start(timeout=self._timeout_s)
        except KazooTimeoutError:
            failure = None if tls is None else tls.failure
            raise ZkUnavailableError(
                f"no ZooKeeper server of {hosts} answered within "
                f"{self.settings.connection_timeout_ms} ms"
                f"{f' (the last TLS handshake failed: {failure})' if failure else ''}"
            ) from None
        return client

    def close(self) -> None:
        """End the session (its ephemeral nodes go at once); idempotent."""
        client, self._client = self._client, None
        if client is not None:
            _stop(client)

    def __enter__(self) -> ZkSession:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- ZkClient --------------------------------------------------------------------------

    def get(self, path: str) -> ZkRead | None:
        try:
            data, stat = self._call(lambda client: client.get_async(path))
        except NoNodeError:
            return None
        except KazooException as exc:
            raise ZkRequestError(path, _error_of(exc), exc) from exc
        return ZkRead(data, stat.version)

    def children(self, path: str) -> list[str] | None:
        try:
            names: list[str] = self._call(lambda client: client.get_children_async(path))
        except NoNodeError:
            return None
        except KazooException as exc:
            raise ZkRequestError(path, _error_of(exc), exc) from exc
        return list(names)

    def multi(self, ops: Sequence[ZkOp]) -> list[ZkOpResult]:
        def commit(client: KazooClient) -> Any:
            transaction = client.transaction()
            for op in ops:
                _add(transaction, op)
            return transaction.commit_async()
        results: list[object] = self._call(commit)
        if len(results) != len(ops):
            raise ZkUnavailableError(f"ZooKeeper answered a multi of {len(ops)} operations "
                                     f"with {len(results)} results")
        return [_result(op, result) for op, result in zip(ops, results, strict=True)]

    def _call(self, request: Callable[[KazooClient], Any]) -> Any:
        """One request through kazoo, waited for at most the connection timeout; ZooKeeper
        unreachable (or the session gone) is :class:`ZkUnavailableError`."""
        client = self._client
        if client is None:
            raise ZkUnavailableError("the ZooKeeper session is not started")
        if not client.connected:
            # kazoo would queue it and send it once reconnected, after the caller gave up on
            # it: a fenced write made behind the driver's back moves /migration's zkVersion
            # and fences every write after it (ZooKeeper's Java client fails it instead)
            raise ZkUnavailableError("ZooKeeper is not connected")
        with self._in_flight:
            try:
                return self._bounded(request(client))
            except _UNAVAILABLE as exc:
                raise ZkUnavailableError(
                    f"ZooKeeper unavailable: {type(exc).__name__} {exc}") from exc

    def _bounded(self, pending: Any) -> Any:
        return pending.get(timeout=self._timeout_s)


class TlsHandler(SequentialThreadingHandler):  # type: ignore[misc]  # kazoo is untyped
    """kazoo's threading handler, its connections wrapped in ``context``; the last
    handshake's failure is kept for the session's error. Its ``create_connection`` takes
    kazoo's arguments and leaves out kazoo's own TLS options (``use_ssl`` is passed only so
    kazoo's log says TLS)."""

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__()
        self.context = context
        self.failure: str | None = None

    def create_connection(self, address: tuple[str, int], hostname: str | None = None,
                          timeout: float | None = None, **_kazoo_tls: object
                          ) -> ssl.SSLSocket:
        sock = create_tcp_connection(socket, address, timeout=timeout)
        try:
            wrapped = self.context.wrap_socket(sock, server_hostname=hostname or address[0])
        except (ssl.SSLError, ssl.CertificateError) as exc:
            sock.close()
            self.failure = str(getattr(exc, "verify_message", None) or exc)
            raise
        except OSError:
            sock.close()
            raise
        self.failure = None
        return wrapped


def _stop(client: KazooClient) -> None:
    client.stop()
    client.close()


def _add(transaction: Any, op: ZkOp) -> None:
    match op:
        case CreateOp(path, data, sequential, ephemeral):
            transaction.create(path, data, ephemeral=ephemeral, sequence=sequential)
        case SetDataOp(path, data, version):
            transaction.set_data(path, data, version)
        case DeleteOp(path, version):
            transaction.delete(path, version)
        case CheckOp(path, version):
            transaction.check(path, version)


def _error_of(exc: BaseException) -> ZkError | None:
    return next((error for cls, error in _ERRORS if isinstance(exc, cls)), None)


def _result(op: ZkOp, result: object) -> ZkOpResult:
    """kazoo's result of one operation of a multi: the created path, a set's stat, True,
    or an exception instance (the whole multi failed)."""
    if isinstance(result, BaseException):
        error = _error_of(result)
        if error is not None:
            return ZkOpResult(error)
        if isinstance(result, KazooException):
            raise ZkRequestError(op.path, None, result)
        raise result
    if isinstance(op, CreateOp):
        return ZkOpResult(ZkError.OK, path=str(result), version=0)
    if isinstance(op, SetDataOp) and isinstance(result, ZnodeStat):
        return ZkOpResult(ZkError.OK, path=op.path, version=result.version)
    return ZkOpResult(ZkError.OK, path=op.path)
