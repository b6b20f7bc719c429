"""TLS from Kafka's ssl.* keys: each key store and trust store form loads and serves a real
handshake on a ListenerServer; bad settings are ConfigErrors naming the key; a failed
handshake closes only that connection and is logged once."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import pytest
from tls_fixtures import CLIENT_DN, pem_files, pki, trust_only

from pykraft.errors import ConfigError
from pykraft.messages.splice import Splice, SplicedPayload
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.listener_server import ListenerServer
from pykraft.runtime.streams import FrameStream
from pykraft.runtime.tls import client_context, server_tls
from pykraft.security.session import SecurityProtocol, Session

DEADLINE_S = 10.0


class _Echo:
    """A dispatcher that answers each frame with itself and keeps the sessions it saw."""

    def __init__(self) -> None:
        self.sessions: list[Session] = []

    async def respond(self, frame: bytes, session: Session) -> bytes | SplicedPayload:
        self.sessions.append(session)
        return frame

    def connection_closed(self, session: Session) -> None:
        """Nothing watches connections here."""


class _BytesSplice(Splice):
    """Bytes standing in for a file region: a TLS stream must read them, never sendfile."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    @property
    def length(self) -> int:
        return len(self._data)

    def source(self, offset: int) -> tuple[int, int]:
        raise AssertionError("sendfile on a TLS connection")

    def read(self, offset: int, size: int) -> bytes:
        return self._data[offset:offset + size]


class _SplicedEcho(_Echo):
    """Answers each frame with itself, all but its first byte left in a splice (as a
    Fetch answer's records in their segment file)."""

    async def respond(self, frame: bytes, session: Session) -> SplicedPayload:
        self.sessions.append(session)
        return SplicedPayload((frame[:1], _BytesSplice(frame[1:])), len(frame))


def _serve(server_props: dict[str, str],
           scenario: Callable[[int, _Echo], Awaitable[None]], echo: _Echo | None = None
           ) -> None:
    dispatcher = echo or _Echo()

    async def run() -> None:
        server = ListenerServer(cast(Dispatcher, dispatcher), "127.0.0.1", 0, 1 << 20,
                                listener_name="SSL", protocol=SecurityProtocol.SSL,
                                tls=server_tls(server_props, "SSL"))
        await server.start()
        try:
            async with asyncio.timeout(DEADLINE_S):
                await scenario(server.port, dispatcher)
        finally:
            await server.close()
    asyncio.run(run())


async def _round_trip(port: int, client: ssl.SSLContext, host: str = "127.0.0.1"
                      ) -> bytes | None:
    """The echoed frame; None when the server hung up instead."""
    stream = await FrameStream.connect(host, port, tls=client)
    try:
        await stream.write_frame(b"ping")
        return await stream.read_frame()
    finally:
        stream.close()


def test_pem_files_with_a_required_client_certificate_name_the_principal(
        tmp_path: Path) -> None:
    keys = pki()
    server = {**pem_files(tmp_path, keys.server, keys.ca, "server"), "ssl.client.auth": "required"}
    client = client_context(pem_files(tmp_path, keys.client, keys.ca, "client"))

    async def scenario(port: int, echo: _Echo) -> None:
        assert await _round_trip(port, client) == b"ping"
        session = echo.sessions[0]
        assert str(session.principal) == f"User:{CLIENT_DN}"
        assert (session.listener_name, session.security_protocol) == (
            "SSL", SecurityProtocol.SSL)
    _serve(server, scenario)


def test_a_spliced_answer_is_read_and_encrypted(tmp_path: Path) -> None:
    """A frame whose bytes are partly left in a file (a Fetch answer's records) goes out
    whole over TLS: read, not sent with sendfile past the encryption."""
    keys = pki()
    server = pem_files(tmp_path, keys.server, keys.ca, "server")
    client = client_context(trust_only(tmp_path, keys.ca, "client"))

    async def scenario(port: int, _: _Echo) -> None:
        assert await _round_trip(port, client) == b"ping"
    _serve(server, scenario, _SplicedEcho())


def test_without_a_client_certificate_the_principal_is_anonymous(tmp_path: Path) -> None:
    keys = pki()
    server = {**pem_files(tmp_path, keys.server, keys.ca, "server"),
              "ssl.client.auth": "requested"}
    client = client_context(trust_only(tmp_path, keys.ca, "client"))

    async def scenario(port: int, echo: _Echo) -> None:
        assert await _round_trip(port, client) == b"ping"
        assert str(echo.sessions[0].principal) == "User:ANONYMOUS"
    _serve(server, scenario)


