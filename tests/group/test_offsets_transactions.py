"""Transactional offsets in the offset store (TxnOffsetCommit): pending per producer until
the producer's marker, then committed unless a later record committed that partition, or
dropped; a tombstone drops the pending ones too. Checked against a model that says the same
in other words (the newest surviving record wins), on random histories, and for the store
rebuilt from the log its changes wrote."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.group.offsets import NO_PRODUCER_ID, OffsetStore
from pykraft.group.outcome import OffsetsRecord
from pykraft.group.records import OffsetCommitKey, OffsetCommitValue, decode_record
from pykraft.ids import TopicPartition

G = "g"
PARTITIONS = [TopicPartition("t", 0), TopicPartition("t", 1)]
PRODUCERS = [7, 8]


def _value(offset: int) -> OffsetCommitValue:
    return OffsetCommitValue(offset=offset, leader_epoch=-1, metadata="", commit_timestamp=0,
                             expire_timestamp=-1)


@dataclass(frozen=True)
class Written:
    """One entry of the log the store's changes wrote: a record (with its batch's producer
    id) or a producer's marker."""

    record: OffsetsRecord | None = None
    producer_id: int = NO_PRODUCER_ID
    marker: bool | None = None  # a marker: committed?


def test_a_commit_marker_moves_the_pending_offsets_and_an_abort_drops_them() -> None:
    store = OffsetStore()
    store.commit(G, "t", 0, _value(1))
    store.commit(G, "t", 0, _value(5), producer_id=7)
    store.commit(G, "t", 1, _value(6), producer_id=8)
    assert store.get(G, "t", 0) == _value(1)  # pending offsets are invisible
    assert store.has_pending(G, "t", 0) and store.has_pending(G, "t", 1)
    assert store.has_open_transactions(G) and not store.has_open_transactions("other")
    store.end_transaction(7, committed=True)
    store.end_transaction(8, committed=False)
    assert store.get(G, "t", 0) == _value(5)
    assert store.get(G, "t", 1) is None
    assert not store.has_open_transactions()


def test_a_plain_commit_after_the_transactional_one_wins_at_the_commit_marker() -> None:
    store = OffsetStore()
    store.commit(G, "t", 0, _value(5), producer_id=7)
    store.commit(G, "t", 0, _value(9))  # written after the transaction's record
    store.end_transaction(7, committed=True)
    assert store.get(G, "t", 0) == _value(9)


def test_deleting_a_partition_with_only_a_pending_offset_writes_its_tombstone() -> None:
    store = OffsetStore()
    store.commit(G, "t", 0, _value(5), producer_id=7)
    records = store.delete(G, [TopicPartition("t", 0), TopicPartition("t", 1)])
    assert [decode_record(r) for r in records] == [(OffsetCommitKey(G, "t", 0), None)]
    assert not store.has_pending(G, "t", 0)
    store.end_transaction(7, committed=True)  # nothing left to commit
    assert store.get(G, "t", 0) is None


def test_pending_offsets_keep_their_partition_from_expiring() -> None:
    store = OffsetStore()
    store.commit(G, "t", 0, _value(1))
    store.commit(G, "t", 0, _value(2), producer_id=7)
    assert store.expire(10, 1, lambda *_: 0) == []
    store.end_transaction(7, committed=False)
    assert len(store.expire(10, 1, lambda *_: 0)) == 1


@dataclass(frozen=True)
class Op:
    """One change of a random history."""

    kind: str  # commit, txn, marker, delete
    tp: TopicPartition = PARTITIONS[0]
    offset: int = 0
    producer: int = NO_PRODUCER_ID
    committed: bool = False


_partitions, _offsets = st.sampled_from(PARTITIONS), st.integers(0, 99)
operations = st.lists(st.one_of(
    st.builds(Op, st.just("commit"), _partitions, _offsets),
    st.builds(Op, st.just("txn"), _partitions, _offsets, st.sampled_from(PRODUCERS)),
    st.builds(Op, st.just("marker"), producer=st.sampled_from(PRODUCERS),
              committed=st.booleans()),
    st.builds(Op, st.just("delete"), _partitions),
), max_size=30)


def _model(log: list[Written]) -> tuple[dict[TopicPartition, int], set[TopicPartition]]:
    """The committed offsets and the partitions with a pending one, said declaratively:
    after a partition's last tombstone, its newest plain record, or transactional record
    whose producer's next marker is a COMMIT, is its offset; a transactional record with
    no marker after it is pending."""
    committed: dict[TopicPartition, int] = {}
    pending: set[TopicPartition] = set()
    for tp in PARTITIONS:
        entries = [(i, w) for i, w in enumerate(log)
                   if w.record is not None and _key(w.record)[0] == tp]
        tombstones = [i for i, w in entries if _value_of(w) is None]
        after = [(i, w) for i, w in entries if i > (tombstones[-1] if tombstones else -1)]
        best = None
        for i, w in after:
            if w.producer_id == NO_PRODUCER_ID:
                best = i
                continue
            ends = [m.marker for m in log[i + 1:]
                    if m.marker is not None and m.producer_id == w.producer_id]
            if not ends:
                pending.add(tp)
            elif ends[0]:
                best = i
        if best is not None:
            value = _value_of(log[best])
            assert value is not None
            committed[tp] = value
    return committed, pending


def _key(record: OffsetsRecord) -> tuple[TopicPartition, int | None]:
    decoded = decode_record(record)
    assert decoded is not None
    key, value = decoded
    assert isinstance(key, OffsetCommitKey)
    assert value is None or isinstance(value, OffsetCommitValue)
    return TopicPartition(key.topic, key.partition), None if value is None else value.offset


def _value_of(written: Written) -> int | None:
    assert written.record is not None
    return _key(written.record)[1]


def _state(store: OffsetStore) -> tuple[dict[TopicPartition, int], set[TopicPartition]]:
    return ({tp: v.offset for tp, v in store.offsets(G).items()},
            {tp for tp in PARTITIONS if store.has_pending(G, *tp)})


@settings(max_examples=300, deadline=None)
@given(operations)
def test_random_histories_agree_with_the_model_and_with_their_log(ops: list[Op]) -> None:
    live = OffsetStore()
    log: list[Written] = []
    for op in ops:
        topic, partition = op.tp
        if op.kind == "commit":
            log.append(Written(live.commit(G, topic, partition, _value(op.offset))))
        elif op.kind == "txn":
            log.append(Written(live.commit(G, topic, partition, _value(op.offset),
                                           op.producer), op.producer))
        elif op.kind == "marker":
            live.end_transaction(op.producer, op.committed)
            log.append(Written(producer_id=op.producer, marker=op.committed))
        else:
            log.extend(Written(r) for r in live.delete(G, [op.tp]))
    loaded = OffsetStore()
    for entry in log:
        if entry.record is None:
            assert entry.marker is not None
            loaded.end_transaction(entry.producer_id, entry.marker)
            continue
        decoded = decode_record(entry.record)
        assert decoded is not None and isinstance(decoded[0], OffsetCommitKey)
        value = decoded[1]
        assert value is None or isinstance(value, OffsetCommitValue)
        loaded.replay(decoded[0], value, entry.producer_id)
    assert _state(live) == _model(log) == _state(loaded)
