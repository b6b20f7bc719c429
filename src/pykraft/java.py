"""Java's int arithmetic where Kafka's choices depend on it: ``String.hashCode`` and
``Utils.abs`` pick a group's coordinator partition and a partition's fetcher, and order the
entries of Java's hash maps in the files and outputs pykraft reproduces byte for byte.

Also Java's ``HashMap`` iteration orders and ``Double.toString``, for the outputs and
answers Kafka builds from them.

One definition for every caller: a hash computed another way (unsigned, or over code points
rather than UTF-16 units) sends a client to the wrong coordinator or reorders a file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
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
        return _spread(hash_code(item)) & (capacity - 1)

    return sorted(items, key=bucket)  # sorted() is stable


def java_compute_if_absent_order(keys: Iterable[T], hash_code: Callable[[T], int]) -> list[T]:
    """The iteration order of a Java ``HashMap`` filled by ``computeIfAbsent`` with
    ``keys`` in this order (repeats allowed): unlike ``put``, it puts a new key at the head
    of its bucket, and it resizes before a call (any call) that finds the map above its
    threshold; a resize keeps each bucket's relative order. Kafka's request builders group
    partitions by topic this way (``LeaderAndIsrRequest.Builder.groupByTopic``). Buckets of
    eight keys, which Java would treeify, are not modelled."""
    capacity = 0
    table: list[list[T]] = []
    size = 0
    for key in keys:
        if capacity == 0 or size > capacity * _LOAD_FACTOR:
            capacity = capacity * 2 or _INITIAL_CAPACITY
            grown: list[list[T]] = [[] for _ in range(capacity)]
            for bucket in table:
                for item in bucket:
                    grown[_spread(hash_code(item)) & (capacity - 1)].append(item)
            table = grown
        bucket = table[_spread(hash_code(key)) & (capacity - 1)]
        if key not in bucket:
            bucket.insert(0, key)
            size += 1
    return [key for bucket in table for key in bucket]


def _spread(hash_code: int) -> int:
    """``HashMap.hash``: the hash code with its high half folded into its low half."""
    h = hash_code & 0xFFFFFFFF
    return h ^ (h >> 16)


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
