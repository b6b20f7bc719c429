"""Coordinator partitions: Java's String.hashCode and Kafka's Utils.abs (trap 1).

Expected hashes and partitions were printed by a JVM (OpenJDK's ``String.hashCode()`` and
``Utils.abs(h) % 50``), not computed by the code under test.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.group.partitioning import partition_for
from pykraft.java import java_abs, java_string_hash


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("my-group", -1906497762),
        ("orders-consumer", -1204742690),
        ("polygenelubricants", -(2**31)),
        ("\U0001f600", 1772899),  # one code point, two UTF-16 units
        ("é", 233),
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_integer_min_value_goes_to_partition_zero() -> None:
    assert java_abs(-(2**31)) == 0
    assert partition_for("polygenelubricants", 50) == 0


@pytest.mark.parametrize(
    ("group", "partition"),
    [
        ("", 0),
        ("a", 47),
        ("hello", 22),
        ("my-group", 12),
        ("orders-consumer", 40),  # "& 0x7fffffff" would give 8
        ("\U0001f600", 49),
        ("é", 33),
    ],
)
def test_partition_for_matches_kafka(group: str, partition: int) -> None:
    assert partition_for(group, 50) == partition


@given(st.text(max_size=30))
def test_hash_is_an_int32_and_matches_the_definition(text: str) -> None:
    units = text.encode("utf-16-be", "surrogatepass")
    codes = [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
    exact = sum(c * 31 ** (len(codes) - 1 - i) for i, c in enumerate(codes))
    wrapped = (exact + 2**31) % 2**32 - 2**31
    assert java_string_hash(text) == wrapped


def test_no_partitions_is_an_error() -> None:
    with pytest.raises(ValueError):
        partition_for("g", 0)
