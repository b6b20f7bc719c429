"""Dynamic configurations per resource (ConfigRecord); a null value deletes a key."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum

from pykraft.records.metadata import ConfigRecord


class ConfigResourceType(IntEnum):
    """Kafka's ``ConfigResource.Type`` wire values (the ones a KRaft controller stores)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


ConfigResource = tuple[int, str]
"""(resource type, resource name); a broker's name is its id, "" for the cluster default."""


@dataclass(frozen=True, slots=True)
class ConfigurationsImage:
    resources: Mapping[ConfigResource, Mapping[str, str]] = dataclasses.field(
        default_factory=dict
    )

    def get(self, resource: ConfigResource) -> Mapping[str, str]:
        return self.resources.get(resource, {})

    def records(self) -> Iterator[tuple[object, int]]:
        for resource_type, name in sorted(self.resources):
            configs = self.resources[resource_type, name]
            for key in sorted(configs):
                yield ConfigRecord(resource_type=resource_type, resource_name=name, name=key,
                                   value=configs[key]), 0


class ConfigurationsDelta:
    def __init__(self, image: ConfigurationsImage) -> None:
        self._resources = {resource: dict(c) for resource, c in image.resources.items()}

    def replay(self, record: ConfigRecord) -> None:
        resource = (record.resource_type, record.resource_name)
        configs = self._resources.setdefault(resource, {})
        if record.value is None:
            configs.pop(record.name, None)
        else:
            configs[record.name] = record.value
        if not configs:
            del self._resources[resource]

    def remove_topic(self, name: str) -> None:
        """A deleted topic takes its configs with it (Kafka does this on RemoveTopicRecord)."""
        self._resources.pop((ConfigResourceType.TOPIC, name), None)

    def apply(self) -> ConfigurationsImage:
        return ConfigurationsImage({r: dict(c) for r, c in self._resources.items()})
