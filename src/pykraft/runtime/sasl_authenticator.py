"""A SASL listener's connection-level authentication, as Kafka's SaslServerAuthenticator runs it.

A connection on a SASL_PLAINTEXT or SASL_SSL listener starts unauthenticated. It may ask
ApiVersions once, then SaslHandshake (17) picks an enabled mechanism: with v1 the tokens
travel in SaslAuthenticate (36) requests, with v0 as bare size-prefixed frames (the legacy
form). Anything else before authentication completes closes the connection; a failed
exchange is answered with SASL_AUTHENTICATION_FAILED, then the connection is closed. Once
authenticated, requests reach the dispatcher with the session of ``User:<authorization id>``.

With ``connections.max.reauth.ms`` (KIP-368), or a credential that expires (a delegation
token), the session has a lifetime, the shorter of the two, told to v1+ clients in
SaslAuthenticate's session_lifetime_ms: a SaslHandshake on the authenticated connection
starts a re-authentication (same mechanism and principal, at most once a second), and the
first other request after expiry closes the connection. Every (re-)authentication asks the
listener's factory for a fresh mechanism server, so a credential removed from the metadata
image is refused the next time.

:class:`SaslAuthenticator` is the state machine (frames in, steps out, time passed in);
:class:`SaslGate` writes its replies on the stream and says why it closes, for the listener
to log; it answers a failed authentication only after
``connection.failed.authentication.delay.ms`` (Kafka's KIP-306), so a client cannot try
passwords at the speed of the network, without holding up the event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pykraft.errors import ProtocolError
from pykraft.image.image import MetadataImage
from pykraft.image.scram import ScramCredential, ScramMechanism
from pykraft.messages.kafka.sasl_authenticate_request import SaslAuthenticateRequest
from pykraft.messages.kafka.sasl_authenticate_response import SaslAuthenticateResponse
from pykraft.messages.kafka.sasl_handshake_request import SaslHandshakeRequest
from pykraft.messages.kafka.sasl_handshake_response import SaslHandshakeResponse
from pykraft.protocol.apis import ApiKey, api_spec
from pykraft.protocol.codec import RequestFrame, decode_request, encode_response
from pykraft.protocol.cursor import Reader
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import read_request_prefix
from pykraft.runtime.sasl_client import monotonic_ms
from pykraft.runtime.streams import FrameStream
from pykraft.security.sasl import SaslAuthenticationError, SaslServer
from pykraft.security.sasl_listener import SaslListener
from pykraft.security.scram import scram_factories
from pykraft.security.session import KafkaPrincipal, Session

#: The APIs an authenticated connection may still send; the dispatcher refuses them with
#: ILLEGAL_SASL_STATE (Kafka's KafkaApis answers them so).
SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"
INVALID_RECEIVE_SIZE = "Failing SASL authentication due to invalid receive size"
_MIN_REAUTH_INTERVAL_MS = 1000


@dataclass(frozen=True, slots=True)
class Step:
    """What to do with one frame: send ``reply`` (if any), then hand the frame to the
    dispatcher (``forward``) or close the connection (``close``: the reason)."""

    reply: bytes | None = None
    forward: bool = False
    close: str | None = None
    #: The close is an authentication failure (logged as Kafka's "Failed authentication").
    failed: bool = False


class _State(enum.Enum):
    HANDSHAKE_OR_VERSIONS = enum.auto()
    HANDSHAKE = enum.auto()
    AUTHENTICATE = enum.auto()  # tokens in SaslAuthenticate requests (handshake v1)
    RAW_TOKENS = enum.auto()  # bare tokens (handshake v0)
    COMPLETE = enum.auto()
    REAUTH_BAD_MECHANISM = enum.auto()
    CLOSED = enum.auto()


def _fail(reason: str, reply: bytes | None = None) -> Step:
    return Step(reply=reply, close=reason, failed=True)


def wall_ms() -> int:
    """The wall clock in ms since the epoch: what a credential's expiry is measured in."""
    return int(time.time() * 1000)


