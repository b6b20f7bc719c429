"""Writing ``.properties`` files byte for byte like Java 17's ``Properties.store``.

Kafka writes ``meta.properties`` with ``Properties.store(out, "")``: a ``#`` line for the
empty comment, a ``#`` line with ``Date.toString()``, then ``key=value`` lines escaped by
``saveConvert`` (``\\uXXXX`` for anything outside printable ASCII, since the stream is
ISO-8859-1). Java 17 iterates the ``ConcurrentHashMap`` behind ``Properties``, so the line
order is hash-bucket order; :func:`java_store_order` replays that map's inserts, resizes and
tree bins so a Kafka-written file is reproduced exactly. (Java 18+ sorts keys instead.)
Reading is :func:`pykraft.config.properties.parse_properties`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from pykraft.java import java_string_hash

_INITIAL_TABLE = 16  # new Properties() -> new ConcurrentHashMap<>(8) -> 16 bins
_TREEIFY_THRESHOLD = 8
_UNTREEIFY_THRESHOLD = 6
_MIN_TREEIFY_CAPACITY = 64
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_SIMPLE_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


def _spread(hash_code: int) -> int:
    """``ConcurrentHashMap.spread``: ``(h ^ (h >>> 16)) & HASH_BITS``."""
    unsigned = hash_code & 0xFFFFFFFF
    return (unsigned ^ (unsigned >> 16)) & 0x7FFFFFFF


class _Bin:
    """One hash bucket: its nodes in traversal order and whether it is a red-black TreeBin."""

    __slots__ = ("keys", "tree")

    def __init__(self, keys: list[str], tree: bool) -> None:
        self.keys = keys
        self.tree = tree


class _ConcurrentHashMapOrder:
    """Just enough of Java 17's ``ConcurrentHashMap.putVal`` to know its iteration order."""

    def __init__(self) -> None:
        self.table: list[_Bin] = [_Bin([], False) for _ in range(_INITIAL_TABLE)]
        self.size_ctl = _INITIAL_TABLE - (_INITIAL_TABLE >> 2)
        self.count = 0

    def put(self, key: str) -> None:
        node_hash = _spread(java_string_hash(key))
        bucket = self.table[node_hash & (len(self.table) - 1)]
        if key in bucket.keys:
            return  # a replaced value keeps its node
        if bucket.tree:
            bucket.keys.insert(0, key)  # putTreeVal links the new node in front of `first`
            existing = 2  # putVal's binCount for tree bins: never treeifies again
        else:
            existing = len(bucket.keys)
            bucket.keys.append(key)
        if existing >= _TREEIFY_THRESHOLD:
            self._treeify(bucket)
        self.count += 1
        while self.count >= self.size_ctl:
            self._transfer()

    def _treeify(self, bucket: _Bin) -> None:
        if len(self.table) < _MIN_TREEIFY_CAPACITY:
            self._presize(len(self.table) << 1)
        else:
            bucket.tree = True

    def _presize(self, size: int) -> None:
        wanted = 1 << (size + (size >> 1) + 1 - 1).bit_length()  # tableSizeFor
        while wanted > self.size_ctl:
            self._transfer()

    def _transfer(self) -> None:
        old = len(self.table)
        new_table = [_Bin([], False) for _ in range(old * 2)]
        for index, bucket in enumerate(self.table):
            low, high = (
                self._split_tree(bucket.keys, old) if bucket.tree
                else self._split_list(bucket.keys, old)
            )
            new_table[index] = low
            new_table[index + old] = high
        self.table = new_table
        self.size_ctl = (old * 2) - (old >> 1)

    @staticmethod
    def _split_list(keys: list[str], old: int) -> tuple[_Bin, _Bin]:
        # The longest tail of nodes going to the same half is moved as is ("lastRun"); the
        # nodes before it are pushed one by one onto the front of their half, reversing them.
        bits = [_spread(java_string_hash(key)) & old for key in keys]
        run_start = len(keys)
        while run_start > 0 and bits[run_start - 1] == bits[-1]:
            run_start -= 1
        low: list[str] = []
        high: list[str] = []
        if keys:
            (high if bits[-1] else low).extend(keys[run_start:])
        for key, bit in zip(keys[:run_start], bits[:run_start], strict=True):
            (high if bit else low).insert(0, key)
        return _Bin(low, False), _Bin(high, False)

    @staticmethod
    def _split_tree(keys: list[str], old: int) -> tuple[_Bin, _Bin]:
        low = [key for key in keys if not _spread(java_string_hash(key)) & old]
        high = [key for key in keys if _spread(java_string_hash(key)) & old]
        return (
            _Bin(low, len(low) > _UNTREEIFY_THRESHOLD),
            _Bin(high, len(high) > _UNTREEIFY_THRESHOLD),
        )


def java_store_order(keys: Iterable[str]) -> list[str]:
    """The order Java 17 ``Properties.store`` writes keys set in the given insertion order."""
    table = _ConcurrentHashMapOrder()
    for key in keys:
        table.put(key)
    return [key for bucket in table.table for key in bucket.keys]


def java_date(moment: datetime) -> str:
    """``java.util.Date.toString()``: ``EEE MMM dd HH:mm:ss zzz yyyy`` in English."""
    if moment.tzinfo is None:
        raise ValueError("java_date needs a timezone-aware datetime")
    zone = moment.tzname() or "UTC"
    return (
        f"{_DAYS[moment.weekday()]} {_MONTHS[moment.month - 1]} {moment.day:02d} "
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d} {zone} {moment.year}"
    )


def escape(text: str, *, is_key: bool) -> str:
    """``Properties.saveConvert`` with unicode escaping (the ISO-8859-1 stream case)."""
    out: list[str] = []
    for index, char in enumerate(text):
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif 61 < code < 127:
            out.append(char)
        elif char == " ":
            out.append("\\ " if index == 0 or is_key else " ")
        elif char in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[char])
        elif char in "=:#!":
            out.append("\\" + char)
        elif code < 0x20 or code > 0x7E:
            units = char.encode("utf-16-be", "surrogatepass")
            for unit in range(0, len(units), 2):
                out.append(f"\\u{units[unit] << 8 | units[unit + 1]:04X}")
        else:
            out.append(char)
    return "".join(out)


def store(items: Sequence[tuple[str, str]], moment: datetime) -> bytes:
    """The bytes ``Properties.store(out, "")`` writes for ``items`` set in this order."""
    values = dict(items)
    lines = ["#", "#" + java_date(moment)]
    lines.extend(
        f"{escape(key, is_key=True)}={escape(values[key], is_key=False)}"
        for key in java_store_order(values)
    )
    return ("\n".join(lines) + "\n").encode("latin-1")
