"""The client side of SASL, as Kafka's SaslClientAuthenticator runs it on an opened connection.

After ApiVersions the client sends SaslHandshake v1 with its mechanism and then its tokens in
SaslAuthenticate: PLAIN's one token, or SCRAM-SHA-256/512's two messages (scramp computes
them and checks the server's signature). When the broker names a session lifetime
(``connections.max.reauth.ms``), the connection re-authenticates at a random point between
85 and 95 percent of it, as Kafka's clients do: :class:`SaslSession` says when, and the
connection runs the same exchange again before its next request. Credentials come from
Kafka's keys: ``sasl.mechanism`` and the ``username``/``password`` options of
``sasl.jaas.config`` (PlainLoginModule or ScramLoginModule), or for a node the JAAS of the
listener it connects to (``listener.name.<listener>.<mechanism>.sasl.jaas.config``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import scramp

from pykraft.errors import ConfigError, NetworkError
from pykraft.messages.kafka.sasl_authenticate_request import SaslAuthenticateRequest
from pykraft.messages.kafka.sasl_authenticate_response import SaslAuthenticateResponse
from pykraft.messages.kafka.sasl_handshake_request import SaslHandshakeRequest
from pykraft.messages.kafka.sasl_handshake_response import SaslHandshakeResponse
from pykraft.protocol.apis import ApiKey, api_spec
from pykraft.protocol.errors import ErrorCode
from pykraft.security.jaas import listener_jaas, single_login_module
from pykraft.security.plain import PLAIN, plain_client_token
from pykraft.security.sasl_listener import SCRAM_MECHANISMS

CLIENT_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)
#: The version ranges of the two SASL APIs, for a connection's ApiVersions negotiation.
SASL_RANGES: dict[int, tuple[int, int]] = {key: (spec.min_version, spec.max_version)
               for key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)
               if (spec := api_spec(key)) is not None}
_REAUTH_WINDOW = (0.85, 0.95)

#: Sends one request and returns its response (generated classes: one for every version).
Exchange = Callable[[SaslHandshakeRequest | SaslAuthenticateRequest], Awaitable[object]]


class SaslClientError(NetworkError):
    """The server refused the authentication: the connection cannot be used."""


@dataclass(frozen=True, slots=True)
class SaslCredentials:
    """What a client authenticates with."""

    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:  # never print the password
        return f"SaslCredentials({self.mechanism}, {self.username})"


def _credentials(mechanism: str, options: Mapping[str, str], key: str) -> SaslCredentials:
    if mechanism not in CLIENT_MECHANISMS:
        raise ConfigError(f"SASL mechanism {mechanism} is not supported by pykraft's clients "
                          f"({', '.join(CLIENT_MECHANISMS)})")
    username, password = options.get("username"), options.get("password")
    if username is None or password is None:
        raise ConfigError(f"{key} must set username and password for {mechanism}")
    return SaslCredentials(mechanism, username, password)


def client_credentials(props: Mapping[str, str]) -> SaslCredentials | None:
    """A tool's credentials from ``--command-config``: ``sasl.mechanism`` (GSSAPI by
    default, as Kafka's) and ``sasl.jaas.config``; None unless ``security.protocol`` is a
    SASL one."""
    if props.get("security.protocol", "PLAINTEXT").strip().upper() not in ("SASL_PLAINTEXT",
                                                                           "SASL_SSL"):
        return None
    text = props.get("sasl.jaas.config")
    if text is None:
        raise ConfigError("security.protocol is SASL but sasl.jaas.config is not set")
    module = single_login_module(text, "sasl.jaas.config")
    return _credentials(props.get("sasl.mechanism", "GSSAPI").strip(), module.options,
                        "sasl.jaas.config")


def node_credentials(props: Mapping[str, str], listener: str, mechanism_key: str
                     ) -> SaslCredentials:
    """A node's credentials towards ``listener`` (a SASL one): the mechanism named by
    ``mechanism_key`` (``sasl.mechanism.controller.protocol`` or
    ``sasl.mechanism.inter.broker.protocol``, GSSAPI by default) and the username and
    password of that listener's JAAS for it."""
    mechanism = props.get(mechanism_key, "GSSAPI")
    module = listener_jaas(props, listener, mechanism)
    if module is None:
        raise ConfigError(f"{mechanism_key}={mechanism} but listener {listener} has no "
                          f"listener.name.{listener.lower()}.{mechanism.lower()}."
                          "sasl.jaas.config")
    return _credentials(mechanism, module.options,
                        f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config")


async def _token(exchange: Exchange, token: bytes) -> tuple[bytes, int]:
    response = await exchange(SaslAuthenticateRequest(auth_bytes=token))
    assert isinstance(response, SaslAuthenticateResponse)
    if response.error_code != ErrorCode.NONE:
        raise SaslClientError(response.error_message or ErrorCode(response.error_code).name)
    return response.auth_bytes, response.session_lifetime_ms


async def authenticate(exchange: Exchange, credentials: SaslCredentials) -> int:
    """Run one (re-)authentication; returns the session lifetime the server gave (0: none).
    Raises :class:`SaslClientError` when the server refuses."""
    mechanism = credentials.mechanism
    handshake = await exchange(SaslHandshakeRequest(mechanism=mechanism))
    assert isinstance(handshake, SaslHandshakeResponse)
    if handshake.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        raise SaslClientError(f"Client SASL mechanism '{mechanism}' not enabled in the server, "
                              f"enabled mechanisms are {list(handshake.mechanisms)}")
    if handshake.error_code != ErrorCode.NONE:
        raise SaslClientError(f"Unexpected handshake request with client mechanism {mechanism}, "
                              f"enabled mechanisms are {list(handshake.mechanisms)}")
    if mechanism == PLAIN:
        _, lifetime_ms = await _token(
            exchange, plain_client_token(credentials.username, credentials.password))
        return lifetime_ms
    client = scramp.ScramClient([mechanism], credentials.username, credentials.password)
    server_first, _ = await _token(exchange, client.get_client_first().encode())
    try:
        client.set_server_first(server_first.decode())
        server_final, lifetime_ms = await _token(exchange, client.get_client_final().encode())
        client.set_server_final(server_final.decode())
    except (scramp.ScramException, UnicodeDecodeError) as exc:
        raise SaslClientError(f"{mechanism} exchange failed: {exc}") from None
    return lifetime_ms


def monotonic_ms() -> int:
    """A clock for lifetimes: milliseconds that never go back."""
    return time.monotonic_ns() // 1_000_000


class SaslSession:
    """One authenticated connection's credentials and when it must re-authenticate."""

    def __init__(self, credentials: SaslCredentials,
                 clock: Callable[[], int] = monotonic_ms) -> None:
        self.credentials = credentials
        self._clock = clock
        self._reauth_at_ms: int | None = None

    async def authenticate(self, exchange: Exchange) -> None:
        """(Re-)authenticate, then schedule the next re-authentication if the server gave
        the session a lifetime."""
        started = self._clock()
        lifetime_ms = await authenticate(exchange, self.credentials)
        self._reauth_at_ms = None if lifetime_ms <= 0 else (
            started + int(lifetime_ms * random.uniform(*_REAUTH_WINDOW)))

    def due(self) -> bool:
        """Whether the next request must wait for a re-authentication."""
        return self._reauth_at_ms is not None and self._clock() >= self._reauth_at_ms