class SaslAuthenticator:
    """One connection's authentication state; ``base`` is its unauthenticated session.
    Time comes in with each frame (monotonic); ``wall_clock`` only measures how long a
    credential with an expiry timestamp has left."""

    def __init__(self, listener: SaslListener, base: Session,
                 wall_clock: Callable[[], int] = wall_ms) -> None:
        self._listener = listener
        self._wall_clock = wall_clock
        self._session = base
        self._state = _State.HANDSHAKE_OR_VERSIONS
        self._server: SaslServer | None = None
        self._mechanism: str | None = None
        self._principal: KafkaPrincipal | None = None  # set once authenticated
        self._expires_at_ms: int | None = None
        self._reauth_started_ms: int | None = None
        self._reauth_from: str | None = None

    @property
    def session(self) -> Session:
        """The session requests are served with (anonymous until authenticated)."""
        return self._session

    @property
    def authenticated(self) -> bool:
        return self._principal is not None

    def receive(self, frame: bytes, now_ms: int) -> Step:
        """The step for the connection's next frame; never raises for what a client sends."""
        try:
            step = self._receive(frame, now_ms)
        except (ProtocolError, ValueError, TypeError) as exc:
            step = _fail(f"malformed request during {self._doing}: {exc}")
        if step.close is not None:
            self._state = _State.CLOSED
        return step

    @property
    def _doing(self) -> str:
        return "re-authentication" if self._reauth_from is not None else "authentication"

    def _receive(self, frame: bytes, now_ms: int) -> Step:
        state = self._state
        if state is not _State.COMPLETE and len(frame) > self._listener.max_receive_size:
            return _fail(INVALID_RECEIVE_SIZE)
        if state is _State.RAW_TOKENS:
            return self._raw_token(frame, now_ms)
        if state is _State.REAUTH_BAD_MECHANISM:
            assert self._reauth_from is not None
            return _fail(f"SASL mechanism '{self._mechanism}' requested by client is not "
                         f"supported for re-authentication of mechanism '{self._reauth_from}'")
        if state is _State.CLOSED:
            return Step(close="the connection is closing")
        api_key, api_version, _ = read_request_prefix(Reader(frame))
        if state is _State.COMPLETE:
            return self._authenticated(frame, api_key, now_ms)
        if state is _State.AUTHENTICATE:
            if api_key != ApiKey.SASL_AUTHENTICATE:  # Kafka answers ILLEGAL_SASL_STATE first
                return _fail(f"Unexpected Kafka request of type {_name(api_key)} during SASL "
                             "authentication.")
            return self._authenticate(decode_request(frame), now_ms)
        if api_key == ApiKey.API_VERSIONS:
            if state is not _State.HANDSHAKE_OR_VERSIONS:
                return Step(close="Unexpected ApiVersions request received during SASL "
                                  f"authentication state {state.name}_REQUEST")
            spec = api_spec(api_key)
            if spec is not None and spec.supports(api_version):
                self._state = _State.HANDSHAKE  # an unsupported version may be retried
            return Step(forward=True)
        if api_key != ApiKey.SASL_HANDSHAKE:
            return _fail(f"Unexpected Kafka request of type {_name(api_key)} during SASL "
                         "handshake.")
        return self._handshake(decode_request(frame))

    def _handshake(self, request: RequestFrame) -> Step:
        handshake = request.body_as(SaslHandshakeRequest)
        mechanism = handshake.mechanism
        enabled = self._listener.mechanisms
        ok = mechanism in enabled and mechanism in self._listener.factories
        body = SaslHandshakeResponse(
            error_code=ErrorCode.NONE if ok else ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            mechanisms=enabled)
        reply = _encode(request, body)
        if not ok:
            return _fail(f"Unsupported SASL mechanism {mechanism}", reply)
        self._mechanism = mechanism
        if self._reauth_from is not None and mechanism != self._reauth_from:
            self._state = _State.REAUTH_BAD_MECHANISM
            return Step(reply=reply)
        self._server = self._listener.factories[mechanism]()
        self._state = _State.AUTHENTICATE if request.api_version >= 1 else _State.RAW_TOKENS
        return Step(reply=reply)

    def _authenticate(self, request: RequestFrame, now_ms: int) -> Step:
        token = request.body_as(SaslAuthenticateRequest)
        try:
            challenge, lifetime_ms = self._evaluate(token.auth_bytes, now_ms)
        except SaslAuthenticationError as exc:
            body = _authenticate_response(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc))
            return _fail(str(exc), _encode(request, body))
        return Step(reply=_encode(request, _authenticate_response(  # no message: Kafka's
            ErrorCode.NONE, "", challenge, lifetime_ms)))  # SaslServerAuthenticator sets none

    def _raw_token(self, token: bytes, now_ms: int) -> Step:
        try:
            challenge, _ = self._evaluate(token, now_ms)
        except SaslAuthenticationError as exc:
            return _fail(str(exc))  # the legacy form has no way to say why
        return Step(reply=challenge)

    def _evaluate(self, token: bytes, now_ms: int) -> tuple[bytes, int]:
        """The server's challenge and, once complete, the session lifetime (0: none).
        Kafka's rule for messages: a mechanism's own authentication error is passed on,
        anything else becomes a generic message that reveals nothing about the user."""
        server = self._server
        assert server is not None and self._mechanism is not None
        try:
            challenge = server.evaluate(token)
            if not server.complete:
                return challenge, 0
            principal = KafkaPrincipal("User", server.authorization_id,
                                       server.token_authenticated)
        except SaslAuthenticationError:
            raise
        except Exception:
            raise SaslAuthenticationError(
                f"Authentication failed during {self._doing} due to invalid credentials with "
                f"SASL mechanism {self._mechanism}") from None
        if self._principal is not None and principal != self._principal:
            previous = self._principal
            raise SaslAuthenticationError(
                "Cannot change principals during re-authentication from "
                f"{previous.principal_type}.{previous.name}: "
                f"{principal.principal_type}.{principal.name}")
        lifetime_ms = self._lifetime_ms(server.credential_expiration_ms, now_ms)
        self._principal = principal
        self._session = dataclasses.replace(self._session, principal=principal)
        self._state = _State.COMPLETE
        self._reauth_from = None
        return challenge, lifetime_ms

    def _lifetime_ms(self, credential_expiration_ms: int | None, now_ms: int) -> int:
        """Kafka's ``calcCompletionTimesAndReturnSessionLifetimeMs``: the session lasts
        ``connections.max.reauth.ms`` for the mechanism, and no longer than the credential
        (a delegation token until its expiry; one already expired gets a session of 0 ms,
        closed at its next request). Sets when it expires; 0: never, as no bound applies."""
        reauth_ms = self._listener.reauth_ms.get(self._mechanism or "", 0)
        if credential_expiration_ms is None and reauth_ms <= 0:
            self._expires_at_ms = None
            return 0
        bounds = [] if credential_expiration_ms is None else [
            credential_expiration_ms - self._wall_clock()]
        lifetime_ms = max(0, min([*bounds, *([reauth_ms] if reauth_ms > 0 else [])]))
        # an expired credential's session is over at once: Kafka counts in ns, so the next
        # request always comes after it; in ms it may come within the same one
        self._expires_at_ms = now_ms + lifetime_ms if lifetime_ms > 0 else now_ms - 1
        return lifetime_ms

    def _authenticated(self, frame: bytes, api_key: int, now_ms: int) -> Step:
        """An authenticated connection's request: a re-authentication's handshake, a close
        after expiry, or the dispatcher's."""
        if api_key == ApiKey.SASL_HANDSHAKE and self._expires_at_ms is not None and (
                self._reauth_started_ms is None
                or now_ms - self._reauth_started_ms >= _MIN_REAUTH_INTERVAL_MS):
            self._reauth_started_ms = now_ms
            self._reauth_from = self._mechanism
            return self._handshake(decode_request(frame))
        if self._expires_at_ms is not None and now_ms > self._expires_at_ms:
            return Step(close=f"session of {self._principal} expired (connections.max."
                              "reauth.ms or its credential's expiry) without "
                              "re-authentication")
        return Step(forward=True)


