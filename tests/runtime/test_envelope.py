"""Envelope (API 58) on the controller listener, as Kafka's ControllerApis/EnvelopeUtils:
the broker needs CLUSTER_ACTION, the forwarded request is authorized as its client (whose
principal Kafka's serde wrote), and each malformed part is the Envelope's own error."""

from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace

import pytest

from pykraft.config.authorizer import STANDARD_AUTHORIZER
from pykraft.controller import ControllerConfig
from pykraft.controller.activation import DEFAULT_BOOTSTRAP
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.envelope_request import EnvelopeRequest
from pykraft.messages.kafka.envelope_response import EnvelopeResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.runtime.controller_service import ControllerService
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.envelope import Forwarded, open_envelope
from pykraft.security.principal_serde import deserialize_principal, serialize_principal
from pykraft.security.session import KafkaPrincipal, Session

BROKER = Session(KafkaPrincipal("User", "broker"), "127.0.0.1:5000")
ALICE = KafkaPrincipal("User", "alice")
LOCALHOST = bytes([127, 0, 0, 1])
CORRELATION_ID = 42


def _create_topics() -> bytes:
    topic = CreatableTopic(name="t", num_partitions=1,
                           replication_factor=1, assignments=(), configs=())
    body = CreateTopicsRequest(topics=(topic,), validate_only=False)
    return encode_request(RequestHeader(ApiKey.CREATE_TOPICS, 7, CORRELATION_ID, "c"), body)


#: A CreateTopics v1 header (KIP-896 removed v0-v1): api key, version, correlation id, and a
#: null client id.
_CREATE_TOPICS_V1 = struct.pack(">hhih", ApiKey.CREATE_TOPICS, 1, CORRELATION_ID, -1)


def _envelope(data: bytes, principal: bytes | None = None,
              address: bytes = LOCALHOST) -> EnvelopeRequest:
    return EnvelopeRequest(request_data=data, client_host_address=address,
                           request_principal=(serialize_principal(ALICE) if principal is None
                                              else principal))


def test_the_principal_is_written_as_kafkas_serde_writes_it() -> None:
    """A version (int16 0), then DefaultPrincipalData v0: compact strings, a bool, no tags."""
    written = serialize_principal(ALICE)
    assert written == b"\x00\x00" + b"\x05User" + b"\x06alice" + b"\x00" + b"\x00"
    assert deserialize_principal(written) == ALICE


def test_the_forwarded_request_is_judged_as_its_client() -> None:
    opened = open_envelope(_envelope(_create_topics(), address=bytes(16)), BROKER)
    assert isinstance(opened, Forwarded)
    assert opened.request.api_key == ApiKey.CREATE_TOPICS
    assert opened.request.header.correlation_id == CORRELATION_ID
    assert (opened.session.principal, opened.session.client_host) == (ALICE, "::")


_FETCH = struct.pack(">hhih", ApiKey.FETCH, 4, 1, -1)  # refused by its header alone


@pytest.mark.parametrize(("envelope", "code"), [
    (EnvelopeRequest(request_data=_create_topics(), request_principal=None,
                     client_host_address=LOCALHOST), ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE),
    (_envelope(_create_topics(), principal=b"\x00\x01\x05User\x06alice\x00\x00"),
     ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE),
    (_envelope(_create_topics(), address=b"\x7f\x00\x01"), ErrorCode.INVALID_REQUEST),
    (_envelope(b"\x00"), ErrorCode.UNSUPPORTED_VERSION),
    (_envelope(_FETCH), ErrorCode.INVALID_REQUEST),  # not forwardable
    (_envelope(_CREATE_TOPICS_V1), ErrorCode.UNSUPPORTED_VERSION),  # below KIP-896
], ids=["null-principal", "principal-version", "address", "header", "fetch", "version"])
def test_what_kafka_refuses_is_the_envelopes_error(envelope: EnvelopeRequest,
                                                   code: ErrorCode) -> None:
    assert open_envelope(envelope, BROKER) == code


def _dispatcher() -> Dispatcher:
    properties = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:broker"}
    node = SimpleNamespace(settings=SimpleNamespace(
        node_id=1, controller=SimpleNamespace(properties=properties)))
    service = ControllerService(ControllerConfig(node_id=1), bootstrap=DEFAULT_BOOTSTRAP)
    return Dispatcher(node, service)  # type: ignore[arg-type]


def _sent(envelope: EnvelopeRequest, session: Session) -> EnvelopeResponse:
    frame = encode_request(RequestHeader(ApiKey.ENVELOPE, 0, 9, "broker"), envelope)
    answer = decode_response(ApiKey.ENVELOPE, 0, asyncio.run(_dispatcher().handle(frame,
                                                                                   session)))
    assert answer.correlation_id == 9
    body: EnvelopeResponse = answer.body
    return body


def test_an_envelope_needs_cluster_action() -> None:
    stranger = Session(KafkaPrincipal("User", "stranger"), "127.0.0.1:5000")
    answer = _sent(_envelope(_create_topics()), stranger)
    assert (answer.error_code, answer.response_data) == (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)


def test_the_inner_request_is_authorized_as_the_client() -> None:
    """The broker is a super user, alice has no ACL: her CreateTopics is refused inside
    the Envelope's response data, which carries her request's correlation id."""
    answer = _sent(_envelope(_create_topics()), BROKER)
    assert answer.error_code == ErrorCode.NONE and answer.response_data is not None
    inner = decode_response(ApiKey.CREATE_TOPICS, 7, answer.response_data)
    assert inner.correlation_id == CORRELATION_ID
    assert [t.error_code for t in inner.body.topics] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
