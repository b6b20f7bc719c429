"""SASL/PLAIN as Kafka's PlainSaslServer judges a token, with Kafka's messages."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.security.plain import PlainServer, plain_client_token, plain_users
from pykraft.security.sasl import SaslAuthenticationError

USERS = {"admin": "admin-secret", "alice": "alice-secret"}


def test_a_valid_token_authenticates_its_user() -> None:
    server = PlainServer(USERS)
    assert server.evaluate(plain_client_token("alice", "alice-secret")) == b""
    assert server.complete and server.authorization_id == "alice"


def test_the_authorization_id_may_name_the_user_itself() -> None:
    server = PlainServer(USERS)
    server.evaluate(b"alice\0alice\0alice-secret")
    assert server.authorization_id == "alice"


@pytest.mark.parametrize(("token", "message"), [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0mallory\0alice-secret", "Authentication failed: Invalid username or password"),
    (b"\0\0alice-secret", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"bob\0alice\0alice-secret", "Client requested an authorization id that is different"),
    (b"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"\0alice\0alice-secret\0extra", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
])
def test_refusals(token: bytes, message: str) -> None:
    server = PlainServer(USERS)
    with pytest.raises(SaslAuthenticationError, match=message):
        server.evaluate(token)
    assert not server.complete


def test_a_completed_exchange_takes_no_more_tokens() -> None:
    server = PlainServer(USERS)
    server.evaluate(plain_client_token("admin", "admin-secret"))
    with pytest.raises(SaslAuthenticationError, match="has completed"):
        server.evaluate(plain_client_token("admin", "admin-secret"))


def test_users_come_from_user_options_only() -> None:
    assert plain_users({"username": "admin", "password": "x", "user_bob": "b"}) == {"bob": "b"}


@given(st.binary(max_size=64))
def test_arbitrary_tokens_fail_cleanly(token: bytes) -> None:
    server = PlainServer(USERS)
    try:
        server.evaluate(token)
    except SaslAuthenticationError:
        assert not server.complete
    else:
        assert server.authorization_id in USERS
