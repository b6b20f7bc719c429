"""Conformance rows for SASL's two APIs. On the broker's SASL_PLAINTEXT listener (PLAIN)
each row runs its own connection through Kafka's SaslServerAuthenticator states: the
handshake, the token, and what closes the connection (an unknown mechanism, a wrong
password, a token before the handshake). On listeners without SASL (PLAINTEXT), and on a
SASL connection once authenticated, Kafka's KafkaApis answers both APIs with
ILLEGAL_SASL_STATE."""

from __future__ import annotations

import socket
import struct
from typing import Any

from conformance.cases import BOTH, Case, Meaning, code
from conformance.harness import SASL, Run
from conformance.wire import CLIENT_ID, CORRELATION_ID, TIMEOUT_S, framed
from pykraft.messages import rpc
from pykraft.messages.kafka.sasl_authenticate_request import SaslAuthenticateRequest
from pykraft.messages.kafka.sasl_handshake_request import SaslHandshakeRequest
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import api_key_of
from pykraft.runtime.sasl_authenticator import AFTER_AUTHENTICATION
from pykraft.security.jaas import PLAIN_LOGIN_MODULE
from pykraft.security.plain import plain_client_token

SASL_LISTENER_PROPERTIES = {
    "listener.security.protocol.map":
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        f'{PLAIN_LOGIN_MODULE} required user_alice="alice-secret";',
}
GOOD = plain_client_token("alice", "alice-secret")
WRONG = "Authentication failed: Invalid username or password"
CLOSED = "CLOSED"


class Connection:
    """One connection to the SASL listener; requests (of any API: once authenticated, the
    session's) at whatever version they name."""

    def __init__(self, run: Run) -> None:
        self._sock = socket.create_connection(run.address, timeout=TIMEOUT_S)

    def ask(self, version: int, request: Any) -> Any:
        """The answer's body, or :data:`CLOSED` when the server closed instead."""
        api_key = api_key_of(request)
        header = rpc.RequestHeader(api_key, version, CORRELATION_ID, CLIENT_ID)
        self._sock.sendall(framed(rpc.encode_request(header, request)))
        payload = self._frame()
        return CLOSED if payload is None else rpc.decode_response(
            api_key, version, payload).body

    def closed(self) -> bool:
        """Whether the server closed the connection (it does so right after a refusal)."""
        return self._frame() is None

    def _frame(self) -> bytes | None:
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = self._sock.recv(65536)
            if not chunk:
                return None
            data += chunk
        return data[4:]

    def close(self) -> None:
        self._sock.close()


def handshake(run: Run, mechanism: str) -> Meaning:
    connection = Connection(run)
    try:
        body = connection.ask(run.version, SaslHandshakeRequest(mechanism=mechanism))
        if body == CLOSED:
            return CLOSED
        refused = body.error_code != 0
        return code(body.error_code), list(body.mechanisms), refused and connection.closed()
    finally:
        connection.close()


def authenticate(run: Run, token: bytes, *, first: bool = True, again: bool = False) -> Meaning:
    """SaslAuthenticate at the run's version, after a v1 handshake unless ``first`` is
    false; ``again``: a second time once authenticated."""
    connection = Connection(run)
    try:
        if first:
            connection.ask(1, SaslHandshakeRequest(mechanism="PLAIN"))
        for _ in range(2 if again else 1):
            body = connection.ask(run.version, SaslAuthenticateRequest(auth_bytes=token))
        if body == CLOSED:
            return CLOSED
        refused = body.error_code != 0 and not again
        return (code(body.error_code), body.error_message, bytes(body.auth_bytes),
                refused and connection.closed())
    finally:
        connection.close()


def as_alice(run: Run, request: Any) -> Any:
    """``request``'s answer on a connection authenticated as alice (no super user)."""
    connection = Connection(run)
    try:
        connection.ask(1, SaslHandshakeRequest(mechanism="PLAIN"))
        connection.ask(2, SaslAuthenticateRequest(auth_bytes=GOOD))
        return connection.ask(run.version, request)
    finally:
        connection.close()


def same(meaning: Any, _run: Run) -> Meaning:
    return meaning


def plaintext_handshake(run: Run) -> Any:
    return run.generated(ApiKey.SASL_HANDSHAKE, SaslHandshakeRequest(mechanism="PLAIN"))


def plaintext_authenticate(run: Run) -> Any:
    return run.generated(ApiKey.SASL_AUTHENTICATE, SaslAuthenticateRequest(auth_bytes=GOOD))


def handshake_meaning(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), list(body.mechanisms)


def authenticate_meaning(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), body.error_message, bytes(body.auth_bytes)


def fixed(meaning: Meaning) -> Any:
    return lambda _run: meaning


SASL_ROWS = [
    Case("SaslHandshake", ApiKey.SASL_HANDSHAKE, "enabled_mechanism",
         lambda run: handshake(run, "PLAIN"), same, fixed(("NONE", ["PLAIN"], False)),
         listeners=(SASL,)),
    Case("SaslHandshake", ApiKey.SASL_HANDSHAKE, "unsupported_mechanism_then_closed",
         lambda run: handshake(run, "GSSAPI"), same,
         fixed(("UNSUPPORTED_SASL_MECHANISM", ["PLAIN"], True)), listeners=(SASL,)),
    Case("SaslAuthenticate", ApiKey.SASL_AUTHENTICATE, "valid_plain",
         lambda run: authenticate(run, GOOD), same, fixed(("NONE", "", b"", False)),
         listeners=(SASL,)),
    Case("SaslAuthenticate", ApiKey.SASL_AUTHENTICATE, "wrong_password_then_closed",
         lambda run: authenticate(run, plain_client_token("alice", "nope")), same,
         fixed(("SASL_AUTHENTICATION_FAILED", WRONG, b"", True)), listeners=(SASL,)),
    Case("SaslAuthenticate", ApiKey.SASL_AUTHENTICATE, "before_the_handshake_closes",
         lambda run: authenticate(run, GOOD, first=False), same, fixed(CLOSED),
         listeners=(SASL,)),
    Case("SaslAuthenticate", ApiKey.SASL_AUTHENTICATE, "again_once_authenticated",
         lambda run: authenticate(run, GOOD, again=True), same,
         fixed(("ILLEGAL_SASL_STATE", AFTER_AUTHENTICATION, b"", False)), listeners=(SASL,)),
]

SASL_ON_PLAINTEXT = [
    Case("SaslHandshake", ApiKey.SASL_HANDSHAKE, "illegal_without_sasl", plaintext_handshake,
         handshake_meaning, fixed(("ILLEGAL_SASL_STATE", [])), listeners=BOTH),
    Case("SaslAuthenticate", ApiKey.SASL_AUTHENTICATE, "illegal_without_sasl",
         plaintext_authenticate, authenticate_meaning,
         fixed(("ILLEGAL_SASL_STATE", AFTER_AUTHENTICATION, b"")), listeners=BOTH),
]

SASL_CASES = [*SASL_ROWS, *SASL_ON_PLAINTEXT]
