"""Framing and encoding that do not go through pykraft's codec.

A request is encoded by kafka-python (its ``ApiMessage`` classes carry Kafka's JSON
schemas) when it has the API and version, else by pykraft's generated classes and their codec
(:mod:`pykraft.messages.rpc`, called directly, not through the server's codec); the response
is decoded by the same library. Connections are plain blocking sockets.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any

from pykraft.messages import rpc

CLIENT_ID = "conformance"
CORRELATION_ID = 4242
TIMEOUT_S = 20.0


class ConnectionClosed(Exception):  # noqa: N818 - what the test expects, not a failure
    """The server closed the connection instead of answering."""


@dataclass(frozen=True)
class Answer:
    """A decoded response: its body and the correlation id the server echoed."""

    body: Any
    correlation_id: int


def exchange(address: tuple[str, int], frame: bytes) -> bytes:
    """Send one framed request on a fresh connection; the response frame (no size)."""
    with socket.create_connection(address, timeout=TIMEOUT_S) as sock:
        sock.sendall(frame)
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        return _read_exactly(sock, size)


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < count:
        chunk = sock.recv(count - len(chunks))
        if not chunk:
            raise ConnectionClosed(f"closed after {len(chunks)} of {count} bytes")
        chunks += chunk
    return bytes(chunks)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


#: A top-level tagged field no schema defines: Kafka skips unknown tags (KIP-482).
UNKNOWN_TAG = bytes([0x01, 0xE1, 0x3C, 0x03]) + b"xyz"  # 1 field, tag 7777, 3 bytes


def kafka_python_call(address: tuple[str, int], request: Any, response_class: Any, *,
                      unknown_tag: bool = False, client_id: str = CLIENT_ID) -> Answer:
    """``request`` is a kafka-python versioned request (e.g. ``MetadataRequest[4](...)``);
    with ``unknown_tag`` its (flexible, tag-less) body ends with :data:`UNKNOWN_TAG`."""
    request.with_header(correlation_id=CORRELATION_ID, client_id=client_id)
    encoded = bytes(request.encode(header=True))
    if unknown_tag:
        if encoded[-1:] != b"\x00":
            raise AssertionError("the body does not end with an empty tag section")
        encoded = encoded[:-1] + UNKNOWN_TAG
    payload = exchange(address, framed(encoded))
    body = response_class.decode(payload, version=request.API_VERSION, header=True)
    return Answer(body, body.header.correlation_id)


def generated_call(address: tuple[str, int], api_key: int, version: int,
                   request: object) -> Answer:
    """``request`` is a generated class (:mod:`pykraft.messages.kafka`), sent at ``version``
    by their codec: for the APIs and versions kafka-python lacks."""
    header = rpc.RequestHeader(api_key, version, CORRELATION_ID, CLIENT_ID)
    payload = exchange(address, framed(rpc.encode_request(header, request)))
    return generated_answer(api_key, version, payload)


def generated_answer(api_key: int, version: int, payload: bytes) -> Answer:
    """A response frame (no size) to ``api_key`` v``version``, read by the generated
    classes, header included (trailing bytes refused)."""
    frame = rpc.decode_response(api_key, version, payload)
    return Answer(frame.body, frame.correlation_id)


def raw_header(api_key: int, version: int) -> bytes:
    """A request header v1 (non-flexible) with no body, for APIs or versions the server
    should refuse without reading further."""
    client = CLIENT_ID.encode()
    return struct.pack(">hhih", api_key, version, CORRELATION_ID, len(client)) + client
