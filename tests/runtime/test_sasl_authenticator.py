"""The SASL listener's state machine, frame by frame, against PLAIN and a SCRAM stand-in."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, cast

import pytest
import scramp
from hypothesis import given, settings
from hypothesis import strategies as st
from sasl_fixtures import BASE, SCRAM, USERS, listener, scram_factory

from pykraft.errors import ConfigError
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response, encode_request, request_type
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.runtime.sasl_authenticator import SaslAuthenticator, SaslGate, SaslRefused, Step
from pykraft.runtime.streams import FrameStream
from pykraft.security.plain import PlainServer, plain_client_token
from pykraft.security.sasl import SaslServer
from pykraft.security.sasl_listener import SaslListener, sasl_listener
from pykraft.security.session import KafkaPrincipal


def frame(api_key: int, version: int, correlation_id: int = 7, **fields: Any) -> bytes:
    body = request_type(api_key, version)(**fields)
    return encode_request(RequestHeader(api_key, version, correlation_id, "test"), body)


def handshake(mechanism: str = "PLAIN", version: int = 1) -> bytes:
    return frame(ApiKey.SASL_HANDSHAKE, version, mechanism=mechanism)


def auth(token: bytes, version: int = 2) -> bytes:
    return frame(ApiKey.SASL_AUTHENTICATE, version, auth_bytes=token)


def metadata() -> bytes:
    return frame(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                 include_topic_authorized_operations=False)


def answer(step: Step, api_key: int, version: int) -> Any:
    assert step.reply is not None
    return decode_response(api_key, version, step.reply).body


def plain_login(authenticator: SaslAuthenticator, user: str = "alice",
                password: str = "alice-secret", now_ms: int = 0, version: int = 2) -> Step:
    step = authenticator.receive(handshake(), now_ms)
    assert answer(step, ApiKey.SASL_HANDSHAKE, 1).error_code == ErrorCode.NONE
    return authenticator.receive(auth(plain_client_token(user, password), version), now_ms)


def test_api_versions_then_plain_then_requests_as_the_user() -> None:
    authenticator = SaslAuthenticator(listener(), BASE)
    assert authenticator.receive(frame(ApiKey.API_VERSIONS, 3, client_software_name="t",
                                       client_software_version="1"), 0) == Step(forward=True)
    step = authenticator.receive(handshake(), 0)
    body = answer(step, ApiKey.SASL_HANDSHAKE, 1)
    assert (body.error_code, body.mechanisms) == (ErrorCode.NONE, ("PLAIN", SCRAM))
    step = authenticator.receive(auth(plain_client_token("alice", "alice-secret")), 0)
    body = answer(step, ApiKey.SASL_AUTHENTICATE, 2)
    assert (body.error_code, body.error_message, step.close) == (ErrorCode.NONE, "", None)
    assert body.session_lifetime_ms == 0
    assert authenticator.session == dataclasses.replace(BASE,
                                                        principal=KafkaPrincipal("User", "alice"))
    assert authenticator.receive(metadata(), 10**9) == Step(forward=True)


def test_wrong_password_is_answered_then_closed() -> None:
    authenticator = SaslAuthenticator(listener(), BASE)
    step = plain_login(authenticator, password="wrong")
    body = answer(step, ApiKey.SASL_AUTHENTICATE, 2)
    assert body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert body.error_message == "Authentication failed: Invalid username or password"
    assert (step.close, step.failed) == (body.error_message, True)
    assert authenticator.session.principal.name == "ANONYMOUS"
    assert authenticator.receive(metadata(), 0).close is not None  # nothing after a close


def test_an_enabled_mechanism_without_a_server_is_unsupported() -> None:
    bare = SaslListener(("PLAIN", "SCRAM-SHA-256"), {"PLAIN": lambda: PlainServer(USERS)})
    step = SaslAuthenticator(bare, BASE).receive(handshake("SCRAM-SHA-256"), 0)
    body = answer(step, ApiKey.SASL_HANDSHAKE, 1)
    assert (body.error_code, body.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                                  ("PLAIN", "SCRAM-SHA-256"))


def test_unknown_mechanism_lists_the_enabled_ones_then_closes() -> None:
    step = SaslAuthenticator(listener(), BASE).receive(handshake("GSSAPI"), 0)
    body = answer(step, ApiKey.SASL_HANDSHAKE, 1)
    assert (body.error_code, body.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                                  ("PLAIN", SCRAM))
    assert (step.close, step.failed) == ("Unsupported SASL mechanism GSSAPI", True)


@pytest.mark.parametrize("first", [metadata(), frame(ApiKey.SASL_AUTHENTICATE, 1, auth_bytes=b"")])
def test_any_other_api_before_the_handshake_closes(first: bytes) -> None:
    step = SaslAuthenticator(listener(), BASE).receive(first, 0)
    assert step.reply is None and step.failed
    assert step.close is not None and "during SASL handshake" in step.close


def test_an_oversized_frame_before_authentication_fails() -> None:
    small = dataclasses.replace(listener(), max_receive_size=64)
    step = SaslAuthenticator(small, BASE).receive(handshake() + bytes(64), 0)
    assert step.failed and step.close == ("Failing SASL authentication due to invalid "
                                          "receive size")
    authenticator = SaslAuthenticator(small, BASE)
    plain_login(authenticator)
    assert authenticator.receive(metadata() + bytes(64), 0).forward  # the limit is lifted


def test_api_versions_only_once() -> None:
    authenticator = SaslAuthenticator(listener(), BASE)
    versions = frame(ApiKey.API_VERSIONS, 0)
    assert authenticator.receive(versions, 0).forward
    step = authenticator.receive(versions, 0)
    assert step.close is not None and "Unexpected ApiVersions" in step.close


def test_an_unsupported_api_versions_version_may_be_retried() -> None:
    authenticator = SaslAuthenticator(listener(), BASE)
    newer = encode_request(RequestHeader(ApiKey.API_VERSIONS, 0, 1, "t"),
                           request_type(ApiKey.API_VERSIONS, 0)())[:2] + b"\x00\x63" + (
        b"\x00\x00\x00\x01\x00\x01t")  # v99: the dispatcher answers it in v0 with an error
    assert authenticator.receive(newer, 0).forward
    assert authenticator.receive(frame(ApiKey.API_VERSIONS, 0), 0).forward


def test_another_request_mid_authentication_closes() -> None:
    authenticator = SaslAuthenticator(listener(), BASE)
    authenticator.receive(handshake(), 0)
    step = authenticator.receive(metadata(), 0)
    assert step.failed and step.close == ("Unexpected Kafka request of type METADATA during "
                                          "SASL authentication.")
    assert step.reply is None


def test_handshake_v0_carries_bare_tokens() -> None:
    authenticator = SaslAuthenticator(listener(), BASE)
    authenticator.receive(handshake(version=0), 0)
    step = authenticator.receive(plain_client_token("admin", "admin-secret"), 0)
    assert step == Step(reply=b"")
    assert authenticator.session.principal == KafkaPrincipal("User", "admin")
    assert authenticator.receive(metadata(), 0).forward


def test_handshake_v0_failure_closes_without_an_answer() -> None:
    authenticator = SaslAuthenticator(listener(), BASE)
    authenticator.receive(handshake(version=0), 0)
    step = authenticator.receive(plain_client_token("admin", "nope"), 0)
    assert step.reply is None and step.failed


def scram_login(authenticator: SaslAuthenticator, password: str, now_ms: int = 0) -> Step:
    authenticator.receive(handshake(SCRAM), now_ms)
    client = scramp.ScramClient([SCRAM], "alice", password)
    step = authenticator.receive(auth(client.get_client_first().encode()), now_ms)
    client.set_server_first(answer(step, ApiKey.SASL_AUTHENTICATE, 2).auth_bytes.decode())
    step = authenticator.receive(auth(client.get_client_final().encode()), now_ms)
    if step.close is None:
        client.set_server_final(answer(step, ApiKey.SASL_AUTHENTICATE, 2).auth_bytes.decode())
    return step


def test_scram_two_round_trips() -> None:
    authenticator = SaslAuthenticator(listener(), BASE)
    step = scram_login(authenticator, "alice-secret")
    assert step.close is None
    assert authenticator.session.principal == KafkaPrincipal("User", "alice")


def test_a_mechanisms_unexpected_error_becomes_kafkas_generic_message() -> None:
    step = scram_login(SaslAuthenticator(listener(), BASE), "wrong")
    body = answer(step, ApiKey.SASL_AUTHENTICATE, 2)
    assert body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert body.error_message == ("Authentication failed during authentication due to invalid "
                                  "credentials with SASL mechanism SCRAM-SHA-512")


def test_every_authentication_asks_the_factory() -> None:
    made: list[PlainServer] = []

    def factory() -> SaslServer:
        made.append(PlainServer(USERS))
        return made[-1]

    authenticator = SaslAuthenticator(listener(1000, PLAIN=factory), BASE)
    plain_login(authenticator)
    plain_login(authenticator, now_ms=500)
    assert len(made) == 2


def test_session_lifetime_and_reauthentication() -> None:
    authenticator = SaslAuthenticator(listener(reauth_ms=1000), BASE)
    body = answer(plain_login(authenticator, now_ms=0), ApiKey.SASL_AUTHENTICATE, 2)
    assert body.session_lifetime_ms == 1000
    assert authenticator.receive(metadata(), 1000).forward
    step = plain_login(authenticator, now_ms=1500)  # after expiry: a handshake re-authenticates
    assert step.close is None
    assert answer(step, ApiKey.SASL_AUTHENTICATE, 2).session_lifetime_ms == 1000
    assert authenticator.receive(metadata(), 2500).forward
    step = authenticator.receive(metadata(), 2501)
    assert step.close is not None and "expired" in step.close and not step.failed


class ExpiringPlain(PlainServer):
    """PLAIN whose credential expires at wall-clock ms 10 000 (as a delegation token's)."""

    @property
    def credential_expiration_ms(self) -> int | None:
        return 10_000


@pytest.mark.parametrize(("reauth_ms", "wall_ms", "lifetime_ms"), [
    (0, 4_000, 6_000),  # the credential alone bounds the session
    (1_000, 4_000, 1_000),  # the shorter of the two
    (60_000, 4_000, 6_000),
    (0, 12_000, 0),  # expired (not yet removed): over at once
])
def test_a_credential_expiry_bounds_the_session(reauth_ms: int, wall_ms: int,
                                                lifetime_ms: int) -> None:
    authenticator = SaslAuthenticator(
        listener(reauth_ms, PLAIN=lambda: ExpiringPlain(USERS)), BASE, lambda: wall_ms)
    body = answer(plain_login(authenticator, now_ms=100), ApiKey.SASL_AUTHENTICATE, 2)
    assert body.session_lifetime_ms == lifetime_ms
    if lifetime_ms:
        assert authenticator.receive(metadata(), 100 + lifetime_ms).forward
    step = authenticator.receive(metadata(), 100 + lifetime_ms + (1 if lifetime_ms else 0))
    assert step.close is not None and "expired" in step.close and not step.failed


def test_session_lifetime_is_not_in_version_zero() -> None:
    authenticator = SaslAuthenticator(listener(reauth_ms=1000), BASE)
    body = answer(plain_login(authenticator, version=0), ApiKey.SASL_AUTHENTICATE, 0)
    # v0 has no lifetime: the whole answer was read at v0, so none was written
    assert (body.error_code, body.session_lifetime_ms) == (ErrorCode.NONE, 0)


def test_reauthentication_keeps_the_principal() -> None:
    authenticator = SaslAuthenticator(listener(reauth_ms=60_000), BASE)
    plain_login(authenticator)
    step = plain_login(authenticator, "admin", "admin-secret", now_ms=5000)
    assert step.failed and step.close == ("Cannot change principals during re-authentication "
                                          "from User.alice: User.admin")
    assert answer(step, ApiKey.SASL_AUTHENTICATE, 2).error_code == (
        ErrorCode.SASL_AUTHENTICATION_FAILED)


def test_reauthentication_keeps_the_mechanism() -> None:
    authenticator = SaslAuthenticator(listener(reauth_ms=60_000), BASE)
    plain_login(authenticator)
    step = authenticator.receive(handshake(SCRAM), 5000)
    assert answer(step, ApiKey.SASL_HANDSHAKE, 1).error_code == ErrorCode.NONE
    step = authenticator.receive(auth(b"n,,n=alice,r=abc"), 5000)
    assert step.failed and step.close == ("SASL mechanism 'SCRAM-SHA-512' requested by client "
                                          "is not supported for re-authentication of "
                                          "mechanism 'PLAIN'")


def test_without_a_lifetime_sasl_requests_go_to_the_dispatcher() -> None:
    authenticator = SaslAuthenticator(listener(), BASE)
    plain_login(authenticator)
    assert authenticator.receive(handshake(), 10).forward
    assert authenticator.receive(auth(b""), 10).forward


def test_reauthentication_at_most_once_a_second() -> None:
    authenticator = SaslAuthenticator(listener(reauth_ms=60_000), BASE)
    plain_login(authenticator)
    plain_login(authenticator, now_ms=100)
    assert authenticator.receive(handshake(), 900).forward
    assert authenticator.receive(handshake(), 1100).reply is not None


def test_listener_from_kafka_keys() -> None:
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'user_alice="alice-secret";')
    props = {"listener.name.sasl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
             "listener.name.sasl.plain.sasl.jaas.config": jaas,
             "listener.name.sasl.scram-sha-256.connections.max.reauth.ms": "3000"}
    scram_256 = scram_factory()
    built = sasl_listener(props, "SASL")
    assert built.mechanisms == ("PLAIN", "SCRAM-SHA-256")
    assert set(built.factories) == {"PLAIN"}
    built = built.with_factories({"SCRAM-SHA-256": scram_256, SCRAM: scram_factory()})
    assert set(built.factories) == {"PLAIN", "SCRAM-SHA-256"}
    assert built.factories["SCRAM-SHA-256"] is scram_256
    assert dict(built.reauth_ms) == {"PLAIN": 0, "SCRAM-SHA-256": 3000}
    assert built.max_receive_size == 524288
    server = built.factories["PLAIN"]()
    server.evaluate(plain_client_token("alice", "alice-secret"))
    assert server.authorization_id == "alice"


