"""A SASL listener on real sockets: TLS then SASL (SASL_SSL) with pykraft's own client, the
session its requests carry, and a refused login logged once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

import pytest
from sasl_fixtures import Versions, listener
from tls_fixtures import pem_files, pki, trust_only

from pykraft.protocol.api_versions import ApiVersionsRequest, listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.runtime.listener_server import ListenerServer
from pykraft.runtime.sasl_client import SaslClientError, SaslCredentials
from pykraft.runtime.tls import client_context, server_tls
from pykraft.security.session import KafkaPrincipal, SecurityProtocol

DEADLINE_S = 10.0


def _serve(tmp_path: Path, scenario: Callable[[int, Versions], Awaitable[None]]) -> None:
    keys = pki()

    async def run() -> None:
        versions = Versions()
        server = ListenerServer(cast(Dispatcher, versions), "127.0.0.1", 0, 1 << 20,
                                listener_name="SASL_SSL", protocol=SecurityProtocol.SASL_SSL,
                                tls=server_tls(pem_files(tmp_path, keys.server, keys.ca,
                                                         "server"), "SASL_SSL"),
                                sasl=listener())
        await server.start()
        try:
            async with asyncio.timeout(DEADLINE_S):
                await scenario(server.port, versions)
        finally:
            await server.close()
    asyncio.run(run())


def _open(port: int, tmp_path: Path, password: str) -> Awaitable[ClientConnection]:
    return ClientConnection.open(
        "127.0.0.1", port, client_id="t", ours=listener_ranges(Listener.BROKER),
        tls=client_context(trust_only(tmp_path, pki().ca, "client")),
        sasl=SaslCredentials("SCRAM-SHA-512", "alice", password))


def test_sasl_ssl_requests_carry_the_sasl_principal(tmp_path: Path) -> None:
    async def scenario(port: int, versions: Versions) -> None:
        connection = await _open(port, tmp_path, "alice-secret")
        try:
            await connection.request(ApiVersionsRequest(client_software_name="t",
                                                        client_software_version="1"))
        finally:
            connection.close()
        first, last = versions.sessions[0], versions.sessions[-1]
        assert first.principal.name == "ANONYMOUS"  # ApiVersions before authenticating
        assert (last.principal, last.listener_name, last.security_protocol) == (
            KafkaPrincipal("User", "alice"), "SASL_SSL", SecurityProtocol.SASL_SSL)
    _serve(tmp_path, scenario)


def test_a_refused_login_fails_the_client_and_is_logged_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario(port: int, versions: Versions) -> None:
        with pytest.raises(SaslClientError, match="invalid credentials with SASL mechanism "
                                                  "SCRAM-SHA-512"):
            await _open(port, tmp_path, "wrong")
        assert len(versions.sessions) == 1  # only the ApiVersions reached the dispatcher

    with caplog.at_level(logging.INFO, logger="pykraft.server"):
        _serve(tmp_path, scenario)
    refusals = [r for r in caplog.records if r.getMessage() == "failed_authentication"]
    assert len(refusals) == 1
    fields = getattr(refusals[0], "fields", {})
    assert fields["peer"] == "/127.0.0.1" and "SCRAM-SHA-512" in fields["reason"]
