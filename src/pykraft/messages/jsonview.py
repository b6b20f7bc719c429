"""Messages as Kafka's generated JSON converters print them (dump-log, metadata shell).

Field names are the schema names with the first letter lowered (``featureLevel``,
``kRaftVersion``), only fields present in the version appear, in wire order; tagged fields
appear only when they differ from their default, as on the wire. UUIDs are Kafka's base64
text, bytes are standard base64.
"""

from __future__ import annotations

from typing import Any

from pykraft.messages.schema import ArrayOf, FieldType, MessageSchema, schema_of


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
