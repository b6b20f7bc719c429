"""Declaring Kafka messages as frozen dataclasses whose fields carry Kafka's schema.

A message is written the way Kafka's JSON schema reads, one field per line in wire order::

    @message(versions="0-3", flexible="0+")
    @dataclass(frozen=True, slots=True)
    class RegisterBrokerRecord:
        broker_id: int = kafka_field("int32")
        is_migrating_zk_broker: bool = kafka_field("bool", versions="2+")
        ...
        log_dirs: tuple[uuid.UUID, ...] = kafka_field(
            "[]uuid", versions="3+", tag=0, tagged_versions="3+"
        )

Nested structs use ``@message()`` without versions: they inherit the enclosing message's
version and flexibility. Every field has Kafka's default (0, "", empty, the zero UUID or the
schema's ``default``), so messages can be built with keywords for just the fields that matter.
The Kafka field name is derived from the attribute (``topic_id`` -> ``TopicId``) unless
``name=`` overrides it (``KRaftVersion``).

A class whose message has flexible versions may end with ``unknown_tagged_fields:
tuple[TaggedField, ...] = unknown_tags()`` (the generated classes do): the tagged fields its
schema does not define, kept raw as read and written back among the known ones in tag order,
as Kafka's ``_unknownTaggedFields``, so a message from a newer peer re-encodes byte for byte.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pykraft.messages.versions import ALL_VERSIONS, NO_VERSIONS, Versions
from pykraft.messages.wire import CLASSIC_STRING, PRIMITIVES, Primitive

_SPEC_KEY = "pykraft.kafka_field"
_UNSET: Any = object()
_UNKNOWN_TAGS_MARK = "unknown tagged fields"

UNKNOWN_TAGS = "unknown_tagged_fields"
"""The attribute keeping a struct's unknown tagged fields (declared by :func:`unknown_tags`)."""

TaggedField = tuple[int, bytes]
"""A raw tagged field: (tag, payload)."""


@dataclass(frozen=True, slots=True)
class ArrayOf:
    """Kafka ``[]T``: elements are a primitive or a nested struct."""

    element: Primitive | MessageSchema


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a message as Kafka's schema describes it."""

    attr: str
    kafka_name: str
    type: FieldType
    versions: Versions
    nullable_versions: Versions
    tag: int | None
    tagged_versions: Versions
    default: Any
    #: Kafka's ``ignorable``: a non-default value is dropped, not refused, when written at a
    #: version that lacks the field.
    ignorable: bool = False

    @property
    def json_name(self) -> str:
        """Kafka's JSON converters print the schema name with its first letter lowered."""
        return self.kafka_name[:1].lower() + self.kafka_name[1:]

    def is_tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged_versions


@dataclass(frozen=True, slots=True, eq=False)
class MessageSchema:
    """A message or nested struct. ``valid_versions`` is None for nested structs, which
    follow their parent. Identity-hashed: compiled codecs are cached per schema object."""

    cls: type
    name: str
    fields: tuple[FieldSpec, ...]
    valid_versions: Versions | None
    flexible_versions: Versions
    positional: bool = True  # construct with cls(*values); False -> keywords (kw_only classes)
    #: The class ends with :data:`UNKNOWN_TAGS` (declared with :func:`unknown_tags`).
    keeps_unknown_tags: bool = False

    def build(self) -> Callable[[list[Any]], Any]:
        """A constructor taking the field values in declaration order."""
        cls = self.cls
        if self.positional:
            return lambda values: cls(*values)
        names = [f.attr for f in self.fields]
        return lambda values: cls(**dict(zip(names, values, strict=True)))

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions

    @property
    def highest_version(self) -> int:
        valid = self.valid_versions
        if valid is None or valid.high is None:
            raise TypeError(f"{self.name} has no highest version")
        return valid.high


FieldType = Primitive | ArrayOf | MessageSchema


@dataclass(frozen=True, slots=True)
class _Declared:
    """What ``kafka_field`` knows before the decorator learns the attribute name."""

    type: Primitive | ArrayOf | type
    versions: str
    nullable_versions: str
    tag: int | None
    tagged_versions: str | None
    name: str | None
    ignorable: bool


_SCHEMAS: dict[type, MessageSchema] = {}


def schema_of(cls: type) -> MessageSchema:
    """The schema registered for a ``@message`` class."""
    try:
        return _SCHEMAS[cls]
    except KeyError:
        raise TypeError(f"{cls.__name__} is not a @message class") from None


def array(element: str | type) -> ArrayOf:
    """``[]element`` where element is a Kafka primitive name or a ``@message`` struct."""
    if isinstance(element, str):
        return ArrayOf(_primitive(element))
    return ArrayOf(schema_of(element))


