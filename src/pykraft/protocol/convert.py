"""Convert a kio message entity to another version's class of the same API.

The raft core speaks only the latest version of each RPC; peers and tools may speak older
ones (an older ``kafka-metadata-quorum.sh`` asks DescribeQuorum v0 or v1). Kafka's generated
messages are one class for all versions, so "converting" there is just writing at another
version. kio has one class per version instead, so we copy field by field, by name,
recursively: fields the target lacks are dropped (that is what writing at an older version
does), fields only the target has get their schema default, or the type's zero when the
schema declares none.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
from collections.abc import Hashable
from functools import cache
from typing import Any, TypeVar

from kio.static.constants import EntityType
from kio.static.primitive import i32Timedelta, i64Timedelta

from pykraft.protocol.errors import ErrorCode

T = TypeVar("T")

_ZERO_BY_KAFKA_TYPE: dict[str, object] = {
    "bool": False,
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "float64": 0.0,
    "string": "",
    "bytes": b"",
    "error_code": ErrorCode.NONE,
    "timedelta_i32": i32Timedelta.parse(datetime.timedelta(0)),
    "timedelta_i64": i64Timedelta.parse(datetime.timedelta(0)),
}


def is_entity_class(value: object) -> bool:
    """kio's generated message classes all carry an ``EntityType`` in ``__type__``."""
    return isinstance(value, type) and isinstance(getattr(value, "__type__", None), EntityType)


def convert(entity: object, target: type[T]) -> T:
    """``entity`` re-expressed as an instance of ``target`` (same API, another version);
    ``entity`` itself when it is a ``target`` already (always so for a generated class, which
    serves every version)."""
    if type(entity) is target and isinstance(entity, target):
        return entity
    if not is_entity_class(type(entity)) or not is_entity_class(target):
        raise TypeError(f"convert needs kio entities, got {type(entity).__name__} -> "
                        f"{getattr(target, '__name__', target)!r}")
    source_key = getattr(entity, "__api_key__", None)
    target_key = getattr(target, "__api_key__", None)
    if source_key != target_key:
        raise TypeError(f"{type(entity).__name__} (api {source_key}) cannot become "
                        f"{target.__name__} (api {target_key})")
    return _convert_entity(entity, target)  # type: ignore[no-any-return]


def _convert_entity(entity: object, target: type) -> Any:
    values: dict[str, object] = {}
    for field in _fields(target):
        if hasattr(entity, field.name):
            values[field.name] = _convert_value(getattr(entity, field.name), field.type)
        else:
            values[field.name] = default_value(field)
    return target(**values)


def _convert_value(value: object, annotation: object) -> object:
    nested = entity_in(annotation)
    if nested is None or value is None:
        return value
    if isinstance(value, tuple):
        return tuple(_convert_entity(item, nested) for item in value)
    return _convert_entity(value, nested)


def default_value(field: dataclasses.Field[Any]) -> object:
    """The schema default of ``field`` if kio declares one, else the zero of its type."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    annotation = field.type
    if _is_optional(annotation):
        return None
    if typing.get_origin(annotation) is tuple:
        return ()
    nested = entity_in(annotation)
    if nested is not None:
        return nested(**{f.name: default_value(f) for f in _fields(nested)})
    kafka_type = field.metadata.get("kafka_type")
    if kafka_type in _ZERO_BY_KAFKA_TYPE:
        return _ZERO_BY_KAFKA_TYPE[kafka_type]
    raise TypeError(f"no default for field {field.name} of kafka type {kafka_type!r}")


@cache
def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(cls)


def _is_optional(annotation: object) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and (
        type(None) in typing.get_args(annotation)
    )


def entity_in(annotation: object) -> type | None:
    """The entity class inside ``Entity``, ``Entity | None``, ``tuple[Entity, ...]`` or
    ``tuple[Entity, ...] | None`` (Metadata's nullable topic list)."""
    return _entity_in(annotation)


@cache  # annotations are few and hashable; walking them was most of a conversion
def _entity_in(annotation: Hashable) -> type | None:
    if is_entity_class(annotation):
        return annotation  # type: ignore[return-value]
    for arg in typing.get_args(annotation):
        found = entity_in(arg)
        if found is not None:
            return found
    return None
