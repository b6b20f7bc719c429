"""The abusive requests of the resource-abuse suite, built from the schemas of the generated
message classes (:mod:`pykraft.messages.kafka`): every array of a request repeats one element
(duplicates) as many times as fits the frame limit, fields naming a topic, topic id, group or
cluster name ones the target cluster has (so the request reaches real work, not a cheap
"unknown topic"), other fields keep the schema's defaults (empty strings: the most entries
per byte), and trailing bytes, which Kafka ignores, pad the frame to exactly
``socket.request.max.bytes``. Also the compression bombs: one small batch expanding to
hundreds of MB, per codec."""

from __future__ import annotations

import io
import struct
import uuid
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import cramjam
import lz4.frame
import zstandard

from pykraft.messages import rpc
from pykraft.messages.schema import ArrayOf, FieldSpec, MessageSchema, schema_of
from pykraft.messages.varint import encode_uvarint, encode_varint
from pykraft.protocol.apis import API_SPECS, ApiKey
from pykraft.protocol.frame import encode_frame
from pykraft.protocol.header import (
    RequestHeader,
    encode_request_header,
    request_header_version,
)
from pykraft.records import compression
from pykraft.records.batch import assemble_batch


@dataclass(frozen=True)
class Target:
    """What a request names: a topic with data the cluster has, its id, the cluster id."""

    cluster_id: str
    topic: str
    topic_id: uuid.UUID
    group: str


@dataclass(frozen=True)
class Shape:
    """How one API's request is filled: ``values`` override fields by attribute name,
    wherever they are in the request."""

    values: Mapping[str, Callable[[Target], object]] = field(default_factory=dict)


def _name(target: Target) -> str:
    return target.topic


#: Field values every request gets unless its shape overrides them.
COMMON: Mapping[str, Callable[[Target], object]] = {
    "cluster_id": lambda t: t.cluster_id,
    "topic_id": lambda t: t.topic_id,
    "name": _name, "topic": _name, "topic_name": _name, "resource_name": _name,
    "group_id": lambda t: t.group, "groups": lambda t: t.group,
    "key": lambda t: t.group,
    "partition_max_bytes": lambda t: 1 << 20,
}


def _value(spec: FieldSpec, values: Mapping[str, Callable[[Target], object]],
           target: Target) -> object:
    make = values.get(spec.attr)
    return spec.default if make is None else make(target)


def _written(spec: FieldSpec, version: int) -> bool:
    """Whether ``spec`` is filled: on the wire at ``version`` (a generated class has the
    fields of every version) and not tagged (tagged ones keep their default, not written)."""
    return version in spec.versions and spec.tag is None


def _repeated(spec: FieldSpec, version: int) -> bool:
    return isinstance(spec.type, ArrayOf) and _written(spec, version)


def filled(schema: MessageSchema, n: int, values: Mapping[str, Callable[[Target], object]],
           target: Target, version: int) -> object:
    """An instance of ``schema`` at ``version`` whose every array holds ``n`` copies of one
    element (slow to encode for large ``n``; :func:`encoded` writes the same bytes fast)."""
    built: list[object] = []
    for spec in schema.fields:
        kind = spec.type
        if not _written(spec, version):
            built.append(spec.default)
        elif isinstance(kind, ArrayOf):
            built.append((_element(spec, kind, n, values, target, version),) * n)
        elif isinstance(kind, MessageSchema):
            built.append(filled(kind, n, values, target, version))
        else:
            built.append(_value(spec, values, target))
    return schema.build()(built)


def _element(spec: FieldSpec, kind: ArrayOf, n: int,
             values: Mapping[str, Callable[[Target], object]], target: Target,
             version: int) -> object:
    if isinstance(kind.element, MessageSchema):
        return filled(kind.element, n, values, target, version)
    return _value(spec, values, target) if spec.attr in values else kind.element.default


