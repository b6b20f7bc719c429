"""Envelope (API 58): a broker's forwarded admin request, opened as Kafka's controller does.

A Kafka broker forwards a client's admin request to the active controller whole (header and
body), with the client's principal (Kafka's principal serde) and address, so the controller
authorizes the client and not the broker (KIP-590). Kafka's ``EnvelopeUtils`` reads, in this
order, the principal (PRINCIPAL_DESERIALIZATION_FAILURE), the client address
(INVALID_REQUEST), the inner header (UNSUPPORTED_VERSION), whether its API may be forwarded
(INVALID_REQUEST) and the inner body (UNSUPPORTED_VERSION); each failure is the Envelope's
own error, with no response data. An inner response refusing with NOT_CONTROLLER is
answered as the Envelope's NOT_CONTROLLER, so the broker looks for the new controller.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from pykraft.controller.responses import error_codes
from pykraft.errors import ProtocolError
from pykraft.messages.kafka.envelope_request import EnvelopeRequest
from pykraft.messages.kafka.envelope_response import EnvelopeResponse
from pykraft.protocol.acl_requests import refused_acl_request
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import RequestFrame, decode_request
from pykraft.protocol.cursor import Reader
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import read_request_prefix
from pykraft.security.principal_serde import (
    PrincipalDeserializationError,
    deserialize_principal,
)
from pykraft.security.session import Session

#: Kafka's ``ApiKeys.forwardable``.
FORWARDABLE: frozenset[int] = frozenset({
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS,
    ApiKey.ALTER_CONFIGS, ApiKey.CREATE_PARTITIONS, ApiKey.CREATE_DELEGATION_TOKEN,
    ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.ELECT_LEADERS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS, ApiKey.ALTER_CLIENT_QUOTAS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    ApiKey.DESCRIBE_QUORUM, ApiKey.UPDATE_FEATURES, ApiKey.UNREGISTER_BROKER,
    ApiKey.ALLOCATE_PRODUCER_IDS, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER,
})


@dataclass(frozen=True, slots=True)
class Forwarded:
    """The client's request inside an Envelope, and the session it is judged by."""

    request: RequestFrame
    session: Session


def open_envelope(envelope: EnvelopeRequest, session: Session) -> Forwarded | ErrorCode:
    """The forwarded request of ``envelope`` (which came on ``session``, the broker's), or
    the Envelope's error refusing it, checked in Kafka's order."""
    try:
        principal = deserialize_principal(envelope.request_principal)
    except PrincipalDeserializationError:
        return ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE
    try:
        host = ipaddress.ip_address(envelope.client_host_address)
    except ValueError:  # not 4 or 16 bytes: Kafka's InetAddress.getByAddress refuses it
        return ErrorCode.INVALID_REQUEST
    data = envelope.request_data
    try:
        api_key, _, _ = read_request_prefix(Reader(data))
    except ProtocolError:
        return ErrorCode.UNSUPPORTED_VERSION
    if api_key not in FORWARDABLE:
        return ErrorCode.INVALID_REQUEST
    try:
        inner = decode_request(data)
    except ProtocolError:
        return ErrorCode.UNSUPPORTED_VERSION
    if refused_acl_request(api_key, inner.body) is not None:  # Kafka cannot parse it
        return ErrorCode.UNSUPPORTED_VERSION
    address = f"[{host}]:0" if host.version == 6 else f"{host}:0"
    return Forwarded(inner, Session(principal, address, session.listener_name,
                                    session.security_protocol, forwarded=True))


def envelope_error(code: ErrorCode) -> EnvelopeResponse:
    """An Envelope refused as a whole: its error, no response data."""
    return EnvelopeResponse(error_code=code)


def envelope_answer(response: object, encoded: bytes) -> EnvelopeResponse:
    """The Envelope carrying the forwarded request's ``response`` (``encoded``: its header
    and body); Kafka's ``buildResponseSend`` turns a NOT_CONTROLLER in it into the
    Envelope's."""
    if ErrorCode.NOT_CONTROLLER in error_codes(response):
        return envelope_error(ErrorCode.NOT_CONTROLLER)
    return EnvelopeResponse(response_data=encoded, error_code=ErrorCode.NONE)