def test_inline_pem_key_store_and_trust_store(tmp_path: Path) -> None:
    keys = pki()
    server = {"ssl.keystore.type": "PEM",
              "ssl.keystore.certificate.chain": keys.server.chain_pem().decode(),
              "ssl.keystore.key": keys.server.key_pem(b"secret").decode(),
              "ssl.key.password": "secret"}
    client = client_context({"ssl.truststore.type": "PEM",
                             "ssl.truststore.certificates": keys.ca.chain_pem().decode()})

    async def scenario(port: int, echo: _Echo) -> None:
        assert await _round_trip(port, client) == b"ping"
    _serve(server, scenario)


def test_pkcs12_key_store_and_trust_store(tmp_path: Path) -> None:
    keys = pki()
    (tmp_path / "server.p12").write_bytes(keys.server.pkcs12(b"store-pw"))
    (tmp_path / "client.p12").write_bytes(keys.client.pkcs12(b"client-pw"))
    # a trust store of the CA alone: a PKCS12 file without a key
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, pkcs12
    (tmp_path / "trust.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        None, None, None, [keys.ca.certificate], BestAvailableEncryption(b"trust-pw")))
    trust = {"ssl.truststore.type": "PKCS12",
             "ssl.truststore.location": str(tmp_path / "trust.p12"),
             "ssl.truststore.password": "trust-pw"}
    server = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(tmp_path / "server.p12"),
              "ssl.keystore.password": "store-pw", "ssl.client.auth": "required", **trust}
    client = client_context({
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(tmp_path / "client.p12"),
        "ssl.keystore.password": "client-pw", **trust})

    async def scenario(port: int, echo: _Echo) -> None:
        assert await _round_trip(port, client) == b"ping"
        assert str(echo.sessions[0].principal) == f"User:{CLIENT_DN}"
    _serve(server, scenario)


def test_listener_overrides_win_over_the_plain_keys(tmp_path: Path) -> None:
    keys = pki()
    good = pem_files(tmp_path, keys.server, keys.ca, "server")
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(tmp_path / "nowhere"),
             **{f"listener.name.ssl.{k}": v for k, v in good.items()}}
    server_tls(props, "SSL")  # the override's file, not the missing one
    with pytest.raises(ConfigError, match=re.escape("ssl.keystore.location")):
        server_tls(props, "OTHER")


@pytest.mark.parametrize(("change", "key", "reason"), [
    ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type", "use PKCS12 or PEM"),
    ({"ssl.keystore.type": None}, "ssl.keystore.type", "JKS key stores are not supported"),
    ({"ssl.keystore.location": "/no/such/file"}, "ssl.keystore.location", "cannot read"),
    ({"ssl.key.password": None}, "ssl.keystore.location", "the key is encrypted"),
    ({"ssl.key.password": "wrong"}, "ssl.keystore.location", "cannot load the private key"),
    ({"ssl.client.auth": "sometimes"}, "ssl.client.auth", "required, requested, none"),
    ({"ssl.enabled.protocols": "TLSv1.1"}, "ssl.enabled.protocols", "TLSv1.1"),
    ({"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,SSL_RSA_WITH_RC4_128_MD5"},
     "ssl.cipher.suites", "SSL_RSA_WITH_RC4_128_MD5: not a cipher suite pykraft offers"),
    ({"ssl.cipher.suites": "TLS_AES_256_GCM_SHA384"}, "ssl.cipher.suites",
     "cannot enable some TLS 1.3 suites without the others"),
    ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,"
                           "TLS_CHACHA20_POLY1305_SHA256", "ssl.enabled.protocols": "TLSv1.2"},
     "ssl.cipher.suites", "no listed suite is of an enabled protocol"),
])
def test_bad_settings_name_the_key(tmp_path: Path, change: dict[str, str | None], key: str,
                                   reason: str) -> None:
    keys = pki()
    props: dict[str, Any] = {**pem_files(tmp_path, keys.server, keys.ca, "server",
                                         key_password=b"pw"), **change}
    props = {k: v for k, v in props.items() if v is not None}
    with pytest.raises(ConfigError, match=re.escape(key)) as caught:
        server_tls(props, "SSL")
    assert reason.replace("use PKCS12 or PEM", "PKCS12") in str(caught.value)


def test_a_garbage_key_store_file_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    with pytest.raises(ConfigError, match=re.escape("ssl.keystore.location")):
        server_tls({"ssl.keystore.type": "PEM",
                    "ssl.keystore.location": str(tmp_path / "junk.pem")}, "SSL")
    with pytest.raises(ConfigError, match=re.escape("ssl.truststore.location")):
        client_context({"ssl.truststore.type": "PEM",
                        "ssl.truststore.location": str(tmp_path / "junk.pem")})