def encoded(schema: MessageSchema, n: int, values: Mapping[str, Callable[[Target], object]],
            target: Target, version: int, flexible: bool) -> bytes:
    """The bytes of :func:`filled` (same arguments) as Kafka's writers lay them out: each
    repeated element is written once and its bytes repeated, so millions cost little."""
    out = bytearray()
    for spec in schema.fields:
        kind = spec.type
        if not _written(spec, version):
            continue  # default: not written
        nullable = version in spec.nullable_versions
        if isinstance(kind, ArrayOf):
            if isinstance(kind.element, MessageSchema):
                one = encoded(kind.element, n, values, target, version, flexible)
            else:
                item = bytearray()
                kind.element.writer(flexible, False)(item, _element(spec, kind, n, values,
                                                                    target, version))
                one = bytes(item)
            out += encode_uvarint(n + 1) if flexible else struct.pack(">i", n)
            out += one * n
        elif isinstance(kind, MessageSchema):
            if nullable:  # KIP-893: a present nullable struct
                out.append(1)
            out += encoded(kind, n, values, target, version, flexible)
        else:
            kind.writer(flexible, nullable)(out, _value(spec, values, target))
    if flexible:
        out.append(0)  # no tagged fields
    return bytes(out)


def array_depth(schema: MessageSchema, version: int) -> int:
    """How deeply repeated arrays nest in ``schema`` at ``version`` (0: none)."""
    deepest = 0
    for spec in schema.fields:
        kind = spec.type
        inner = kind.element if isinstance(kind, ArrayOf) else kind
        below = (array_depth(inner, version)
                 if isinstance(inner, MessageSchema) and _written(spec, version) else 0)
        deepest = max(deepest, below + (1 if _repeated(spec, version) else 0))
    return deepest


@dataclass(frozen=True)
class Abuse:
    """One abusive frame and what it holds, for the report."""

    frame: bytes
    repeat: int  # how many copies each array holds
    api_key: int
    version: int

    def describe(self) -> str:
        return (f"{ApiKey(self.api_key).name} v{self.version}: {len(self.frame) - 4} bytes, "
                f"every array x{self.repeat}")


def header_bytes(api_key: int, version: int) -> bytes:
    """The request header of version ``version`` of ``api_key`` (correlation id 1)."""
    flexible = API_SPECS[ApiKey(api_key)].is_flexible(version)
    return encode_request_header(RequestHeader(api_key, version, 1, "abuse"),
                                 request_header_version(api_key, version, flexible))


def request_schema(api_key: int) -> MessageSchema:
    """The schema of the request's generated class, one for every version (its fields absent
    at a version are left out by :func:`filled` and :func:`encoded`)."""
    return schema_of(rpc.request_class(api_key))


def largest_request(api_key: int, shape: Shape, target: Target, max_bytes: int) -> Abuse:
    """The request with the largest repeat count whose frame fits ``max_bytes``, padded with
    trailing bytes (which Kafka ignores) to exactly ``max_bytes``."""
    spec = API_SPECS[ApiKey(api_key)]
    version = spec.max_version
    schema = request_schema(api_key)
    values = {**COMMON, **shape.values}
    flexible = spec.is_flexible(version)
    header = header_bytes(api_key, version)

    def size(n: int) -> int:
        return len(header) + len(encoded(schema, n, values, target, version, flexible))

    low, high = 0, 1
    if array_depth(schema, version):
        while size(high) <= max_bytes:
            low, high = high, high * 2
        while low < high - 1:  # the largest count that fits
            middle = (low + high) // 2
            low, high = (middle, high) if size(middle) <= max_bytes else (low, middle)
    payload = header + encoded(schema, low, values, target, version, flexible)
    if len(payload) > max_bytes:
        raise AssertionError(f"{ApiKey(api_key).name}: {len(payload)} bytes > {max_bytes}")
    return Abuse(encode_frame(payload + bytes(max_bytes - len(payload))), low, api_key,
                 version)


# -- compression bombs -------------------------------------------------------------------

