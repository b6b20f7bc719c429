"""Java's int arithmetic where Kafka's choices depend on it: ``String.hashCode`` and
``Utils.abs`` pick a group's coordinator partition and a partition's fetcher, and order the
entries of Java's hash maps in the files and outputs pykraft reproduces byte for byte.

One definition for every caller: a hash computed another way (unsigned, or over code points
rather than UTF-16 units) sends a client to the wrong coordinator or reorders a file.
"""

from __future__ import annotations

_INT32_MIN = -(2**31)


def int32(value: int) -> int:
    """``value`` wrapped to a Java ``int`` (two's complement, 32 bits)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``h = 31*h + c`` over UTF-16 code units, as an int32."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return int32(h)


def java_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that ``Integer.MIN_VALUE`` maps to 0."""
    return 0 if value == _INT32_MIN else abs(value)
