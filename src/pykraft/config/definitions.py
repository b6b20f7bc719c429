"""Config keys as Kafka's ``ConfigDef`` declares them: type, default, valid values.

Shared by the topic and broker configs the controller validates and by DescribeConfigs,
so a key's type and range are stated once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import IntEnum

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


class ConfigType(IntEnum):
    """DescribeConfigs ``ConfigType`` wire values."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """DescribeConfigs ``ConfigSource`` wire values, highest precedence first for brokers."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One key (Kafka's ``ConfigDef.ConfigKey``): type, default (None = null), range or
    choices for validation, and for a broker key its update mode."""

    name: str
    type: ConfigType
    default: str | None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    doc: str = ""
    update_mode: str = "read-only"
    """``read-only``, ``per-broker`` or ``cluster-wide``, as in Kafka's docs."""

    @property
    def sensitive(self) -> bool:
        """Kafka hides the values of password keys (``KafkaConfig.maybeSensitive``)."""
        return self.type is ConfigType.PASSWORD

    def problem(self, value: str) -> str | None:
        """Why ``value`` is invalid for this key, or None when it is valid."""
        if self.type is ConfigType.BOOLEAN:
            if value.strip().lower() not in ("true", "false"):
                return f"Invalid value {value} for configuration {self.name}: expected a boolean"
            return None
        if self.type is ConfigType.LIST:
            items = [item.strip() for item in value.split(",") if item.strip()]
            bad = [item for item in items if self.choices and item not in self.choices]
            if bad:
                return (f"Invalid value {value} for configuration {self.name}: "
                        f"{bad[0]!r} is not one of {', '.join(self.choices or ())}")
            return None
        if self.type in (ConfigType.STRING, ConfigType.CLASS, ConfigType.PASSWORD):
            if self.choices and value.strip() not in self.choices:
                return (f"Invalid value {value} for configuration {self.name}: "
                        f"String must be one of: {', '.join(self.choices)}")
            return None
        return self._number_problem(value)

    def _number_problem(self, value: str) -> str | None:
        number: float
        try:
            number = float(value) if self.type is ConfigType.DOUBLE else int(value.strip())
        except ValueError:
            return (f"Invalid value {value} for configuration {self.name}: "
                    f"not a number of type {self.type.name}")
        bounds = _INT64 if self.type is ConfigType.LONG else _INT32
        low: float = bounds[0]
        high: float = bounds[1]
        if self.type is ConfigType.DOUBLE:
            low, high = -math.inf, math.inf
            if not math.isfinite(number):
                return f"Invalid value {value} for configuration {self.name}: not finite"
        if self.minimum is not None:
            low = max(low, self.minimum)
        if self.maximum is not None:
            high = min(high, self.maximum)
        if not low <= number <= high:
            bound = f"at least {low}" if number < low else f"at most {high}"
            return f"Invalid value {value} for configuration {self.name}: Value must be {bound}"
        return None
