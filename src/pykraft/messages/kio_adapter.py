"""Decoding of the ``kio`` protocol classes from untrusted bytes, in one pass.

kio's native reader raises ``KeyError`` on an unknown tagged field (which Kafka peers may
legally send: newer versions add tags), assorted untyped exceptions on bad bytes, and
allocates from array counts before checking them, so a hostile count such as
``ff ff ff ff 0f`` makes it ask for tens of GiB and the process aborts, which no ``except``
can catch. The reader here is this package's generated codec driven by a schema built from
the kio dataclass's own field metadata: like Kafka's generated readers it checks every length
and count against the bytes left before allocating, fails only with the typed
:class:`~pykraft.errors.MessageDecodeError` naming the field path, and hands back the
top-level tagged fields no schema defines (:func:`decode_kio_body`) so a request re-encodes
byte for byte.

kio conventions mirrored here: a zero UUID reads as ``None``, ``error_code`` fields are
``ErrorCode`` members, ``timedelta_*`` fields are timedeltas of milliseconds, ``records`` are
bytes, and ``RequestHeader.client_id`` is a classic nullable string even in header v2.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta, i64Timedelta
from kio.static.protocol import Entity

from pykraft.errors import MessageDecodeError, MessageEncodeError
from pykraft.ids import ZERO_UUID
from pykraft.messages.codec import run_reader, struct_reader, struct_writer
from pykraft.messages.schema import ArrayOf, FieldType, MessageSchema, make_field_spec
from pykraft.messages.versions import ALL_VERSIONS, NO_VERSIONS, Versions
from pykraft.messages.wire import (
    CLASSIC_STRING,
    INT16,
    INT32,
    INT64,
    PRIMITIVES,
    UUID,
    FieldEncodeError,
    FieldReader,
    FieldWriter,
    MappedPrimitive,
    Primitive,
    format_path,
)

E = TypeVar("E", bound=Entity)


def _millis(delta: datetime.timedelta) -> int:
    return round(delta.total_seconds() * 1000)


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _instant(ms: int) -> datetime.datetime | None:
    """kio's reading of a datetime_i64: -1 (Kafka's "none", e.g. ProduceResponse's
    LogAppendTime under CreateTime) is None, anything else a UTC instant."""
    return None if ms == -1 else _EPOCH + datetime.timedelta(milliseconds=ms)


def _instant_millis(value: datetime.datetime | None) -> int:
    return -1 if value is None else round(value.timestamp() * 1000)


_KIO_PRIMITIVES: dict[str, Primitive] = {
    **PRIMITIVES,
    "uuid": MappedPrimitive(
        "uuid",
        UUID,
        decode=lambda value: None if value == ZERO_UUID else value,
        encode=lambda value: ZERO_UUID if value is None else value,
        default=None,
    ),
    "error_code": MappedPrimitive(
        "error_code",
        INT16,
        decode=ErrorCode,
        encode=lambda code: code.value,
        default=ErrorCode.none,
    ),
    "timedelta_i32": MappedPrimitive(
        "timedelta_i32",
        INT32,
        decode=lambda ms: i32Timedelta.parse(datetime.timedelta(milliseconds=ms)),
        encode=_millis,
        default=i32Timedelta.parse(datetime.timedelta(0)),
    ),
    "timedelta_i64": MappedPrimitive(
        "timedelta_i64",
        INT64,
        decode=lambda ms: i64Timedelta.parse(datetime.timedelta(milliseconds=ms)),
        encode=_millis,
        default=i64Timedelta.parse(datetime.timedelta(0)),
    ),
    "datetime_i64": MappedPrimitive(
        "datetime_i64", INT64, decode=_instant, encode=_instant_millis, default=None,
    ),
}

TaggedField = tuple[int, bytes]
"""A raw tagged field: (tag, payload)."""

_SCHEMAS: dict[type, MessageSchema] = {}
_READERS: dict[tuple[type, bool], FieldReader] = {}
_WRITERS: dict[type, FieldWriter] = {}


@dataclass(frozen=True, slots=True)
class KioBody(Generic[E]):
    """A decoded message body and what re-encoding it byte for byte needs."""

    entity: E
    #: Position just after the body.
    end: int
    #: Where the top-level TAG_BUFFER starts; None for a classic (non-flexible) body.
    tags_start: int | None
    #: Top-level tagged fields the schema does not define, raw and in wire order.
    unknown_tags: tuple[TaggedField, ...]


def decode_kio(
    entity_type: type[E], data: bytes, pos: int = 0, end: int | None = None
) -> tuple[E, int]:
    """Decode a kio entity at ``data[pos:end]``; returns (entity, position after it).
    Unknown tags are skipped; any inconsistency raises :class:`MessageDecodeError`."""
    entity, nxt = run_reader(_reader(entity_type, False), _label(entity_type), data, pos, end)
    result: E = entity
    return result, nxt


def decode_kio_body(
    entity_type: type[E], data: bytes, pos: int = 0, end: int | None = None
) -> KioBody[E]:
    """:func:`decode_kio` that also keeps the top-level TAG_BUFFER's position and unknown
    fields (the same single pass over the bytes)."""
    if not entity_type.__flexible__:
        entity, nxt = decode_kio(entity_type, data, pos, end)
        return KioBody(entity, nxt, None, ())
    label = _label(entity_type)
    (entity, tags_start, unknown), nxt = run_reader(
        _reader(entity_type, True), label, data, pos, end
    )
    return KioBody(entity, nxt, tags_start, unknown)


def encode_kio(entity: Entity, prefix: bytes = b"") -> bytes:
    """``prefix`` then a kio entity's bytes, written by the generated writer of its schema
    (the same bytes as kio's writer, which dispatches on every field of every entry: a
    million-entry answer took it 10 s); one buffer, so a large answer is not copied to be
    put behind its header."""
    entity_type = type(entity)
    write = _WRITERS.get(entity_type)
    if write is None:
        write = struct_writer(kio_schema(entity_type), int(entity_type.__version__),
                              bool(entity_type.__flexible__))
        _WRITERS[entity_type] = write
    out = bytearray(prefix)
    try:
        write(out, entity)
    except FieldEncodeError as exc:
        raise MessageEncodeError(f"cannot encode {_label(entity_type)}: "
                                 f"{format_path(exc.path)}: {exc.reason}") from None
    return bytes(out)


def _label(entity_type: type) -> str:
    return f"{entity_type.__module__}.{entity_type.__name__}"


def _reader(entity_type: type[Entity], keep_tags: bool) -> FieldReader:
    """The generated reader of a kio class (cached); ``keep_tags`` as in ``struct_reader``."""
    read = _READERS.get((entity_type, keep_tags))
    if read is None:
        try:
            schema = kio_schema(entity_type)
        except TypeError as exc:
            raise MessageDecodeError(f"cannot decode {entity_type.__name__}: {exc}") from None
        version, flexible = int(entity_type.__version__), bool(entity_type.__flexible__)
        read = struct_reader(schema, version, flexible, keep_tags)[0]
        _READERS[(entity_type, keep_tags)] = read
    return read


def kio_schema(entity_type: type[Entity]) -> MessageSchema:
    """A :class:`MessageSchema` equivalent to a kio entity dataclass (cached)."""
    cached = _SCHEMAS.get(entity_type)
    if cached is not None:
        return cached
    is_header = entity_type.__name__ == "RequestHeader"
    hints = typing.get_type_hints(entity_type)
    specs = []
    for field in dataclasses.fields(entity_type):
        where = f"{entity_type.__name__}.{field.name}"
        field_type, nullable = _classify(hints[field.name], field, where, is_header)
        tag = field.metadata.get("tag")
        specs.append(
            make_field_spec(
                attr=field.name,
                kafka_name=field.name,
                field_type=field_type,
                nullable_versions=ALL_VERSIONS if nullable else NO_VERSIONS,
                tag=tag,
                tagged_versions=NO_VERSIONS if tag is None else ALL_VERSIONS,
                default=_default(field, field_type),
                owner=entity_type.__name__,
            )
        )
    version = int(entity_type.__version__)
    schema = MessageSchema(
        cls=entity_type,
        name=entity_type.__name__,
        fields=tuple(specs),
        valid_versions=Versions(version, version),
        flexible_versions=ALL_VERSIONS if entity_type.__flexible__ else NO_VERSIONS,
        positional=False,  # kio dataclasses are keyword-only
    )
    _SCHEMAS[entity_type] = schema
    return schema


def _classify(
    annotation: Any, field: dataclasses.Field[Any], where: str, is_header: bool
) -> tuple[FieldType, bool]:
    """(field type, nullable) from the annotation and ``kafka_type`` metadata."""
    inner, nullable = _strip_optional(annotation)
    if typing.get_origin(inner) is tuple:
        args = typing.get_args(inner)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"{where}: unsupported tuple type {inner}")
        element, _ = _strip_optional(args[0])
        if _is_entity(element):
            return ArrayOf(kio_schema(element)), nullable
        return ArrayOf(_primitive(field, where)), nullable
    if _is_entity(inner):
        # a tagged struct kio types as optional is absent by default, not KIP-893 nullable
        return kio_schema(inner), nullable and field.metadata.get("tag") is None
    if is_header and field.name == "client_id":
        return CLASSIC_STRING, nullable
    primitive = _primitive(field, where)
    # kio spells "zero UUID" as None: that is a value mapping, not Kafka nullability.
    return primitive, nullable and primitive.nullable_ok


def _is_entity(annotation: Any) -> typing.TypeGuard[type[Entity]]:
    return isinstance(annotation, type) and dataclasses.is_dataclass(annotation)


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _primitive(field: dataclasses.Field[Any], where: str) -> Primitive:
    kafka_type = field.metadata.get("kafka_type")
    primitive = _KIO_PRIMITIVES.get(kafka_type) if isinstance(kafka_type, str) else None
    if primitive is None:
        raise TypeError(f"{where}: unsupported kafka_type {kafka_type!r}")
    return primitive


def _default(field: dataclasses.Field[Any], field_type: FieldType) -> Any:
    """kio's default for an absent tagged field: explicit, else the type's implicit one."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    if isinstance(field_type, ArrayOf):
        return ()
    if isinstance(field_type, MessageSchema):
        return field_type.build()([spec.default for spec in field_type.fields])
    return field_type.default
