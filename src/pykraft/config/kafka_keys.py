"""Kafka's broker keys as ``ConfigDef``s: each key's type, Kafka default, update mode and
valid values (a range, or choices), from the generated :mod:`kafka_broker_table`.

Kept apart from :mod:`pykraft.config.broker_configs` (which adds pykraft's defaults and
docs) so that :class:`~pykraft.config.server.ServerConfig` can check a properties file's
values as Kafka's ``KafkaConfig`` does before anything reads them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pykraft.config.definitions import ConfigDef, ConfigType
from pykraft.config.kafka_broker_table import KAFKA_BROKER_CONFIGS

_RANGE = re.compile(r"\[(-?[\d.]+),\.\.\.(?:,(-?[\d.]+))?\]")


def _checks(valid: str) -> tuple[float | None, float | None, tuple[str, ...] | None]:
    """(minimum, maximum, choices) from Kafka's "Valid Values" text."""
    bounds = _RANGE.fullmatch(valid)
    if bounds:
        low, high = bounds.groups()
        return float(low), None if high is None else float(high), None
    if valid:
        return None, None, tuple(item.strip() for item in valid.strip("[]").split(","))
    return None, None, None


def _defs() -> dict[str, ConfigDef]:
    defs = {}
    for name, type_name, default, mode, valid in KAFKA_BROKER_CONFIGS:
        minimum, maximum, choices = _checks(valid)
        defs[name] = ConfigDef(name, ConfigType[type_name], default, minimum=minimum,
                               maximum=maximum, choices=choices, update_mode=mode)
    return defs


#: Every public Kafka broker key, by name.
KAFKA_KEY_DEFS: Mapping[str, ConfigDef] = _defs()


def value_problems(props: Mapping[str, str]) -> list[str]:
    """Kafka's ``ConfigDef`` check of every Kafka key's value in ``props`` (its type, then
    its range or choices), in Kafka's words and naming the key as written."""
    return [problem for name, value in sorted(props.items())
            if (found := KAFKA_KEY_DEFS.get(name)) is not None
            and (problem := found.problem(value)) is not None]
