"""The iteration orders of the JVM maps Kafka 3.9 hands Jackson when it writes JSON to
ZooKeeper, which decide the key order of the znodes' bytes.

Scala 2.13's ``immutable.HashMap`` (5 entries or more; smaller immutable maps keep insertion
order) is a CHAMP trie: at each level the entries alone in their 5-bit slot come first, by
slot, then the sub-tries of colliding slots, by slot. ``mutable.HashMap`` iterates its table
by bucket, and a bucket's entries by ascending hash. Java's ``Properties`` (config znodes)
is a ``ConcurrentHashMap``: by bucket, a bucket in insertion order except where a resize
reversed it. All were checked against Scala 2.13.15 and Java 17 themselves (jshell on the
kafka-zk jars) and against the captured znodes of docs/design/migration-reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Generic, TypeVar

from pykraft.java import int32, java_string_hash

K = TypeVar("K")
V = TypeVar("V")

_MUTABLE_INITIAL_CAPACITY = 16
_LOAD_FACTOR = 0.75
_CHAMP_BITS = 5
_HASH_BITS = 32


def _champ_hash(text: str) -> int:
    """``scala.collection.Hashing.improve`` of the key's ``hashCode``, unsigned."""
    h = java_string_hash(text) & 0xFFFFFFFF
    h = (h + (~(h << 9) & 0xFFFFFFFF)) & 0xFFFFFFFF
    h ^= h >> 14
    h = (h + (h << 4)) & 0xFFFFFFFF
    return h ^ (h >> 10)


def immutable_map_order(keys: Sequence[str]) -> list[str]:
    """The order an ``immutable.Map`` built from ``keys`` (in this order) iterates them."""
    if len(keys) <= 4:
        return list(keys)  # Map1 .. Map4 keep insertion order
    return _champ_level([(key, _champ_hash(key)) for key in keys], 0)


def _champ_level(entries: list[tuple[str, int]], shift: int) -> list[str]:
    if shift >= _HASH_BITS:
        return [key for key, _ in entries]  # a full collision node keeps insertion order
    slots: dict[int, list[tuple[str, int]]] = {}
    for key, h in entries:
        slots.setdefault((h >> shift) & 31, []).append((key, h))
    alone = [group[0][0] for _, group in sorted(slots.items()) if len(group) == 1]
    nested = [_champ_level(group, shift + _CHAMP_BITS)
              for _, group in sorted(slots.items()) if len(group) > 1]
    return alone + [key for sub in nested for key in sub]


def mutable_map_order(keys: Sequence[str], *, built_with: int = 0) -> list[str]:
    """The order a ``mutable.HashMap`` holding ``keys`` iterates them. ``built_with`` is the
    number of entries of the ``mutable.Map(k -> v, ...)`` literal it was created with (its
    table is sized for them: ``HashMap.from``), 0 for an empty map filled afterwards."""
    capacity = _table_size(int((built_with + 1) / _LOAD_FACTOR)) if built_with \
        else _MUTABLE_INITIAL_CAPACITY
    while len(keys) >= capacity * _LOAD_FACTOR:  # Scala grows on reaching the threshold
        capacity *= 2
    return _mutable_order(keys, java_string_hash, capacity)


def _mutable_order(keys: Iterable[K], hash_code: Callable[[K], int], capacity: int) -> list[K]:
    """By bucket of the improved hash, a bucket by ascending (signed) improved hash."""
    def place(key: K) -> tuple[int, int]:
        h = hash_code(key) & 0xFFFFFFFF
        h ^= h >> 16
        return h & (capacity - 1), int32(h)

    return sorted(keys, key=place)


class ScalaMutableHashMap(Generic[K, V]):
    """A Scala 2.13 ``mutable.HashMap`` as far as its iteration order goes, for the maps a
    long-lived Kafka object keeps and clears (``AbstractControllerBrokerRequestBatch``'s):
    ``put`` grows the table when the size plus one reaches three quarters of it, even when
    the key is already there, ``getOrElseUpdate`` only for a new key, and ``clear`` keeps
    the table (checked in jshell on scala-library 2.13.15)."""

    def __init__(self, hash_code: Callable[[K], int]) -> None:
        self._hash_code = hash_code
        self._capacity = _MUTABLE_INITIAL_CAPACITY
        self._entries: dict[K, V] = {}

    def put(self, key: K, value: V) -> None:
        self._grow_for_one_more()
        self._entries[key] = value

    def get_or_else_update(self, key: K, default: Callable[[], V]) -> V:
        if key not in self._entries:
            self._grow_for_one_more()
            self._entries[key] = default()
        return self._entries[key]

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> list[tuple[K, V]]:
        """The entries in the map's iteration order."""
        order = _mutable_order(self._entries, self._hash_code, self._capacity)
        return [(key, self._entries[key]) for key in order]

    def _grow_for_one_more(self) -> None:
        if len(self._entries) + 1 >= self._capacity * _LOAD_FACTOR:
            self._capacity *= 2


def _table_size(capacity: int) -> int:
    """``mutable.HashMap.tableSizeFor``."""
    return 1 << max(capacity - 1, 4).bit_length()


_PROPERTIES_TABLE = 16  # new Properties(): a ConcurrentHashMap(8), whose table is 16


def properties_order(keys: Sequence[str]) -> list[str]:
    """The order a ``java.util.Properties`` iterates ``keys`` put in this order (distinct):
    a ``ConcurrentHashMap`` that appends to a bucket, resizes when its size reaches three
    quarters of the table, and moves each bucket in ``transfer``'s way (the tail run of
    nodes going to one half kept, the nodes before it prepended). Buckets of 8 keys, which
    Java would turn into trees, are not modelled: no config of Kafka's comes near them."""
    size = _PROPERTIES_TABLE
    table: list[list[tuple[int, str]]] = [[] for _ in range(size)]
    for count, key in enumerate(keys, start=1):
        h = java_string_hash(key) & 0xFFFFFFFF
        h = (h ^ (h >> 16)) & 0x7FFFFFFF
        table[h & (size - 1)].append((h, key))
        if count >= size - (size >> 2):
            table = _transfer(table, size)
            size *= 2
    return [key for bucket in table for _, key in bucket]


def _transfer(table: list[list[tuple[int, str]]], size: int) -> list[list[tuple[int, str]]]:
    moved: list[list[tuple[int, str]]] = [[] for _ in range(2 * size)]
    for index, bucket in enumerate(table):
        if not bucket:
            continue
        last_run = len(bucket) - 1
        while last_run > 0 and bucket[last_run - 1][0] & size == bucket[-1][0] & size:
            last_run -= 1
        low: list[tuple[int, str]] = []
        high: list[tuple[int, str]] = []
        (high if bucket[-1][0] & size else low).extend(bucket[last_run:])
        for node in bucket[:last_run]:
            (high if node[0] & size else low).insert(0, node)
        moved[index], moved[index + size] = low, high
    return moved
