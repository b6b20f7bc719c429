"""The resource-abuse suite's request builder writes what the generated classes' codec writes,
only faster: for every API pykraft serves, the bytes of :func:`abuse_requests.encoded` equal
:func:`pykraft.messages.rpc.encode_body` of the same request built as objects, at several
repeat counts; the largest request fills the frame limit exactly; the bombs expand as told."""

from __future__ import annotations

import uuid

import pytest
from abuse_requests import (
    BOMB_CODECS,
    COMMON,
    Shape,
    Target,
    array_depth,
    bomb_batch,
    check_bomb,
    encoded,
    filled,
    largest_request,
    request_schema,
)

from pykraft.messages import rpc
from pykraft.protocol.apis import API_SPECS, ApiKey
from pykraft.protocol.codec import decode_request

TARGET = Target("q1w2e3r4t5y6u7i8o9p0aa", "abuse", uuid.UUID(int=7), "abuse-group")
KEYS = sorted(API_SPECS)


@pytest.mark.parametrize("api_key", KEYS, ids=[ApiKey(k).name for k in KEYS])
@pytest.mark.parametrize("repeat", [0, 1, 3, 130])
def test_encoded_is_the_codec_s_encoding(api_key: int, repeat: int) -> None:
    """130: compact array lengths past one varint byte; deep schemas at a smaller count
    (130 per level of four levels is 285 million objects)."""
    spec = API_SPECS[ApiKey(api_key)]
    version = spec.max_version
    schema = request_schema(api_key)
    repeat = min(repeat, round(130_000 ** (1 / max(1, array_depth(schema, version)))))
    body = filled(schema, repeat, COMMON, TARGET, version)
    assert encoded(schema, repeat, COMMON, TARGET, version,
                   spec.is_flexible(version)) == rpc.encode_body(body, version)


@pytest.mark.parametrize("api_key", KEYS, ids=[ApiKey(k).name for k in KEYS])
def test_the_largest_request_fills_the_limit_and_decodes(api_key: int) -> None:
    abuse = largest_request(api_key, Shape(), TARGET, 64 << 10)
    assert len(abuse.frame) == 4 + (64 << 10)
    decoded = decode_request(abuse.frame[4:])
    assert (decoded.api_key, decoded.api_version) == (api_key, abuse.version)
    bigger = largest_request(api_key, Shape(), TARGET, 128 << 10)
    assert bigger.repeat >= abuse.repeat  # the count grows with the limit


@pytest.mark.parametrize("codec", list(BOMB_CODECS))
def test_a_bomb_expands_as_told(codec: str) -> None:
    batch = bomb_batch(codec, 8 << 20, 0)
    assert len(batch) < 1 << 20
    assert check_bomb(codec, batch) >= 8 << 20
