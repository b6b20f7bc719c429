"""The client side of SASL against the listener's state machine, in memory, and the keys
clients take their credentials from."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from sasl_fixtures import BASE, SCRAM, listener

from pykraft.errors import ConfigError
from pykraft.protocol.apis import api_spec
from pykraft.protocol.codec import api_key_of, decode_response, encode_request
from pykraft.protocol.header import RequestHeader
from pykraft.runtime.sasl_authenticator import SaslAuthenticator
from pykraft.runtime.sasl_client import (
    SaslClientError,
    SaslCredentials,
    SaslSession,
    authenticate,
    client_credentials,
    node_credentials,
)
from pykraft.security.jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE


class Wire:
    """Requests from the client encoded, fed to the authenticator, answers decoded."""

    def __init__(self, authenticator: SaslAuthenticator) -> None:
        self.authenticator = authenticator
        self.now_ms = 0
        self.sent: list[int] = []
        self._ids = itertools.count(1)

    async def exchange(self, body: Any) -> Any:
        api_key = api_key_of(body)
        spec = api_spec(api_key)
        assert spec is not None
        version = spec.max_version
        self.sent.append(api_key)
        step = self.authenticator.receive(
            encode_request(RequestHeader(api_key, version, next(self._ids), "c"), body),
            self.now_ms)
        assert step.reply is not None, step
        return decode_response(api_key, version, step.reply).body


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.mark.parametrize("mechanism", ["PLAIN", SCRAM])
def test_the_client_authenticates(mechanism: str) -> None:
    wire = Wire(SaslAuthenticator(listener(), BASE))
    lifetime = run(authenticate(wire.exchange, SaslCredentials(mechanism, "alice",
                                                               "alice-secret")))
    assert lifetime == 0
    assert wire.authenticator.session.principal.name == "alice"


@pytest.mark.parametrize(("mechanism", "message"), [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    (SCRAM, "due to invalid credentials with SASL mechanism SCRAM-SHA-512"),
])
def test_a_refusal_carries_the_servers_message(mechanism: str, message: str) -> None:
    wire = Wire(SaslAuthenticator(listener(), BASE))
    with pytest.raises(SaslClientError, match=message):
        run(authenticate(wire.exchange, SaslCredentials(mechanism, "alice", "wrong")))


def test_a_mechanism_the_server_lacks() -> None:
    wire = Wire(SaslAuthenticator(listener(), BASE))
    with pytest.raises(SaslClientError, match=r"Client SASL mechanism 'SCRAM-SHA-256' not "
                       r"enabled in the server, enabled mechanisms are \['PLAIN'"):
        run(authenticate(wire.exchange, SaslCredentials("SCRAM-SHA-256", "alice", "x")))


def test_a_session_reauthenticates_within_its_lifetime() -> None:
    wire = Wire(SaslAuthenticator(listener(reauth_ms=10_000), BASE))
    session = SaslSession(SaslCredentials(SCRAM, "alice", "alice-secret"),
                          clock=lambda: wire.now_ms)
    run(session.authenticate(wire.exchange))
    wire.now_ms = 8_499
    assert not session.due()
    wire.now_ms = 9_500
    assert session.due()
    run(session.authenticate(wire.exchange))
    assert not session.due()
    assert wire.authenticator.authenticated


def test_a_session_without_lifetime_is_never_due() -> None:
    wire = Wire(SaslAuthenticator(listener(), BASE))
    session = SaslSession(SaslCredentials("PLAIN", "alice", "alice-secret"),
                          clock=lambda: wire.now_ms)
    run(session.authenticate(wire.exchange))
    wire.now_ms = 10**12
    assert not session.due()


def test_tool_credentials_from_command_config() -> None:
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
             "sasl.jaas.config": f'{SCRAM_LOGIN_MODULE} required username="alice" '
                                 'password="alice-secret";'}
    assert client_credentials(props) == SaslCredentials(SCRAM, "alice", "alice-secret")
    assert client_credentials({"security.protocol": "SSL"}) is None
    assert "alice-secret" not in repr(client_credentials(props))


@pytest.mark.parametrize(("props", "message"), [
    ({"security.protocol": "SASL_SSL"}, "sasl.jaas.config is not set"),
    ({"security.protocol": "SASL_SSL", "sasl.jaas.config": f"{PLAIN_LOGIN_MODULE} required;"},
     "GSSAPI is not supported"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": f"{PLAIN_LOGIN_MODULE} required username=a;"},
     "must set username and password"),
])
def test_tool_credential_refusals(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        client_credentials(props)


def test_node_credentials_from_the_listeners_jaas() -> None:
    props = {"sasl.mechanism.controller.protocol": "PLAIN",
             "listener.name.controller.plain.sasl.jaas.config":
                 f'{PLAIN_LOGIN_MODULE} required username="admin" password="admin-secret" '
                 'user_admin="admin-secret";'}
    assert node_credentials(props, "CONTROLLER", "sasl.mechanism.controller.protocol") == (
        SaslCredentials("PLAIN", "admin", "admin-secret"))
    with pytest.raises(ConfigError, match=r"listener\.name\.broker\.gssapi\.sasl\.jaas\.config"):
        node_credentials(props, "BROKER", "sasl.mechanism.inter.broker.protocol")
