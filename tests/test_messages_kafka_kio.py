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
from pykraft.messages.kio_adapter import kio_schema
from pykraft.messages.rpc import request_class, response_class
from pykraft.messages.schema import ArrayOf, MessageSchema
from pykraft.messages.wire import MappedPrimitive


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
    """kio 0.6.5 lacks 14 of Kafka 4.4's 618 (message, version) pairs, request and response
    of: ApiVersions v5, TxnOffsetCommit v6, DeleteGroups v3, StreamsGroupHeartbeat v1,
    StreamsGroupDescribe v1, StreamsGroupTopologyDescriptionUpdate v0, UnregisterController
    v0."""
    assert sum(len(kio_types) for _, kio_types in CASES) == 604


# Fields Kafka renamed after kio's release: our name -> kio's.
KAFKA_RENAMES = {
    "generation_id_or_member_epoch": "generation_id",  # TxnOffsetCommitRequest (KIP-1251)
    "acceptable_recovery_lag_legacy": "acceptable_recovery_lag",  # StreamsGroupHeartbeat
}
Shape = list[tuple[str, str, bool, int | None, "Shape | None"]]


def _shape(schema: MessageSchema, version: int | None) -> Shape:
    """(name, wire type, array, tag, nested shape) of the fields present at ``version`` (all
    of them when None, as in kio's one-version classes), in wire order. Names are compared as
    kio spells them: without ``_ms`` (kio types durations) or a trailing ``_`` (``id_``)."""
    shape: Shape = []
    for spec in schema.fields:
        if version is not None and version not in spec.versions:
            continue
        element = spec.type.element if isinstance(spec.type, ArrayOf) else spec.type
        while isinstance(element, MappedPrimitive):
            element = element.base
        nested = _shape(element, version) if isinstance(element, MessageSchema) else None
        tagged = version is None or spec.is_tagged_in(version)
        name = KAFKA_RENAMES.get(spec.attr, spec.attr).removesuffix("_ms").removesuffix("_")
        shape.append((name, element.name, isinstance(spec.type, ArrayOf),
                      spec.tag if tagged else None, nested))
    return shape


@pytest.mark.parametrize(("cls", "kio_types"), CASES, ids=[cls.__name__ for cls, _ in CASES])
def test_fields_are_kios_in_name_type_order_and_tag(
    cls: type, kio_types: list[type[Entity]]
) -> None:
    """What byte comparisons cannot see: two fields of one type swapped or misnamed."""
    for kio_type in kio_types:
        version = int(kio_type.__version__)
        assert _shape(schema_of(cls), version) == _shape(kio_schema(kio_type), None), version


def _kio_bytes(entity: Entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


PAIRS = [(cls, kio_type) for cls, kio_types in CASES for kio_type in kio_types]


@pytest.mark.parametrize(
    ("cls", "kio_type"), PAIRS, ids=[f"{cls.__name__}-v{t.__version__}" for cls, t in PAIRS]
)
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
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
