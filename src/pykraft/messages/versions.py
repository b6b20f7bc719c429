"""Kafka's version ranges as written in the message schemas: ``"0+"``, ``"1-3"``, ``"2"``,
``"none"``.

Fields, nullability, tagging and flexibility are all expressed as such ranges, so one small
type keeps the field declarations readable and identical to the Kafka JSON they mirror.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of versions; ``high=None`` means open ended, ``low > high`` empty."""

    low: int
    high: int | None

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Parse Kafka's notation; raises ``ValueError`` on anything else (a schema bug)."""
        spec = text.strip()
        if spec == "none":
            return NO_VERSIONS
        if spec.endswith("+"):
            return cls(_parse_int(spec[:-1], text), None)
        if "-" in spec:
            low_text, _, high_text = spec.partition("-")
            low, high = _parse_int(low_text, text), _parse_int(high_text, text)
            if high < low:
                raise ValueError(f"empty version range {text!r}")
            return cls(low, high)
        single = _parse_int(spec, text)
        return cls(single, single)

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return self.low <= version and (self.high is None or version <= self.high)

    @property
    def is_empty(self) -> bool:
        return self.high is not None and self.high < self.low

    def __str__(self) -> str:
        if self.is_empty:
            return "none"
        if self.high is None:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


def _parse_int(part: str, whole: str) -> int:
    if not part.isdigit():
        raise ValueError(f"invalid version range {whole!r}")
    return int(part)


NO_VERSIONS = Versions(0, -1)
ALL_VERSIONS = Versions(0, None)
