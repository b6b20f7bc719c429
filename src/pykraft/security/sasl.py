"""The server side of one SASL mechanism, as the listener drives it.

A listener that speaks SASL answers SaslHandshake with the mechanisms it enables, then feeds
each SaslAuthenticate token to a fresh :class:`SaslServer` for the chosen mechanism until it
is complete. Mechanisms are pure: the credentials they check come from the caller (the JAAS
users of PLAIN, the metadata image's SCRAM credentials), never from I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from pykraft.errors import PyKraftError


class SaslAuthenticationError(PyKraftError):
    """The client failed authentication; the message goes back in SaslAuthenticate's
    error_message (Kafka: SASL_AUTHENTICATION_FAILED) and the connection is closed."""


class SaslServer(Protocol):
    """One authentication exchange; a new instance per connection and attempt."""

    @property
    def mechanism(self) -> str: ...

    def evaluate(self, token: bytes) -> bytes:
        """The challenge to send back for the client's ``token``; raises
        :class:`SaslAuthenticationError` when the client fails."""
        ...

    @property
    def complete(self) -> bool: ...

    @property
    def authorization_id(self) -> str:
        """The user name the principal is built from (``User:<id>``), once complete."""
        ...

    @property
    def token_authenticated(self) -> bool:
        """The client proved a delegation token (its principal is the token's owner)."""
        ...

    @property
    def credential_expiration_ms(self) -> int | None:
        """When the proven credential expires (ms since the epoch; None: never), once
        complete: Kafka's ``CREDENTIAL.LIFETIME.MS`` negotiated property, which bounds the
        session (a delegation token's expiry timestamp)."""
        ...


#: mechanism name (``PLAIN``, ``SCRAM-SHA-512``, ...) -> a factory of fresh servers
SaslServerFactories = Mapping[str, Callable[[], SaslServer]]
