"""Config keys as Kafka's ``ConfigDef`` declares them: type, default, valid values.

Shared by the topic and broker configs the controller validates and by DescribeConfigs,
so a key's type and range are stated once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import IntEnum

_INT16 = (-(2**15), 2**15 - 1)
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
    or_equal: int | None = None
    """One more valid value outside the range (``compression.gzip.level``'s -1)."""

    @property
    def sensitive(self) -> bool:
        """Kafka hides the values of password keys (``KafkaConfig.maybeSensitive``)."""
        return self.type is ConfigType.PASSWORD

    def problem(self, value: str) -> str | None:
        """Why ``value`` is invalid for this key, or None when it is valid: Kafka's
        ``ConfigException`` text (``ConfigDef.parseType``, then the key's validator)."""
        reason = self._reason(value)
        if reason is None:
            return None
        return f"Invalid value {value} for configuration {self.name}: {reason}"

    def _reason(self, value: str) -> str | None:
        if self.type is ConfigType.BOOLEAN:
            if value.strip().lower() not in ("true", "false"):
                return "Expected value to be either true or false"
            return None
        if self.type is ConfigType.LIST:
            items = [item.strip() for item in value.split(",") if item.strip()]
            bad = [item for item in items if self.choices and item not in self.choices]
            if bad:
                return f"{bad[0]!r} is not one of {', '.join(self.choices or ())}"
            return None
        if self.type in (ConfigType.STRING, ConfigType.CLASS, ConfigType.PASSWORD):
            if self.choices and value.strip() not in self.choices:
                return f"String must be one of: {', '.join(self.choices)}"
            return None
        return self._number_reason(value)

    def _number_reason(self, value: str) -> str | None:
        number = _parse_number(self.type, value)
        if number is None:
            return f"Not a number of type {self.type.name}"
        if self.type is ConfigType.DOUBLE and not math.isfinite(number):
            return "not finite"
        if self.or_equal is not None and number == self.or_equal:
            return None
        low, high = self.minimum, self.maximum
        if self.or_equal is not None and low is not None and high is not None:
            if not low <= number <= high:  # Kafka's BetweenOrEqualValidator
                return (f"Value must be between {_java_number(low)} and {_java_number(high)} "
                        f"or equal to {self.or_equal}")
            return None
        if self.minimum is not None and number < self.minimum:
            return f"Value must be at least {_java_number(self.minimum)}"
        if self.maximum is not None and number > self.maximum:
            return f"Value must be no more than {_java_number(self.maximum)}"
        return None


#: Java's integer types' ranges (Short.parseShort, Integer.parseInt, Long.parseLong).
_BOUNDS = {ConfigType.SHORT: _INT16, ConfigType.INT: _INT32, ConfigType.LONG: _INT64}
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")


def _parse_number(config_type: ConfigType, value: str) -> float | None:
    """The number Java parses from ``value`` trimmed, or None where it throws."""
    text = value.strip()
    if config_type is ConfigType.DOUBLE:
        try:
            return float(text)
        except ValueError:
            return None
    if not _JAVA_INTEGER.fullmatch(text):
        return None
    low, high = _BOUNDS[config_type]
    number = int(text)
    return number if low <= number <= high else None


def _java_number(bound: float) -> str:
    """A range bound as Kafka prints it (an integer key's bound has no fraction)."""
    return str(int(bound)) if bound == int(bound) else str(bound)
