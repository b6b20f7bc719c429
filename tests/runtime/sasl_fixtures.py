"""Listener test fixtures: PLAIN users, a SCRAM-SHA-512 stand-in over scramp, a SASL
listener, a dispatcher that answers ApiVersions, and a listener server run for one
scenario on real sockets."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import scramp

from pykraft.protocol.api_versions import api_versions_response
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.codec import decode_request, encode_response
from pykraft.runtime.listener_server import ListenerServer
from pykraft.security.plain import PlainServer
from pykraft.security.sasl import SaslServer
from pykraft.security.sasl_listener import SaslListener
from pykraft.security.session import KafkaPrincipal, SecurityProtocol, Session

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
SCRAM = "SCRAM-SHA-512"
BASE = Session(KafkaPrincipal("User", "ANONYMOUS"), "127.0.0.1:5000", "SASL_PLAINTEXT",
               SecurityProtocol.SASL_PLAINTEXT)


class FakeScram:
    """A SCRAM server over scramp with one fixed credential; scramp's own exceptions escape
    from it, as an unexpected failure inside a mechanism would."""

    def __init__(self, credentials: dict[str, tuple[bytes, bytes, bytes, int]]) -> None:
        self._user = ""

        def lookup(user: str) -> tuple[bytes, bytes, bytes, int]:
            self._user = user
            return credentials[user]

        self._server = scramp.ScramMechanism(SCRAM).make_server(lookup)
        self._round = 0

    @property
    def mechanism(self) -> str:
        return SCRAM

    @property
    def complete(self) -> bool:
        return self._round == 2

    @property
    def authorization_id(self) -> str:
        return self._user

    @property
    def token_authenticated(self) -> bool:
        return False

    @property
    def credential_expiration_ms(self) -> int | None:
        return None

    def evaluate(self, token: bytes) -> bytes:
        self._round += 1
        if self._round == 1:
            self._server.set_client_first(token.decode())
            return str(self._server.get_server_first()).encode()
        self._server.set_client_final(token.decode())
        return str(self._server.get_server_final()).encode()


def scram_factory() -> Callable[[], SaslServer]:
    info = scramp.ScramMechanism(SCRAM).make_auth_info("alice-secret", iteration_count=4096)
    return lambda: FakeScram({"alice": info})


def listener(reauth_ms: int = 0, **factories: Callable[[], SaslServer]) -> SaslListener:
    table = {"PLAIN": lambda: PlainServer(USERS), SCRAM: scram_factory(), **factories}
    return SaslListener(tuple(table), table, {m: reauth_ms for m in table})


class Versions:
    """A dispatcher that answers ApiVersions (listing the SASL APIs) and keeps the sessions
    of the requests it saw."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []

    async def respond(self, frame: bytes, session: Session) -> bytes:
        self.sessions.append(session)
        request = decode_request(frame)
        assert request.api_key == ApiKey.API_VERSIONS
        return encode_response(request.header.correlation_id, ApiKey.API_VERSIONS,
                               request.api_version,
                               api_versions_response(Listener.BROKER, request.api_version))

    def connection_closed(self, session: Session) -> None:
        """Nothing watches connections here."""


async def serve_scenario(server: ListenerServer, scenario: Callable[[int], Awaitable[None]],
                         deadline_s: float) -> None:
    """Start ``server``, run ``scenario`` on its port within ``deadline_s``, close it."""
    await server.start()
    try:
        async with asyncio.timeout(deadline_s):
            await scenario(server.port)
    finally:
        await server.close()