def _name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)


def _encode(request: RequestFrame,
            body: SaslHandshakeResponse | SaslAuthenticateResponse) -> bytes:
    """The answer in the request's version (SaslAuthenticate v0 drops the lifetime, an
    ignorable field, as Kafka's writer does)."""
    return encode_response(request.header.correlation_id, request.api_key, request.api_version,
                           body)


def _authenticate_response(code: ErrorCode, message: str, token: bytes = b"",
                           lifetime_ms: int = 0) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=code, error_message=message, auth_bytes=token,
                                    session_lifetime_ms=lifetime_ms)


def sasl_refusal(request: RequestFrame) -> SaslHandshakeResponse | SaslAuthenticateResponse:
    """The dispatcher's answer to SaslHandshake or SaslAuthenticate on a connection that is
    already authenticated (or needs no authentication), as Kafka's KafkaApis gives it."""
    if request.api_key == ApiKey.SASL_AUTHENTICATE:
        return _authenticate_response(ErrorCode.ILLEGAL_SASL_STATE, AFTER_AUTHENTICATION)
    return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE)


def server_nonce() -> str:
    """SCRAM's server nonce: fresh random text for every exchange."""
    return secrets.token_urlsafe(24)


def with_scram(listener: SaslListener | None, image: Callable[[], MetadataImage],
               secret_key: str | None) -> SaslListener | None:
    """``listener`` with SCRAM-SHA-256/512 servers over ``image()``, the node's current
    credentials and delegation tokens (whose passwords derive from ``secret_key``; none
    without one), so each (re-)authentication sees the latest ones."""
    def tokens(token_id: str,
               mechanism: ScramMechanism) -> tuple[str, ScramCredential, int] | None:
        if secret_key is None:
            return None
        return image().delegation_tokens.credential(secret_key, token_id, mechanism)

    return None if listener is None else listener.with_factories(
        scram_factories(lambda: image().scram, server_nonce, tokens))


