"""The aborted-transaction index (``.txnindex``): Kafka's bytes, search, truncation."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.storage.index_file import CorruptIndexError
from pykraft.storage.txn_index import ENTRY, AbortedTxn, TransactionIndex


def test_an_entry_is_kafkas_34_bytes_and_the_file_appears_with_the_first(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path, 0)
    assert not path.exists() and index.all() == []
    index.append(AbortedTxn(producer_id=5, first_offset=10, last_offset=20,
                            last_stable_offset=11))
    index.close()
    data = path.read_bytes()
    assert ENTRY.size == 34
    assert data == (b"\x00\x00" + (5).to_bytes(8, "big") + (10).to_bytes(8, "big")
                    + (20).to_bytes(8, "big") + (11).to_bytes(8, "big"))


def test_reopened_entries_are_read_back_and_appends_continue(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    index = TransactionIndex(path, 0)
    index.append(AbortedTxn(1, 0, 5, 6))
    index.close()
    reopened = TransactionIndex(path, 0)
    with pytest.raises(ValueError, match="must increase sequentially"):
        reopened.append(AbortedTxn(2, 1, 5, 6))
    reopened.append(AbortedTxn(2, 1, 7, 8))
    assert reopened.all() == [AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 1, 7, 8)]


def test_collect_returns_overlapping_entries_and_stops_once_complete(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "x.txnindex", 0)
    entries = [AbortedTxn(1, 0, 10, 3), AbortedTxn(2, 3, 12, 13), AbortedTxn(3, 14, 20, 21),
               AbortedTxn(4, 22, 30, 31)]
    for entry in entries:
        index.append(entry)
    found = index.collect(fetch_offset=11, upper_bound=15)
    assert found.aborted == [entries[1], entries[2]] and found.complete
    # nothing here reaches 40: a later segment may still hold an overlapping abort
    tail = index.collect(fetch_offset=25, upper_bound=40)
    assert tail.aborted == [entries[3]] and not tail.complete
    assert index.collect(fetch_offset=0, upper_bound=1).aborted == [entries[0]]


def test_truncation_drops_markers_at_or_above_the_offset(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    index = TransactionIndex(path, 0)
    for last in (5, 9, 14):
        index.append(AbortedTxn(1, last - 2, last, last + 1))
    index.truncate_to(9)
    assert [e.last_offset for e in index.all()] == [5]
    assert path.stat().st_size == 34
    index.append(AbortedTxn(1, 6, 7, 8))  # the last offset went back with the truncation
    index.reset()
    assert index.all() == [] and path.stat().st_size == 0


def test_a_torn_trailing_entry_is_ignored_and_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    index = TransactionIndex(path, 0)
    index.append(AbortedTxn(1, 0, 5, 6))
    index.close()
    with path.open("ab") as f:
        f.write(b"\x00" * 10)
    reopened = TransactionIndex(path, 0)
    assert reopened.all() == [AbortedTxn(1, 0, 5, 6)]
    reopened.append(AbortedTxn(1, 7, 8, 9))
    reopened.close()
    assert path.stat().st_size == 68


def test_sanity_check_and_unknown_versions_are_corruption(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    index = TransactionIndex(path, 100)
    index.append(AbortedTxn(1, 0, 50, 51))
    with pytest.raises(CorruptIndexError, match="less than start offset 100"):
        index.sanity_check()
    index.close()
    path.write_bytes(ENTRY.pack(1, 1, 0, 150, 151))
    with pytest.raises(CorruptIndexError, match="Unexpected aborted transaction version 1"):
        TransactionIndex(path, 100)


def test_many_entries_are_read_across_chunks(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "x.txnindex", 0)
    for i in range(5000):
        index.append(AbortedTxn(i, 2 * i, 2 * i + 1, 2 * i + 2))
    assert len(index.all()) == 5000
    found = index.collect(fetch_offset=9001, upper_bound=9004)
    assert [e.producer_id for e in found.aborted] == [4500, 4501] and found.complete
    index.delete()
    assert not (tmp_path / "x.txnindex").exists()