#: Each bomb's records expand to this much (its compressed batch is a few KB to a few MB).
BOMB_EXPANDED = 256 << 20
_BOMB_VALUE = 1 << 20  # one record per MiB of zeros
_CHUNK = 1 << 20


def _bomb_records(expanded: int, last_later: int) -> Iterator[bytes]:
    """The uncompressed records of a bomb, in chunks: ``expanded // 1 MiB`` records of
    1 MiB of zeros each (offset deltas 0, 1, ...), the last one ``last_later`` ms later than
    the others (timestamp delta)."""
    zeros = bytes(_CHUNK)
    count = expanded // _BOMB_VALUE
    for index in range(count):
        delta = encode_varint(index)
        later = encode_varint(last_later if index == count - 1 else 0)
        head = b"\x00" + later + delta + b"\x01" + encode_varint(_BOMB_VALUE)
        body_size = len(head) + _BOMB_VALUE + 1
        yield encode_varint(body_size) + head
        yield zeros
        yield b"\x00"  # no headers


def _gzip(chunks: Iterator[bytes]) -> bytes:
    out = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join([*(out.compress(c) for c in chunks), out.flush()])


def _lz4(chunks: Iterator[bytes]) -> bytes:
    out = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                                       block_linked=False)
    return b"".join([out.begin(), *(out.compress(c) for c in chunks), out.flush()])


def _zstd(chunks: Iterator[bytes]) -> bytes:
    out = zstandard.ZstdCompressor(level=3).compressobj()
    return b"".join([*(out.compress(c) for c in chunks), out.flush()])


def _snappy(chunks: Iterator[bytes]) -> bytes:
    """Xerial framing (as Kafka's Java client writes): a header, then int32-length blocks of
    raw snappy, each 32 KiB of input; identical blocks are compressed once."""
    blocks = io.BytesIO()
    pending = b""
    seen: dict[bytes, bytes] = {}
    for chunk in chunks:
        pending += chunk
        while len(pending) >= 32 * 1024:
            block, pending = pending[:32 * 1024], pending[32 * 1024:]
            if block not in seen:
                seen[block] = bytes(cramjam.snappy.compress_raw(block))
            blocks.write(struct.pack(">i", len(seen[block])) + seen[block])
    if pending:
        raw = bytes(cramjam.snappy.compress_raw(pending))
        blocks.write(struct.pack(">i", len(raw)) + raw)
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + blocks.getvalue()


BOMB_CODECS: Mapping[str, tuple[int, Callable[[Iterator[bytes]], bytes]]] = {
    "gzip": (compression.GZIP, _gzip), "snappy": (compression.SNAPPY, _snappy),
    "lz4": (compression.LZ4, _lz4), "zstd": (compression.ZSTD, _zstd)}


def bomb_batch(codec: str, expanded: int, timestamp: int, last_later: int = 0) -> bytes:
    """One v2 batch (no producer id) of ``codec`` whose records expand to ``expanded``, all
    at ``timestamp`` but the last, ``last_later`` ms later."""
    code, squeeze = BOMB_CODECS[codec]
    count = expanded // _BOMB_VALUE
    return assemble_batch(squeeze(_bomb_records(expanded, last_later)), base_offset=0,
                          partition_leader_epoch=-1, attributes=code,
                          last_offset_delta=count - 1, base_timestamp=timestamp,
                          max_timestamp=timestamp + last_later, records_count=count)


def check_bomb(codec: str, batch: bytes) -> int:
    """The bytes ``batch``'s records expand to, by the broker's own codec (a check that the
    bomb is one the broker reads, not garbage it refuses at once)."""
    code, _ = BOMB_CODECS[codec]
    return len(compression.decompress(code, batch[61:]))


def frame_of(api_key: int, version: int, body: object) -> bytes:
    """One size-prefixed request of a generated body at ``version`` (correlation id 1)."""
    return encode_frame(header_bytes(api_key, version) + rpc.encode_body(body, version))
