"""Client quotas in the metadata log (KIP-546): entity -> quota key -> value.

The controller writes ClientQuotaRecords for AlterClientQuotas, brokers answer
DescribeClientQuotas from their image (pykraft does not enforce the quotas yet), and an
image carries them into its snapshots as Kafka's ClientQuotasImage does: a Kafka node loading
a snapshot a pykraft node wrote would otherwise lose every quota. The entity types and the
keys each accepts are Kafka's (``ClientQuotaEntity``, ``QuotaConfig``).
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Iterable, Iterator, KeysView, Mapping
from dataclasses import dataclass, field

from pykraft.java import int32, java_string_hash
from pykraft.records.metadata import ClientQuotaRecord, EntityData

USER, CLIENT_ID, IP = "user", "client-id", "ip"


class QuotaType(enum.Enum):
    """The ConfigDef type of a quota key: what values the controller accepts for it."""

    LONG = "a LONG"
    INT = "an INT"
    DOUBLE = "a DOUBLE"


#: Kafka's ``QuotaConfig.userAndClientQuotaConfigs()``: the keys of user and client-id
#: entities.
USER_CLIENT_QUOTAS = {"producer_byte_rate": QuotaType.LONG,
                      "consumer_byte_rate": QuotaType.LONG,
                      "request_percentage": QuotaType.DOUBLE,
                      "controller_mutation_rate": QuotaType.DOUBLE}
#: Kafka's ``QuotaConfig.ipConfigs()``: the one key of ip entities.
IP_QUOTAS = {"connection_creation_rate": QuotaType.INT}

QuotaEntity = tuple[tuple[str, str | None], ...]
"""(entity type, name) pairs sorted by type; a None name is the type's default entity.
Sorted is also the order of Kafka's HashMap for every entity Kafka accepts (client-id before
user; ip alone), so a snapshot's EntityData come in Kafka's order."""


def quota_entity(entity: Iterable[EntityData]) -> QuotaEntity:
    """Kafka's ClientQuotaImage.dataToEntity: a map by type, so order and repeats vanish."""
    return tuple(sorted({data.entity_type: data.entity_name for data in entity}.items()))


def literal_ip(host: str) -> bool:
    """An IPv4 or IPv6 literal (bracketed or not): what ``InetAddress.getByName`` takes for
    an ip entity's name without a lookup."""
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def entity_hash(entity: Iterable[tuple[str, str | None]]) -> int:
    """``ClientQuotaEntity.hashCode``: ``Objects.hash(entries)``, a map's hash being the sum
    of its entries' ``key.hashCode() ^ value.hashCode()`` (0 for a null name)."""
    total = sum(java_string_hash(kind) ^ (0 if name is None else java_string_hash(name))
                for kind, name in entity)
    return int32(31 + total)


def entity_order(entity: QuotaEntity) -> tuple[tuple[str, bool, str], ...]:
    """A total order for snapshots: a default (None) name sorts before any name."""
    return tuple((kind, name is not None, name or "") for kind, name in entity)


@dataclass(frozen=True, slots=True)
class ClientQuotasImage:
    """Entity -> its quotas; an entity is only present with at least one key."""

    entities: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=dict)

    def records(self) -> Iterator[tuple[object, int]]:
        """Kafka's ClientQuotasImage.write: one record per key, at every metadata.version.
        Kafka iterates hash maps; pykraft sorts, so its own snapshots are reproducible."""
        for entity in sorted(self.entities, key=entity_order):
            data = tuple(EntityData(entity_type=kind, entity_name=name)
                         for kind, name in entity)
            quotas = self.entities[entity]
            for key in sorted(quotas):
                yield ClientQuotaRecord(entity=data, key=key, value=quotas[key],
                                        remove=False), 0


class ClientQuotasDelta:
    """Quota changes on top of an image; None removes a key."""

    def __init__(self, image: ClientQuotasImage) -> None:
        self._image = image
        self._changes: dict[QuotaEntity, dict[str, float | None]] = {}

    @property
    def touched(self) -> KeysView[QuotaEntity]:
        """The entities a record touched, changed or not (Kafka's ``changes()``)."""
        return self._changes.keys()

    def replay(self, record: ClientQuotaRecord) -> None:
        changes = self._changes.setdefault(quota_entity(record.entity), {})
        changes[record.key] = None if record.remove else record.value

    def apply(self) -> ClientQuotasImage:
        if not self._changes:
            return self._image
        entities = dict(self._image.entities)
        for entity, changes in self._changes.items():
            merged = {**entities.get(entity, {}), **changes}
            quotas = {key: value for key, value in merged.items() if value is not None}
            if quotas:
                entities[entity] = quotas
            else:
                entities.pop(entity, None)
        return ClientQuotasImage(entities)
