"""Java's int arithmetic where Kafka's choices depend on it: ``String.hashCode`` and
``Utils.abs`` pick a group's coordinator partition and a partition's fetcher, and order the
entries of Java's hash maps in the files and outputs pykraft reproduces byte for byte.

Also Java's ``HashMap`` iteration order and ``Double.toString``, for the outputs and
answers Kafka builds from them.

One definition for every caller: a hash computed another way (unsigned, or over code points
rather than UTF-16 units) sends a client to the wrong coordinator or reorders a file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import TypeVar

T = TypeVar("T")
_INT32_MIN = -(2**31)
_LOAD_FACTOR = 0.75
_INITIAL_CAPACITY = 16


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


def java_hash_order(items: Sequence[T], hash_code: Callable[[T], int], *,
                    initial_capacity: int = _INITIAL_CAPACITY) -> list[T]:
    """The iteration order of a Java ``HashMap`` (or ``HashSet``) holding ``items``
    inserted in this order: by bucket of the spread hash at the final table size, then
    insertion order (resizes keep the relative order within a bucket). The table starts at
    ``initial_capacity`` rounded up to a power of two (``new HashMap<>(n)``; the default
    constructor's is 16) and doubles while the entries exceed three quarters of it."""
    capacity = 1
    while capacity < initial_capacity:
        capacity *= 2
    while len(items) > capacity * _LOAD_FACTOR:
        capacity *= 2

    def bucket(item: T) -> int:
        h = hash_code(item) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(items, key=bucket)  # sorted() is stable


def java_double_text(value: float) -> str:
    """Java's ``Double.toString``: shortest digits, scientific ``d.dddE±n`` outside
    [1e-3, 1e7)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    assert isinstance(exponent, int), "a finite value's exponent"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{exponent + len(text) - 1}"