@pytest.mark.parametrize(("props", "message"), [
    ({}, "names GSSAPI, which pykraft does not support"),
    ({"sasl.enabled.mechanisms": "PLAIN"}, "no JAAS configuration for PLAIN on listener SASL"),
    ({"sasl.enabled.mechanisms": "OAUTHBEARER"}, "names OAUTHBEARER"),
    ({"sasl.enabled.mechanisms": " , "}, "is empty"),
    ({"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": "m required;",
      "connections.max.reauth.ms": "soon"}, "connections.max.reauth.ms"),
    ({"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": "m required;",
      "sasl.server.max.receive.size": "0"}, "sasl.server.max.receive.size"),
])
def test_listener_refusals(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        sasl_listener(props, "SASL")


STATES = st.sampled_from(["fresh", "handshaken", "raw", "authenticated", "reauth"])


def in_state(state: str) -> SaslAuthenticator:
    authenticator = SaslAuthenticator(listener(reauth_ms=1000), BASE)
    if state == "handshaken":
        authenticator.receive(handshake(SCRAM), 0)
    elif state == "raw":
        authenticator.receive(handshake(version=0), 0)
    elif state in ("authenticated", "reauth"):
        plain_login(authenticator)
        if state == "reauth":
            authenticator.receive(handshake(), 5000)
    return authenticator


@settings(max_examples=300, deadline=None)
@given(STATES, st.binary(max_size=80))
def test_arbitrary_frames_never_raise(state: str, data: bytes) -> None:
    step = in_state(state).receive(data, 5000)
    assert step.forward or step.close is not None or step.reply is not None


@settings(max_examples=300, deadline=None)
@given(STATES, st.binary(max_size=80))
def test_arbitrary_tokens_fail_cleanly(state: str, token: bytes) -> None:
    authenticator = in_state(state)
    step = authenticator.receive(auth(token), 5000)
    if step.close is None and not step.forward:
        body = answer(step, ApiKey.SASL_AUTHENTICATE, 2)
        assert body.error_code == ErrorCode.NONE
    elif step.reply is not None and state in ("handshaken", "reauth"):
        body = answer(step, ApiKey.SASL_AUTHENTICATE, 2)
        assert body.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED and step.failed


class _Written:
    """A stream that keeps what the gate writes."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    async def write_frame(self, payload: bytes) -> None:
        self.frames.append(payload)


def test_only_a_first_login_failure_is_delayed() -> None:
    """connection.failed.authentication.delay.ms holds back the answer to a failed login;
    a failed re-authentication closes at once, as in Kafka."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def scenario() -> None:
        stream = cast(FrameStream, _Written())
        first = SaslGate(listener(), BASE, 0.1, clock=lambda: 0, sleep=sleep)
        assert not await first.admit(stream, handshake())
        with pytest.raises(SaslRefused):
            await first.admit(stream, auth(plain_client_token("alice", "wrong")))
        assert slept == [0.1]
        again = SaslGate(listener(reauth_ms=60_000), BASE, 0.1, clock=lambda: 0, sleep=sleep)
        assert not await again.admit(stream, handshake())
        assert not await again.admit(stream, auth(plain_client_token("alice", "alice-secret")))
        assert not await again.admit(stream, handshake())  # re-authentication
        with pytest.raises(SaslRefused):
            await again.admit(stream, auth(plain_client_token("alice", "wrong")))
        assert slept == [0.1]

    asyncio.run(scenario())