def kafka_field(
    kafka_type: str | type | ArrayOf,
    *,
    versions: str = "0+",
    nullable_versions: str = "none",
    tag: int | None = None,
    tagged_versions: str | None = None,
    default: Any = _UNSET,
    name: str | None = None,
    ignorable: bool = False,
    flexible_versions: str | None = None,
) -> Any:
    """A dataclass field carrying its Kafka spec. ``kafka_type`` is a primitive name
    (``"int32"``), ``"[]int32"``, ``array(Struct)`` or a nested ``@message`` struct class.
    ``flexible_versions="none"`` keeps a string classic in flexible versions, the one
    field-level flexibility Kafka's schemas use (RequestHeader.ClientId)."""
    declared_type: Primitive | ArrayOf | type
    if flexible_versions is not None:
        if (kafka_type, flexible_versions) != ("string", "none"):
            raise TypeError("only a string field may set flexible_versions, to 'none'")
        declared_type = CLASSIC_STRING
    elif isinstance(kafka_type, str):
        declared_type = (
            array(kafka_type[2:]) if kafka_type.startswith("[]") else _primitive(kafka_type)
        )
    else:
        declared_type = kafka_type
    if (tag is None) != (tagged_versions is None):
        raise TypeError("tag and tagged_versions go together")
    declared = _Declared(
        declared_type, versions, nullable_versions, tag, tagged_versions, name, ignorable
    )
    metadata = {_SPEC_KEY: declared}
    if default is not _UNSET:
        return dataclasses.field(default=default, metadata=metadata)
    if isinstance(declared_type, type):
        return dataclasses.field(default_factory=declared_type, metadata=metadata)
    if isinstance(declared_type, ArrayOf):
        return dataclasses.field(default=(), metadata=metadata)
    return dataclasses.field(default=declared_type.default, metadata=metadata)


def unknown_tags() -> tuple[TaggedField, ...]:
    """The dataclass field :data:`UNKNOWN_TAGS` of a class, last: ``()`` by default, left out
    of ``repr`` (Kafka's ``toString`` leaves them out too) but compared, as Kafka's
    ``equals`` compares them."""
    return dataclasses.field(default=(), repr=False, metadata={_SPEC_KEY: _UNKNOWN_TAGS_MARK})


def unknown_tags_of(msg: object) -> tuple[TaggedField, ...]:
    """The unknown tagged fields a message keeps (none for a class that keeps none)."""
    kept: tuple[TaggedField, ...] = getattr(msg, UNKNOWN_TAGS, ())
    return kept


T = TypeVar("T")


def message(
    *, versions: str | None = None, flexible: str = "none", name: str | None = None
) -> Callable[[type[T]], type[T]]:
    """Register a dataclass as a Kafka message (``versions`` given) or nested struct."""

    def register(cls: type[T]) -> type[T]:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"@message must be applied on top of @dataclass ({cls.__name__})")
        declared = dataclasses.fields(cls)
        keeps = bool(declared) and declared[-1].metadata.get(_SPEC_KEY) == _UNKNOWN_TAGS_MARK
        if keeps:
            declared = declared[:-1]
            if dataclasses.fields(cls)[-1].name != UNKNOWN_TAGS:
                raise TypeError(f"{cls.__name__}: unknown_tags() declares {UNKNOWN_TAGS}")
        _SCHEMAS[cls] = MessageSchema(
            cls=cls,
            name=name or cls.__name__,
            fields=tuple(_field_spec(cls, f) for f in declared),
            valid_versions=None if versions is None else Versions.parse(versions),
            flexible_versions=Versions.parse(flexible),
            keeps_unknown_tags=keeps,
        )
        return cls

    return register


def _field_spec(cls: type, field: dataclasses.Field[Any]) -> FieldSpec:
    declared = field.metadata.get(_SPEC_KEY)
    if not isinstance(declared, _Declared):
        raise TypeError(f"{cls.__name__}.{field.name} is not declared with kafka_field()")
    field_type = schema_of(declared.type) if isinstance(declared.type, type) else declared.type
    if field.default is not dataclasses.MISSING:
        default = field.default
    elif field.default_factory is not dataclasses.MISSING:
        default = field.default_factory()
    else:  # pragma: no cover - kafka_field always sets one
        raise TypeError(f"{cls.__name__}.{field.name} has no default")
    if default is None and declared.nullable_versions == "none":
        raise TypeError(f"{cls.__name__}.{field.name}: default None needs nullable_versions")
    return make_field_spec(
        attr=field.name,
        kafka_name=declared.name or _camel(field.name),
        field_type=field_type,
        versions=Versions.parse(declared.versions),
        nullable_versions=Versions.parse(declared.nullable_versions),
        tag=declared.tag,
        tagged_versions=(
            NO_VERSIONS
            if declared.tagged_versions is None
            else Versions.parse(declared.tagged_versions)
        ),
        default=default,
        owner=cls.__name__,
        ignorable=declared.ignorable,
    )


def make_field_spec(
    *,
    attr: str,
    kafka_name: str,
    field_type: FieldType,
    versions: Versions = ALL_VERSIONS,
    nullable_versions: Versions = NO_VERSIONS,
    tag: int | None = None,
    tagged_versions: Versions = NO_VERSIONS,
    default: Any = None,
    owner: str = "?",
    ignorable: bool = False,
) -> FieldSpec:
    """Build a spec and reject combinations Kafka's generator also rejects."""
    where = f"{owner}.{kafka_name}"
    if not nullable_versions.is_empty:
        if isinstance(field_type, MessageSchema) and tag is not None:
            raise TypeError(f"{where}: nullable tagged structs are not supported")
        if isinstance(field_type, Primitive) and not field_type.nullable_ok:
            raise TypeError(f"{where}: a {field_type.name} cannot be nullable")
    return FieldSpec(
        attr,
        kafka_name,
        field_type,
        versions,
        nullable_versions,
        tag,
        tagged_versions,
        default,
        ignorable,
    )


def _primitive(name: str) -> Primitive:
    try:
        return PRIMITIVES[name]
    except KeyError:
        raise TypeError(f"unknown Kafka type {name!r}") from None


def _camel(attr: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in attr.split("_"))
