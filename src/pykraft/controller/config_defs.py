"""The topic and broker configuration keys the controller accepts, with their types,
ranges and defaults, so bad values are refused before a ConfigRecord is written.

Topics: every key of Kafka 4.4's ``LogConfig`` (:mod:`pykraft.config.topic_keys`); any
other is INVALID_CONFIG, as Kafka answers. Brokers: the dynamic keys pykraft applies at run
time (:data:`~pykraft.config.broker_configs.APPLIED_DYNAMIC_CONFIGS`); a key Kafka knows but
pykraft cannot change on a running node is refused as Kafka refuses a read-only key (but the
replication throttle rates:
:data:`~pykraft.config.broker_configs.ALTERABLE_BROKER_CONFIGS`), and a key nobody knows
is stored as Kafka stores it (a plugin's own key, or a removed one such as
``zookeeper.connect``).
"""

from __future__ import annotations

from collections.abc import Mapping

from pykraft.config.broker_configs import ALTERABLE_BROKER_CONFIGS, BROKER_CONFIG_DEFS
from pykraft.config.definitions import ConfigDef, ConfigSource, ConfigType
from pykraft.config.topic_keys import TOPIC_CONFIGS, TOPIC_KEYS
from pykraft.image.configs import ConfigResourceType

__all__ = ["BROKER_CONFIGS", "BROKER_CONFIG_DEFS", "TOPIC_CONFIGS", "ConfigDef", "ConfigSource",
           "ConfigType", "definitions"]

BROKER_CONFIGS = ALTERABLE_BROKER_CONFIGS


def definitions(resource_type: int) -> Mapping[str, ConfigDef] | None:
    """The keys of a resource type, or None for a type the controller does not store."""
    if resource_type == ConfigResourceType.TOPIC:
        return TOPIC_KEYS
    if resource_type == ConfigResourceType.BROKER:
        return BROKER_CONFIGS
    return None
