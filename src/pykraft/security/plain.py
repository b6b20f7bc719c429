"""SASL/PLAIN (RFC 4616), the server as Kafka's PlainSaslServer checks it and the client token.

The one client token is ``authzid NUL authcid NUL password``; the users are the ``user_<name>``
options of the listener's PlainLoginModule. Kafka's messages are kept, since the failure goes
back to the client in SaslAuthenticate's error_message.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping

from pykraft.security.sasl import SaslAuthenticationError, SaslServer

PLAIN = "PLAIN"
_USER_PREFIX = "user_"


class PlainServer:
    """One PLAIN exchange against a fixed user table."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self._authorization_id: str | None = None

    @property
    def mechanism(self) -> str:
        return PLAIN

    @property
    def complete(self) -> bool:
        return self._authorization_id is not None

    @property
    def authorization_id(self) -> str:
        if self._authorization_id is None:
            raise SaslAuthenticationError("Authentication exchange has not completed")
        return self._authorization_id

    @property
    def token_authenticated(self) -> bool:
        return False

    @property
    def credential_expiration_ms(self) -> int | None:
        return None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationError("Authentication exchange has completed")
        parts = token.decode("utf-8", errors="replace").split("\0", 3)
        if len(parts) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authorization_id, username, password = parts
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authorization_id and authorization_id != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an "
                                          "authorization id that is different from username")
        self._authorization_id = username
        return b""


def plain_users(options: Mapping[str, str]) -> dict[str, str]:
    """The user table of a PlainLoginModule's options (``user_alice="secret"``)."""
    return {key[len(_USER_PREFIX):]: value for key, value in options.items()
            if key.startswith(_USER_PREFIX)}


def plain_server_factory(options: Mapping[str, str]) -> Callable[[], SaslServer]:
    """Fresh PLAIN servers over the users of one login module's options."""
    users = plain_users(options)
    return lambda: PlainServer(users)


def plain_client_token(username: str, password: str) -> bytes:
    """The client's one token, with an empty authorization id (as Kafka's client sends)."""
    return b"\0" + username.encode() + b"\0" + password.encode()
