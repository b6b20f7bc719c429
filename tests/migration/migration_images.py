"""The reference run's metadata log as images: the captured ``--cluster-metadata-decoder``
records turned back into records and replayed batch by batch, as a controller's metadata
loader publishes them (one delta per committed batch)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from migration_captures import CAPTURED, log_records

from pykraft.ids import uuid_from_str
from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
from pykraft.messages.schema import ArrayOf, FieldType, MessageSchema, schema_of
from pykraft.messages.wire import BYTES, UUID, MappedPrimitive
from pykraft.records.metadata import METADATA_RECORD_NAMES, METADATA_RECORD_TYPES, MetadataRecord

FINALISED = "metadata-D-finalised"
_KEYS = {name: key for key, name in METADATA_RECORD_NAMES.items()}


def record_from_json(obj: dict[str, Any]) -> MetadataRecord:
    """A decoder line's ``{"type", "version", "data"}`` back into a record."""
    api_key = _KEYS[obj["type"]]
    schema = schema_of(METADATA_RECORD_TYPES[api_key])
    return MetadataRecord(api_key, obj["version"], _struct(schema, obj["data"]))


def _struct(schema: MessageSchema, data: dict[str, Any]) -> Any:
    values = {spec.attr: _value(spec.type, data[spec.json_name])
              for spec in schema.fields if spec.json_name in data}
    return schema.cls(**values)


def _value(field_type: FieldType, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(field_type, MessageSchema):
        return _struct(field_type, value)
    if isinstance(field_type, ArrayOf):
        return tuple(_value(field_type.element, item) for item in value)
    if isinstance(field_type, MappedPrimitive):
        return field_type.decode(_value(field_type.base, value))
    if field_type is UUID:
        return uuid_from_str(value)
    if field_type is BYTES:
        return base64.b64decode(value)
    return value


@dataclass(frozen=True, slots=True)
class Published:
    """One committed batch: the image before, the delta of its records, the image after."""

    previous: MetadataImage
    delta: MetadataDelta
    image: MetadataImage

    @property
    def offset(self) -> int:
        return self.image.provenance.last_offset

    @property
    def epoch(self) -> int:
        return self.image.provenance.last_epoch


def published(name: str = FINALISED) -> Iterator[Published]:
    """Every batch of the log, replayed (the reference run's log has no aborted
    transaction, so a load's records are published with their batch)."""
    records = log_records(f"{name}.records")
    image = MetadataImage()
    for line in (CAPTURED / f"{name}.batches").read_text().splitlines():
        base, last, _, epoch, _ = line.split()
        delta = MetadataDelta(image)
        for offset in range(int(base), int(last) + 1):
            if offset in records:
                delta.replay(record_from_json(records[offset]))
        after = delta.apply(Provenance(int(last), int(epoch)))
        yield Published(image, delta, after)
        image = after


def image_at(offset: int, name: str = FINALISED) -> MetadataImage:
    """The image once the batch ending at ``offset`` is published."""
    for batch in published(name):
        if batch.offset == offset:
            return batch.image
    raise KeyError(f"no batch of {name} ends at offset {offset}")
