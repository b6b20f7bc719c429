"""Kafka wire protocol, sans I/O: framing, headers, the API table, the codec, ApiVersions.

Message bodies are the generated classes of :mod:`pykraft.messages.kafka`; this package adds
what a server needs around them: framing with a size limit, header version rules, typed
errors for every malformed input, and the version ranges pykraft advertises per listener.
"""

from pykraft.protocol.apis import API_SPECS, ApiKey, ApiSpec, Listener, api_spec
from pykraft.protocol.codec import (
    RequestFrame,
    ResponseFrame,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from pykraft.protocol.frame import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame
from pykraft.protocol.header import RequestHeader

__all__ = [
    "API_SPECS",
    "DEFAULT_MAX_FRAME_SIZE",
    "ApiKey",
    "ApiSpec",
    "FrameDecoder",
    "Listener",
    "RequestFrame",
    "RequestHeader",
    "ResponseFrame",
    "api_spec",
    "decode_request",
    "decode_response",
    "encode_frame",
    "encode_request",
    "encode_response",
]
