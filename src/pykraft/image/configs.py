"""Dynamic configurations per resource (ConfigRecord); a null value deletes a key."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, KeysView, Mapping
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

    def broker(self, name: str) -> Mapping[str, str]:
        """BROKER ``name``'s dynamic configs (``""``: the cluster default)."""
        return self.get((ConfigResourceType.BROKER, name))

    def records(self) -> Iterator[tuple[object, int]]:
        for resource_type, name in sorted(self.resources):
            configs = self.resources[resource_type, name]
            for key in sorted(configs):
                yield ConfigRecord(resource_type=resource_type, resource_name=name, name=key,
                                   value=configs[key]), 0


class ConfigurationsDelta:
    """Changes on top of an image, copied per touched resource: a write to one topic's
    configs must not copy every other resource's (the controller replays each write)."""

    def __init__(self, image: ConfigurationsImage) -> None:
        self._image = image
        self._changed: dict[ConfigResource, dict[str, str]] = {}
        """Touched resources with their whole new configs; empty means removed."""

    def _configs(self, resource: ConfigResource) -> dict[str, str]:
        configs = self._changed.get(resource)
        if configs is None:
            configs = self._changed[resource] = dict(self._image.get(resource))
        return configs

    @property
    def touched(self) -> KeysView[ConfigResource]:
        """The resources a record touched, changed or not (Kafka's ``changes()``)."""
        return self._changed.keys()

    def replay(self, record: ConfigRecord) -> None:
        configs = self._configs((record.resource_type, record.resource_name))
        if record.value is None:
            configs.pop(record.name, None)
        else:
            configs[record.name] = record.value

    def remove_topic(self, name: str) -> None:
        """A deleted topic takes its configs with it (Kafka does this on RemoveTopicRecord)."""
        self._changed[ConfigResourceType.TOPIC, name] = {}

    def apply(self) -> ConfigurationsImage:
        if not self._changed:
            return self._image
        resources = dict(self._image.resources)
        for resource, configs in self._changed.items():
            if configs:
                resources[resource] = dict(configs)
            else:
                resources.pop(resource, None)
        return ConfigurationsImage(resources)
