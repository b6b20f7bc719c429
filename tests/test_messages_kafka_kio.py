"""Differential check of the generated RPC classes against kio's, for every (api, version)
both define: kio's writer and pykraft's generated codec produce and accept the same bytes.

kio is generated from an older Kafka's schemas by another generator, so agreement on every
shared version checks the facts, the rendering and the codec at once."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.static.protocol import Entity

import kio_strategies  # noqa: F401  (registers kio's special types with hypothesis)
from pykraft.messages import decode, encode, schema_of
from pykraft.messages.kafka import API_MESSAGES
from pykraft.messages.rpc import request_class, response_class


def _shared() -> list[tuple[type, list[type[Entity]]]]:
    """(generated class, kio's class of each version both define), for every message."""
    cases = []
    for key in API_MESSAGES:
        for cls, load in ((request_class(key), load_request_schema),
                          (response_class(key), load_response_schema)):
            valid = schema_of(cls).valid_versions
            assert valid is not None and valid.high is not None
            kio_types: list[type[Entity]] = []
            for version in range(valid.low, valid.high + 1):
                try:
                    kio_types.append(load(key, version))
                except KioIndexError:
                    continue  # a version newer than kio's Kafka
            cases.append((cls, kio_types))
    return cases


CASES = _shared()


def test_kio_shares_nearly_every_version() -> None:
    """kio 0.6.5 lacks 14 of Kafka 4.4's 618 (message, version) pairs: ApiVersions v5,
    TxnOffsetCommit v6, DescribeUserScramCredentials... (listed in the slice's report)."""
    assert sum(len(kio_types) for _, kio_types in CASES) == 604


def _kio_bytes(entity: Entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


PAIRS = [(cls, kio_type) for cls, kio_types in CASES for kio_type in kio_types]


@pytest.mark.parametrize(
    ("cls", "kio_type"), PAIRS, ids=[f"{cls.__name__}-v{t.__version__}" for cls, t in PAIRS]
)
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_kio_bytes_decode_and_re_encode_identically(
    cls: type, kio_type: type[Entity], data: st.DataObject
) -> None:
    version = int(kio_type.__version__)
    raw = _kio_bytes(data.draw(st.from_type(kio_type)))
    assert encode(decode(cls, version, raw), version) == raw


@pytest.mark.parametrize(("cls", "kio_types"), CASES, ids=[cls.__name__ for cls, _ in CASES])
def test_generated_bytes_are_what_kio_reads_and_writes(
    cls: type, kio_types: list[type[Entity]]
) -> None:
    for kio_type in kio_types:
        raw = encode(cls(), int(kio_type.__version__))
        entity, end = entity_reader(kio_type)(raw, 0)
        assert end == len(raw)
        assert _kio_bytes(entity) == raw
