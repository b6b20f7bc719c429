"""The one decode pass of an inbound request refuses lies about sizes, for several APIs.

Hypothesis builds a valid request, then either cuts it short or rewrites the count of its
first array so that it claims more elements than bytes remain (up to the largest count the
encoding can carry). Either way ``decode_request`` must raise :class:`MalformedMessageError`
(never another exception), name the array when the count was inflated, and allocate nothing
proportional to the lie.
"""

from __future__ import annotations

import dataclasses
import struct
import tracemalloc
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pykraft.errors import MalformedMessageError, MessageDecodeError
from pykraft.messages.varint import encode_uvarint
from pykraft.protocol.apis import ApiKey, api_spec
from pykraft.protocol.codec import decode_request, encode_request
from pykraft.protocol.header import RequestHeader, encode_request_header, request_header_version
from rpc_strategies import request_bodies

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
MAX_FRAME = 4000
_INT32 = struct.Struct(">i")

#: (api, version) -> (bytes of fixed-width fields before the first array, its name as Kafka's
#: schema spells it, which the generated classes' decode errors name).
FIRST_ARRAY = {
    (ApiKey.METADATA, 4): (0, "Topics"),  # classic
    (ApiKey.METADATA, 12): (0, "Topics"),  # flexible
    (ApiKey.CREATE_TOPICS, 4): (0, "Topics"),
    (ApiKey.CREATE_TOPICS, 7): (0, "Topics"),
    (ApiKey.DELETE_TOPICS, 6): (0, "Topics"),
    (ApiKey.DESCRIBE_CONFIGS, 4): (0, "Resources"),
    (ApiKey.ALTER_CONFIGS, 1): (0, "Resources"),
    (ApiKey.DESCRIBE_QUORUM, 2): (0, "Topics"),
    # replica_id, max_wait, min_bytes, max_bytes, isolation_level, session id and epoch
    (ApiKey.FETCH, 13): (4 + 4 + 4 + 4 + 1 + 4 + 4, "Topics"),
}
CASES = sorted(FIRST_ARRAY)
IDS = [f"{key.name}-v{version}" for key, version in CASES]


@dataclasses.dataclass(frozen=True)
class Request:
    wire: bytes
    body_start: int
    flexible: bool


def _request(data: st.DataObject, api_key: ApiKey, version: int) -> Request:
    body = data.draw(request_bodies(api_key, version))
    flexible = api_spec(api_key).is_flexible(version)  # type: ignore[union-attr]
    header = RequestHeader(api_key, version, 1, "client")
    header_size = len(encode_request_header(header, request_header_version(api_key, version,
                                                                           flexible)))
    wire = encode_request(header, body)
    assume(len(wire) <= MAX_FRAME)
    decode_request(wire)  # the frame hypothesis built is valid
    return Request(wire, header_size, flexible)


def _refused(wire: bytes) -> MalformedMessageError:
    """The error ``decode_request`` raises, checking that it allocated under 1 MiB."""
    tracemalloc.start()
    try:
        with pytest.raises(MalformedMessageError) as info:
            decode_request(wire)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    return info.value


def _count_at(wire: bytes, pos: int, flexible: bool) -> int:
    """Bytes of the array count at ``pos`` (a uvarint when flexible, else an int32)."""
    if not flexible:
        return 4
    size = 1
    while wire[pos + size - 1] & 0x80:
        size += 1
    return size


@pytest.mark.parametrize(("api_key", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_truncated_frames_are_malformed(api_key: ApiKey, version: int, data: st.DataObject) -> None:
    request = _request(data, api_key, version)
    cut = data.draw(st.integers(0, len(request.wire) - 1))
    _refused(request.wire[:cut])


@pytest.mark.parametrize(("api_key", "version"), CASES, ids=IDS)
@SETTINGS
@given(data=st.data())
def test_inflated_counts_are_malformed(api_key: ApiKey, version: int, data: st.DataObject) -> None:
    request = _request(data, api_key, version)
    offset, field = FIRST_ARRAY[(api_key, version)]
    at = request.body_start + offset
    rest = request.wire[at + _count_at(request.wire, at, request.flexible) :]
    largest = 2**32 - 2 if request.flexible else 2**31 - 1
    count = data.draw(st.integers(len(rest) + 1, largest))
    encode: Callable[[int], bytes] = (
        (lambda n: encode_uvarint(n + 1)) if request.flexible else _INT32.pack
    )
    error = _refused(request.wire[:at] + encode(count) + rest)
    assert isinstance(error, MessageDecodeError)
    assert error.path.replace("_", "").lower() == field.lower()
    assert f"array of {count} elements cannot fit" in str(error)