class SaslRefused(Exception):  # noqa: N818 - a control-flow signal
    """The authenticator closes the connection; ``failed`` when it is an authentication
    failure (Kafka logs those as "Failed authentication with /<host> (<reason>)")."""

    def __init__(self, reason: str, *, failed: bool) -> None:
        super().__init__(reason)
        self.failed = failed


class SaslGate:
    """A connection's authenticator on its stream: its replies are written here."""

    def __init__(self, listener: SaslListener, base: Session, failure_delay_s: float = 0.0,
                 clock: Callable[[], int] = monotonic_ms,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._authenticator = SaslAuthenticator(listener, base)
        self._failure_delay_s = failure_delay_s
        self._clock = clock
        self._sleep = sleep

    @property
    def session(self) -> Session:
        return self._authenticator.session

    @property
    def authenticated(self) -> bool:
        return self._authenticator.authenticated

    async def admit(self, stream: FrameStream, frame: bytes) -> bool:
        """True when the dispatcher should serve ``frame`` with :attr:`session`; False when
        it was answered here. Raises :class:`SaslRefused` when the connection must close."""
        step = self._authenticator.receive(frame, self._clock())
        if step.failed and not self.authenticated and self._failure_delay_s > 0:
            # this connection only; a failed re-authentication closes at once, as in Kafka
            await self._sleep(self._failure_delay_s)
        if step.reply is not None:
            await stream.write_frame(step.reply)
        if step.close is not None:
            raise SaslRefused(step.close, failed=step.failed)
        return step.forward
