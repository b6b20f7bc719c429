"""Conformance rows for Envelope (API 58, controller listener only): a broker's forwarded
request, refused as a whole for each malformed part (EnvelopeUtils' order), or answered as
the forwarded request's own response inside the Envelope's."""

from __future__ import annotations

import struct
from typing import Any

from conformance.cases import Case, Meaning, code, top_error
from conformance.harness import CONTROLLER, Run
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.envelope_request import EnvelopeRequest
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.header import RequestHeader
from pykraft.security.principal_serde import serialize_principal
from pykraft.security.session import ANONYMOUS

INNER_CORRELATION_ID = 77
#: Before v5's configs and v7's topic id: an answer with neither compares alike with Kafka's.
CREATE_TOPICS_VERSION = 4
LOCALHOST = bytes([127, 0, 0, 1])


def _create_topics(run: Run) -> bytes:
    """A validate-only CreateTopics (nothing is created), as its client sent it."""
    request = CreateTopicsRequest(topics=(CreatableTopic(
        name=f"envelope-{run.version}", num_partitions=1, replication_factor=1),),
        validate_only=True)
    return encode_request(RequestHeader(ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION,
                                        INNER_CORRELATION_ID, "forwarded"), request)


def _header_only(api_key: int, version: int) -> bytes:
    """A request header without a body (api key, version, correlation id, null client)."""
    return struct.pack(">hhih", api_key, version, INNER_CORRELATION_ID, -1)


def _envelope(run: Run, data: bytes, *, principal: bytes | None = None,
              address: bytes = LOCALHOST) -> Any:
    return run.generated(ApiKey.ENVELOPE, EnvelopeRequest(
        request_data=data, client_host_address=address,
        request_principal=serialize_principal(ANONYMOUS) if principal is None else principal))


def _forwarded(body: Any, _run: Run) -> Meaning:
    if body.response_data is None:
        return code(body.error_code)
    inner = decode_response(ApiKey.CREATE_TOPICS, CREATE_TOPICS_VERSION, body.response_data)
    return (code(body.error_code), inner.correlation_id,
            [code(t.error_code) for t in inner.body.topics])


ENVELOPE = [
    Case("Envelope", 58, "principal_of_another_version",
         lambda r: _envelope(r, _create_topics(r), principal=b"\x00\x07\x00\x00\x00\x00"),
         top_error, lambda _r: "PRINCIPAL_DESERIALIZATION_FAILURE", listeners=(CONTROLLER,)),
    Case("Envelope", 58, "client_address_of_three_bytes",
         lambda r: _envelope(r, _create_topics(r), address=LOCALHOST[:3]),
         top_error, lambda _r: "INVALID_REQUEST", listeners=(CONTROLLER,)),
    Case("Envelope", 58, "unreadable_header",
         lambda r: _envelope(r, b"\x00"),
         top_error, lambda _r: "UNSUPPORTED_VERSION", listeners=(CONTROLLER,)),
    Case("Envelope", 58, "not_forwardable",
         lambda r: _envelope(r, _header_only(ApiKey.FETCH, 4)),
         top_error, lambda _r: "INVALID_REQUEST", listeners=(CONTROLLER,)),
    Case("Envelope", 58, "removed_inner_version",
         lambda r: _envelope(r, _header_only(ApiKey.CREATE_TOPICS, 1)),
         top_error, lambda _r: "UNSUPPORTED_VERSION", listeners=(CONTROLLER,)),
    Case("Envelope", 58, "forwarded_create_topics",
         lambda r: _envelope(r, _create_topics(r)), _forwarded,
         lambda _r: ("NONE", INNER_CORRELATION_ID, ["NONE"]), listeners=(CONTROLLER,)),
]
