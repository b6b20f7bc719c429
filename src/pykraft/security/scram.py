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

A delegation token authenticates with the extension ``tokenauth=true`` after the nonce of
the client-first (Kafka's only SCRAM extension; any other fails): the user name is the
token's id, the password its HMAC in base64, and the principal the token's owner, marked
token-authenticated. scramp knows no extensions, so they are taken off the message it
parses and put back into the one it signs (the client's proof covers them).

Differences from Kafka that come from scramp: the authorization id must be empty (Kafka
also accepts it equal to the user; Java clients and librdkafka send it empty), and a
credential's salt must be at least 12 bytes (Kafka's and librdkafka's tools salt with more).
"""

from __future__ import annotations

from collections.abc import Callable

import scramp

from pykraft.errors import PyKraftError
from pykraft.image.scram import ScramCredential, ScramImage, ScramMechanism
from pykraft.security.sasl import SaslAuthenticationError, SaslServer, SaslServerFactories

SCRAM_MECHANISMS = tuple(m for m in ScramMechanism if m is not ScramMechanism.UNKNOWN)
TOKEN_AUTH = "tokenauth"  # Kafka's ScramLoginModule.TOKEN_AUTH_CONFIG

#: token id, mechanism -> the token owner's name, the token's credential and its expiry
#: timestamp (ms since the epoch); None: unknown.
TokenLookup = Callable[[str, ScramMechanism], "tuple[str, ScramCredential, int] | None"]


def no_tokens(_token_id: str, _mechanism: ScramMechanism) -> None:
    """The lookup of a node without delegation tokens."""
    return None


class ScramExchangeError(PyKraftError):
    """The exchange failed (Kafka's SaslException): the reason is for the log only, the
    client hears the listener's generic message."""


class ScramSaslServer:
    """One SCRAM exchange (a :class:`~pykraft.security.sasl.SaslServer`); ``nonce`` is the
    server's part of the nonce, from the caller's random source."""

    def __init__(self, mechanism: ScramMechanism, image: Callable[[], ScramImage],
                 nonce: str, tokens: TokenLookup = no_tokens) -> None:
        self._mechanism = mechanism
        self._image = image
        self._tokens = tokens
        self._server = scramp.ScramMechanism(mechanism.mechanism_name).make_server(
            self._lookup, s_nonce=nonce)
        self._user: str | None = None
        self._token_auth = False
        self._token_expiry_ms: int | None = None
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

    @property
    def token_authenticated(self) -> bool:
        return self._token_auth

    @property
    def credential_expiration_ms(self) -> int | None:
        """A token's expiry timestamp (Kafka's ScramSaslServer negotiates it so: the
        session ends when the token expires, even one expired but not yet removed)."""
        return self._token_expiry_ms

    def evaluate(self, token: bytes) -> bytes:
        self._round += 1
        try:
            text = token.decode()
        except UnicodeDecodeError:
            raise ScramExchangeError("the SCRAM message is not UTF-8") from None
        if self._round == 1:
            _check_authorization_id(text)
            return self._client_first(text)
        if self._round == 2:
            final = self._step(self._server.set_client_final, text,
                               self._server.get_server_final)
            self._complete = True
            return final
        raise ScramExchangeError(f"Unexpected challenge in Sasl server state round {self._round}")

    def _client_first(self, text: str) -> bytes:
        """The server-first for the client-first ``text``, its extensions taken off for
        scramp and kept in the message the proof signs."""
        header, bare, extensions = _extensions(text)
        if set(extensions) - {TOKEN_AUTH}:
            raise ScramExchangeError(f"Unsupported extensions {sorted(extensions)}")
        self._token_auth = extensions.get(TOKEN_AUTH, "").lower() == "true"
        plain_bare = ",".join(bare.split(",")[:2])
        answer = self._step(self._server.set_client_first, header + plain_bare,
                            self._server.get_server_first)
        self._server.client_first_bare = bare  # what the client's AuthMessage holds
        return answer

    def _step(self, take: Callable[[str], None], text: str, answer: Callable[[], str]) -> bytes:
        try:
            take(text)
            return answer().encode()
        except scramp.ScramException as exc:
            raise ScramExchangeError(f"Authentication failed: {exc}") from None

    def _lookup(self, user: str) -> tuple[bytes, bytes, bytes, int] | None:
        """scramp's auth_fn: the user's (or with ``tokenauth`` the token's) credential for
        this mechanism in today's image."""
        credential: ScramCredential | None
        if self._token_auth:
            found = self._tokens(user, self._mechanism)
            if found is None:
                raise ScramExchangeError(f"Token Authentication failed: Invalid tokenId : {user}")
            owner, credential, self._token_expiry_ms = found
        else:
            owner, credential = user, self._image().get(user, self._mechanism)
        if credential is None:
            return None
        self._user = owner
        return (credential.salt, credential.stored_key, credential.server_key,
                credential.iterations)


def _extensions(client_first: str) -> tuple[str, str, dict[str, str]]:
    """The gs2 header, the bare message and its extensions (the ``key=value`` attributes
    after ``n=`` and ``r=``, Kafka's ScramExtensions)."""
    first = client_first.find(",")
    second = client_first.find(",", first + 1)
    if first < 0 or second < 0:
        raise ScramExchangeError("The client sent a malformed first message")
    bare = client_first[second + 1:]
    extensions = dict(part.partition("=")[::2] for part in bare.split(",")[2:])
    return client_first[:second + 1], bare, extensions


def _check_authorization_id(client_first: str) -> None:
    """Kafka's rule: an authorization id, if given, must be the user name itself."""
    header, _, bare = client_first.partition(",")[2].partition(",")
    if header.startswith("a="):
        user = next((part[2:] for part in bare.split(",") if part.startswith("n=")), None)
        if header[2:] != user:
            raise SaslAuthenticationError("Authentication failed: Client requested an "
                                          "authorization id that is different from username")


def scram_factories(image: Callable[[], ScramImage], nonces: Callable[[], str],
                    tokens: TokenLookup = no_tokens) -> SaslServerFactories:
    """SCRAM-SHA-256 and SCRAM-SHA-512 servers over ``image()`` (the node's current
    metadata image) and its delegation ``tokens``, each with a fresh server nonce from
    ``nonces``."""

    def factory(mechanism: ScramMechanism) -> Callable[[], SaslServer]:
        return lambda: ScramSaslServer(mechanism, image, nonces(), tokens)

    return {m.mechanism_name: factory(m) for m in SCRAM_MECHANISMS}
