"""SCRAM-SHA-256/512 (RFC 5802, 7677; Kafka's ScramSaslServer) over the metadata image's
credentials, with scramp doing the message parsing and the proof checks.

Two tokens: the client-first message (``n,,n=<user>,r=<nonce>``) is answered with the
server-first (``r=<nonce+server nonce>,s=<salt>,i=<iterations>``), the client-final (with
the proof) with the server-final (``v=<server signature>``). Like Kafka, an unknown user, a
wrong proof and a malformed message all fail with :class:`ScramExchangeError`, which the listener
turns into one generic message (``Authentication failed during authentication due to
invalid credentials with SASL mechanism SCRAM-SHA-512``) so a client learns nothing about
which users exist; a client-first naming an authorization id other than its user fails
with Kafka's own words. The credential is looked up when the client-first arrives, in the
image of that moment, so a removed credential stops working for the next authentication.

Differences from Kafka that come from scramp: the authorization id must be empty (Kafka
also accepts it equal to the user; Java clients and librdkafka send it empty), SCRAM
extensions (``tokenauth``, delegation tokens, which pykraft lacks) are refused, and a
credential's salt must be at least 12 bytes (Kafka's and librdkafka's tools salt with more).
"""

from __future__ import annotations

from collections.abc import Callable

import scramp

from pykraft.errors import PyKraftError
from pykraft.image.scram import ScramImage, ScramMechanism
from pykraft.security.sasl import SaslAuthenticationError, SaslServer, SaslServerFactories

SCRAM_MECHANISMS = tuple(m for m in ScramMechanism if m is not ScramMechanism.UNKNOWN)


class ScramExchangeError(PyKraftError):
    """The exchange failed (Kafka's SaslException): the reason is for the log only, the
    client hears the listener's generic message."""


class ScramSaslServer:
    """One SCRAM exchange (a :class:`~pykraft.security.sasl.SaslServer`); ``nonce`` is the
    server's part of the nonce, from the caller's random source."""

    def __init__(self, mechanism: ScramMechanism, image: Callable[[], ScramImage],
                 nonce: str) -> None:
        self._mechanism = mechanism
        self._image = image
        self._server = scramp.ScramMechanism(mechanism.mechanism_name).make_server(
            self._lookup, s_nonce=nonce)
        self._user: str | None = None
        self._round = 0
        self._complete = False

    @property
    def mechanism(self) -> str:
        return self._mechanism.mechanism_name

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def authorization_id(self) -> str:
        if not self._complete or self._user is None:
            raise SaslAuthenticationError("Authentication exchange has not completed")
        return self._user

    def evaluate(self, token: bytes) -> bytes:
        self._round += 1
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise ScramExchangeError("the SCRAM message is not UTF-8") from None
        if self._round == 1:
            _check_authorization_id(text)
            return self._step(self._server.set_client_first, text,
                              self._server.get_server_first)
        if self._round == 2:
            final = self._step(self._server.set_client_final, text,
                               self._server.get_server_final)
            self._complete = True
            return final
        raise ScramExchangeError(f"Unexpected challenge in Sasl server state round {self._round}")

    def _step(self, take: Callable[[str], None], text: str, answer: Callable[[], str]) -> bytes:
        try:
            take(text)
            return answer().encode()
        except scramp.ScramException as exc:
            raise ScramExchangeError(f"Authentication failed: {exc}") from None

    def _lookup(self, user: str) -> tuple[bytes, bytes, bytes, int] | None:
        """scramp's auth_fn: the user's credential for this mechanism in today's image."""
        credential = self._image().get(user, self._mechanism)
        if credential is None:
            return None
        self._user = user
        return (credential.salt, credential.stored_key, credential.server_key,
                credential.iterations)


def _check_authorization_id(client_first: str) -> None:
    """Kafka's rule: an authorization id, if given, must be the user name itself."""
    header, _, bare = client_first.partition(",")[2].partition(",")
    if header.startswith("a="):
        user = next((part[2:] for part in bare.split(",") if part.startswith("n=")), None)
        if header[2:] != user:
            raise SaslAuthenticationError("Authentication failed: Client requested an "
                                          "authorization id that is different from username")


def scram_factories(image: Callable[[], ScramImage],
                    nonces: Callable[[], str]) -> SaslServerFactories:
    """SCRAM-SHA-256 and SCRAM-SHA-512 servers over ``image()`` (the node's current
    metadata image), each with a fresh server nonce from ``nonces``."""

    def factory(mechanism: ScramMechanism) -> Callable[[], SaslServer]:
        return lambda: ScramSaslServer(mechanism, image, nonces())

    return {m.mechanism_name: factory(m) for m in SCRAM_MECHANISMS}