def test_a_tls_listener_without_a_key_store_is_refused() -> None:
    with pytest.raises(ConfigError, match="no key store"):
        server_tls({}, "SSL")


def test_refused_handshakes_close_only_their_connection_and_are_logged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Garbage, a client trusting another CA, and no certificate where one is required:
    each is logged once as a failed authentication (a bare connect-and-close is not); a
    good client is served afterwards."""
    keys = pki()
    server = {**pem_files(tmp_path, keys.server, keys.ca, "server"), "ssl.client.auth": "required"}
    good = client_context(pem_files(tmp_path, keys.client, keys.ca, "client"))
    wrong_ca = client_context(pem_files(tmp_path, keys.client, keys.stranger_ca, "wrong"))
    no_cert = client_context(trust_only(tmp_path, keys.ca, "anonymous"))

    async def scenario(port: int, echo: _Echo) -> None:
        _, probe = await asyncio.open_connection("127.0.0.1", port)
        probe.close()  # a port probe that says nothing is no failed authentication
        await probe.wait_closed()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"\x00\x00\x00\x10GET / HTTP/1.1\r\n\r\n")
        assert await reader.read() == b""  # the server hung up
        writer.close()
        with pytest.raises(ssl.SSLCertVerificationError):
            await _round_trip(port, wrong_ca)
        try:  # TLS 1.3: the server refuses after the client's side of the handshake ended
            answer = await _round_trip(port, no_cert)
        except (ssl.SSLError, ConnectionError):
            answer = None
        assert answer is None
        assert await _round_trip(port, good) == b"ping"
        assert len(echo.sessions) == 1

    with caplog.at_level(logging.INFO, logger="pykraft.server"):
        _serve(server, scenario)
    failures = [r for r in caplog.records if r.getMessage() == "failed_authentication"]
    reasons = [cast(Any, r).fields["reason"] for r in failures]
    assert len(reasons) == 3, reasons
    assert all(r.startswith("SSL handshake failed") for r in reasons)
    assert any("CERTIFICATE" in r.upper() for r in reasons[1:])
    assert all(cast(Any, r).fields["peer"] == "/127.0.0.1" for r in failures)


def test_host_name_verification_follows_the_endpoint_identification_algorithm(
        tmp_path: Path) -> None:
    """The server certificate names 127.0.0.1 and localhost, not 127.0.0.2's reverse
    name: with https the client checks the name it dialled, with "" it does not."""
    keys = pki()
    (tmp_path / "s.pem").write_bytes(keys.stranger.keystore_pem())  # names 127.0.0.1 only
    server = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(tmp_path / "s.pem")}
    trust = trust_only(tmp_path, keys.stranger_ca, "client")
    checking = client_context(trust)
    lenient = client_context({**trust, "ssl.endpoint.identification.algorithm": ""})

    async def scenario(port: int, echo: _Echo) -> None:
        with pytest.raises(ssl.SSLCertVerificationError, match="localhost"):
            await _round_trip(port, checking, host="localhost")
        assert await _round_trip(port, lenient, host="localhost") == b"ping"
        assert await _round_trip(port, checking) == b"ping"
    _serve(server, scenario)


def _negotiated(port: int, client: ssl.SSLContext) -> tuple[str, str | None]:
    """The cipher suite and protocol a blocking handshake with the server agreed on."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S) as raw, \
            client.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        suite = tls.cipher()
        assert suite is not None
        return suite[0], tls.version()


def test_cipher_suites_take_javas_names_and_hold(tmp_path: Path) -> None:
    """``ssl.cipher.suites`` in Java's names: the server offers only the listed TLS 1.2 suite
    (and no TLS 1.3, none of whose suites is listed, as in Java); a client that offers
    another suite only is refused; a list of every TLS 1.3 suite keeps TLS 1.3."""
    keys = pki()
    server = {**pem_files(tmp_path, keys.server, keys.ca, "server"),
              "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}
    trust = trust_only(tmp_path, keys.ca, "client")
    anything = client_context(trust)
    other = client_context({**trust,
                            "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})

    async def scenario(port: int, echo: _Echo) -> None:
        assert await asyncio.to_thread(_negotiated, port, anything) == (
            "ECDHE-ECDSA-AES128-GCM-SHA256", "TLSv1.2")
        with pytest.raises(ssl.SSLError):
            await asyncio.to_thread(_negotiated, port, other)
    _serve(server, scenario)
    tls13 = client_context({**trust, "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,"
                            "TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256"})
    assert tls13.minimum_version == ssl.TLSVersion.TLSv1_3
