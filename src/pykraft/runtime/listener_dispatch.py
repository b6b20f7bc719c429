"""One request frame in, one response frame out: the rules every listener shares, the
controller's (:class:`pykraft.runtime.dispatch.Dispatcher`) and a broker's
(:class:`pykraft.broker.dispatch.BrokerDispatcher`), apart from which APIs each serves and
how it answers them.

Kafka's rules for what cannot be served: an ApiVersions request of a version we lack gets
the KIP-511 v0 reply with UNSUPPORTED_VERSION, one Kafka's ``isValid`` refuses (or, on a
broker, one naming another cluster or node: KIP-1242) its error and no APIs; any other
API or version this listener does not serve, any frame that does not parse, and an ACL
request naming an UNKNOWN code (which Kafka's request classes cannot parse), closes the
connection (Kafka's SocketServer does the same: "api key ... which is not enabled"). A
request whose handling fails gets UNKNOWN_SERVER_ERROR in its API's response, as Kafka's
request handler answers it. A server extension's api keys (:mod:`pykraft.runtime.extension`)
go to its handlers before anything else is decoded. A broker's Fetch answer on a listener
without TLS may leave its records in the segment files (a :class:`SplicedPayload`, sent
with ``sendfile`` by :meth:`~pykraft.runtime.streams.FrameStream.write_frame`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from types import MappingProxyType

from pykraft.config.authorizer import authorizer_config
from pykraft.errors import (
    MalformedMessageError,
    ProtocolError,
    UnsupportedVersionError,
)
from pykraft.image.loader import cyclic_gc_paused
from pykraft.messages.kafka.api_versions_request import ApiVersionsRequest
from pykraft.messages.splice import SplicedPayload, joined
from pykraft.protocol.acl_requests import refused_acl_request
from pykraft.protocol.api_versions import (
    ApiVersionsResponse,
    api_versions_error,
    encode_unsupported_version_reply,
    refused_api_versions,
)
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.codec import RequestFrame, decode_request, encode_response
from pykraft.protocol.cursor import Reader
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import read_request_prefix
from pykraft.runtime.codec_thread import (
    SERVING_LARGE,
    off_loop,
    off_loop_above,
    off_loop_if_large,
)
from pykraft.runtime.error_answer import error_answer
from pykraft.runtime.extension import RequestHandler, checked_handlers
from pykraft.runtime.node import RaftNode
from pykraft.runtime.request_metrics import note_response
from pykraft.runtime.sasl_authenticator import SASL_APIS, sasl_refusal
from pykraft.security.api_rules import AuthorizerCache
from pykraft.security.session import Session

log = logging.getLogger("pykraft.dispatch")

NO_HANDLERS: Mapping[int, RequestHandler] = MappingProxyType({})


def with_throttle(response: object, throttle_ms: int) -> object:
    """``response`` with ``throttle_time_ms`` raised to ``throttle_ms`` (Kafka's
    ``maybeSetThrottleTimeMs``: the larger throttle stays); as it is without that field."""
    current = getattr(response, "throttle_time_ms", None)
    if current is None or current >= throttle_ms or not dataclasses.is_dataclass(response):
        return response
    return dataclasses.replace(response, throttle_time_ms=throttle_ms)  # type: ignore[type-var]


class CloseConnection(Exception):  # noqa: N818 - a control-flow signal, not an error
    """The request cannot be answered: the connection is closed, as Kafka does."""


def _decode_large(frame: bytes) -> RequestFrame:
    """:func:`decode_request` with Python's cyclic collector paused: a large request decodes
    to hundreds of thousands of objects without cycles, and each full collection their
    allocation triggered walked the whole heap holding the GIL (a 1 MiB SyncGroup beside a
    heap of a million objects: 0.6 s of the loop's thread, 0.1 s paused)."""
    with cyclic_gc_paused():
        return decode_request(frame)


class ListenerDispatcher(ABC):
    """Turns one request frame into one response frame on a listener that serves
    ``served`` (an api key outside it closes the connection) and answers them with
    :meth:`_route`; ``handlers`` serve a server extension's api keys."""

    listener: Listener

    def __init__(self, node: RaftNode, served: frozenset[int],
                 handlers: Mapping[int, RequestHandler] = NO_HANDLERS) -> None:
        self._node = node
        self._settings = node.settings
        self._handlers = checked_handlers(handlers)
        self._served = served

    def connection_closed(self, session: Session) -> None:  # noqa: B027 - an optional hook
        """``session``'s connection closed (the controller listener watches brokers' heartbeat
        connections; nothing else needs to know)."""

    async def handle(self, frame: bytes, session: Session) -> bytes:
        """:meth:`respond`'s answer in one buffer (records left in files read)."""
        return joined(await self.respond(frame, session))

    async def respond(self, frame: bytes, session: Session) -> bytes | SplicedPayload:
        """The encoded response to a request that came on ``session``'s connection; raises
        :class:`CloseConnection` for what Kafka drops."""
        try:
            api_key = read_request_prefix(Reader(frame))[0]
        except MalformedMessageError as exc:
            raise CloseConnection(f"unreadable request header: {exc}") from None
        handler = self._handlers.get(api_key)
        if handler is not None:
            try:
                return await handler(frame)
            except ProtocolError as exc:
                raise CloseConnection(f"malformed request for api key {api_key}: {exc}") from None
        large = len(frame) > off_loop_above(api_key)
        SERVING_LARGE.set(large)  # this connection's task: one request at a time
        try:
            request = await off_loop(_decode_large, frame) if large else (
                decode_request(frame))
        except UnsupportedVersionError as exc:
            if exc.api_key == ApiKey.API_VERSIONS and exc.correlation_id is not None:
                return encode_unsupported_version_reply(exc.correlation_id, self.listener)
            raise CloseConnection(str(exc)) from None
        except ProtocolError as exc:
            raise CloseConnection(f"malformed request: {exc}") from None
        if api_key not in self._served:
            raise CloseConnection(f"api key {api_key} is not enabled on this listener")
        if api_key == ApiKey.API_VERSIONS:
            return self._encode(request, self._api_versions_answer(request))
        if api_key in SASL_APIS:  # authenticated already, or a listener without SASL
            return self._encode(request, sasl_refusal(request))
        refusal = await off_loop_if_large(refused_acl_request, api_key, request.body)
        if refusal is not None:
            raise CloseConnection(refusal)  # Kafka cannot parse it, on either listener
        try:
            return await self._route(request, session)
        except CloseConnection:
            raise
        except Exception:  # Kafka's handleError: answer in the API's response, stay open
            log.exception("request_failed", extra={"fields": {
                "api_key": api_key, "api_version": request.api_version,
                "peer": session.client_address}})
            return self._failed(request)

    def _failed(self, request: RequestFrame) -> bytes:
        """UNKNOWN_SERVER_ERROR in the API's own response, as Kafka answers a request whose
        handler threw (its message is null for that error)."""
        answer = error_answer(request.api_key, request.body, ErrorCode.UNKNOWN_SERVER_ERROR)
        try:
            return self._encode(request, answer)
        except Exception as exc:  # nothing is left to answer with
            raise CloseConnection(f"cannot encode an error response: {exc}") from None

    @functools.cached_property
    def _authorizers(self) -> AuthorizerCache:
        """The configured authorizer's decisions (read on the first request)."""
        return AuthorizerCache(authorizer_config(self._settings.controller.properties))

    @abstractmethod
    async def _route(self, request: RequestFrame, session: Session) -> bytes | SplicedPayload:
        """The encoded answer to a decoded request of an API this listener serves (neither
        ApiVersions nor SASL's, which :meth:`respond` answers)."""

    #: Whether ApiVersions v5's cluster and node must be this node's (KIP-1242): Kafka's
    #: brokers check them, its controllers do not.
    checks_target = False

    def _api_versions_answer(self, request: RequestFrame) -> ApiVersionsResponse:
        target = ((self._settings.cluster_id, self._settings.node_id) if self.checks_target
                  else None)
        refusal = refused_api_versions(request.body_as(ApiVersionsRequest), request.api_version,
                                       target)
        if refusal is not None:
            return api_versions_error(refusal)
        return self._api_versions(request.api_version)

    @abstractmethod
    def _api_versions(self, version: int) -> ApiVersionsResponse:
        """The ApiVersions answer: the APIs this listener serves, at their versions."""

    async def _encode_large(self, request: RequestFrame, answer: Callable[[], object]) -> bytes:
        """``_encode(request, answer())`` for an answer that grows with its request: on the
        codec thread when the request was large (:func:`off_loop_if_large`); ``answer``
        must be pure (it may run there). The request quota decides on the loop first."""
        throttle_ms = self._request_throttle(request)
        return await off_loop_if_large(
            lambda: self._encoded(request, answer(), throttle_ms))

    def _encode(self, request: RequestFrame, response: object) -> bytes:
        return self._encoded(request, response, self._request_throttle(request))

    def _encoded(self, request: RequestFrame, response: object, throttle_ms: int) -> bytes:
        """The response frame, with ``throttle_time_ms`` at least ``throttle_ms``."""
        if throttle_ms > 0:
            response = with_throttle(response, throttle_ms)
        note_response(response)  # its error codes go to the request metrics
        return encode_response(request.header.correlation_id, request.api_key,
                               request.api_version, response)

    def _request_throttle(self, request: RequestFrame) -> int:
        """The request quota's throttle time for ``request``, its answer being ready (a
        broker's client listeners have one: :mod:`pykraft.broker.client_quotas`)."""
        return 0
