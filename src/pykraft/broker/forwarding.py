"""A client's admin request forwarded inside an Envelope (API 58), as Kafka's broker does.

Kafka's ``ForwardingManager`` sends the client's request as it came (header and body: its
client id, correlation id and version), the client's principal in Kafka's principal serde
(``DefaultKafkaPrincipalBuilder``: type, name and whether a delegation token authenticated
it: the controller refuses token requests from such a client) and the client's address,
so the controller authorizes the client and not the broker. Of the Envelope's answer: NONE
carries the client's response, read at its version (one that does not parse is
UNKNOWN_SERVER_ERROR); NOT_CONTROLLER is retried on the next controller; UNSUPPORTED_VERSION
closes the client's connection (the controller changed to one that lacks the client's
version, and the client should reconnect and learn the versions again); any other error is
the broker's misconfiguration and the client gets UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import ipaddress

from pykraft.errors import ProtocolError
from pykraft.messages.kafka.envelope_request import EnvelopeRequest
from pykraft.messages.kafka.envelope_response import EnvelopeResponse
from pykraft.protocol.codec import RequestFrame, decode_response, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.error_answer import error_answer
from pykraft.security.principal_serde import serialize_principal
from pykraft.security.session import Session


class EnvelopeRefusedError(Exception):
    """The controller cannot take the client's version (UNSUPPORTED_VERSION): Kafka closes
    the client's connection."""


def envelope_for(request: RequestFrame, session: Session) -> EnvelopeRequest:
    """``request``, which came on ``session``, wrapped for the active controller (pure: a
    large one is built off the loop)."""
    data = encode_request(request.header, request.body, request.unknown_tags, request.trailing)
    host = ipaddress.ip_address(session.client_host)
    return EnvelopeRequest(request_data=data,
                           request_principal=serialize_principal(session.principal),
                           client_host_address=host.packed)


def unwrapped(envelope: EnvelopeResponse, request: RequestFrame) -> object:
    """The client's response inside ``envelope``, or the answer refusing ``request`` that
    Kafka's ``ForwardingManager`` gives for the Envelope's error (NOT_CONTROLLER kept, for
    the caller's retry); raises :class:`EnvelopeRefusedError` for UNSUPPORTED_VERSION."""
    code = ErrorCode(envelope.error_code)
    if code == ErrorCode.UNSUPPORTED_VERSION:
        raise EnvelopeRefusedError("the active controller lacks the request's version")
    if code == ErrorCode.NONE and envelope.response_data is not None:
        try:
            return decode_response(request.api_key, request.api_version,
                                   envelope.response_data).body
        except ProtocolError:
            pass  # Kafka's parseResponse: UNKNOWN_SERVER_ERROR
    refusal = code if code == ErrorCode.NOT_CONTROLLER else ErrorCode.UNKNOWN_SERVER_ERROR
    return error_answer(request.api_key, request.body, refusal)
