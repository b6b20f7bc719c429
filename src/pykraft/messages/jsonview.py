"""Messages as Kafka's generated JSON converters print them (dump-log, metadata shell).

Field names are the schema names with the first letter lowered (``featureLevel``,
``kRaftVersion``), only fields present in the version appear, in wire order; tagged fields
appear only when they differ from their default, as on the wire. UUIDs are Kafka's base64
text, bytes are standard base64. :func:`from_json_dict` reads that JSON back into a message
(captured request logs become messages to compare with).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pykraft.messages.schema import ArrayOf, FieldType, MessageSchema, schema_of

M = TypeVar("M")


def to_json_dict(msg: object, version: int) -> dict[str, Any]:
    """The JSON object (as Python dict) Kafka would print for ``msg`` at ``version``."""
    return _struct_json(schema_of(type(msg)), msg, version)


def _struct_json(schema: MessageSchema, obj: object, version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec in schema.fields:
        if version not in spec.versions:
            continue
        value = getattr(obj, spec.attr)
        if spec.is_tagged_in(version) and value == spec.default:
            continue
        out[spec.json_name] = _value_json(spec.type, value, version)
    return out


def _value_json(field_type: FieldType, value: Any, version: int) -> Any:
    if value is None:
        return None
    if isinstance(field_type, MessageSchema):
        return _struct_json(field_type, value, version)
    if isinstance(field_type, ArrayOf):
        return [_value_json(field_type.element, item, version) for item in value]
    return field_type.to_json(value)


def from_json_dict(cls: type[M], version: int, obj: Mapping[str, Any]) -> M:
    """The message of class ``cls`` that :func:`to_json_dict` prints as ``obj`` at
    ``version``; fields the version lacks or the JSON leaves out keep their defaults, and a
    key the version does not define is refused (a JSON of another api or version)."""
    message: M = _struct_from_json(schema_of(cls), obj, version)
    return message


def _struct_from_json(schema: MessageSchema, obj: Mapping[str, Any], version: int) -> Any:
    present = {spec.json_name: spec for spec in schema.fields if version in spec.versions}
    unknown = set(obj) - set(present)
    if unknown:
        raise ValueError(f"{schema.name} v{version} has no field {sorted(unknown)}")
    values = {present[key].attr: _value_from_json(present[key].type, value, version)
              for key, value in obj.items()}
    return schema.cls(**values)


def _value_from_json(field_type: FieldType, value: Any, version: int) -> Any:
    if value is None:
        return None
    if isinstance(field_type, MessageSchema):
        return _struct_from_json(field_type, value, version)
    if isinstance(field_type, ArrayOf):
        return tuple(_value_from_json(field_type.element, item, version) for item in value)
    return field_type.from_json(value)
