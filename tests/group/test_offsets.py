"""The offset store: what it holds, the records it returns, replay, and Kafka's expiry rule."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.group.offsets import OffsetStore
from pykraft.group.records import OffsetCommitKey, OffsetCommitValue, decode_record
from pykraft.ids import TopicPartition

DAY = 86_400_000


def _value(offset: int, at: int = 0, expire: int = -1) -> OffsetCommitValue:
    return OffsetCommitValue(
        offset=offset, leader_epoch=-1, metadata="", commit_timestamp=at, expire_timestamp=expire
    )


def _contents(store: OffsetStore) -> dict[str, dict[TopicPartition, OffsetCommitValue]]:
    return {group: dict(store.offsets(group)) for group in store.groups()}


def test_commit_stores_the_offset_and_returns_its_record() -> None:
    store = OffsetStore()
    record = store.commit("g", "t", 1, _value(5))
    assert store.get("g", "t", 1) == _value(5)
    assert store.get("g", "t", 0) is None
    assert store.get("other", "t", 1) is None
    assert decode_record(record) == (OffsetCommitKey("g", "t", 1), _value(5))
    store.commit("g", "t", 1, _value(9))
    assert store.offsets("g") == {TopicPartition("t", 1): _value(9)}
    assert store.groups() == ["g"]


def test_delete_returns_tombstones_only_for_offsets_held() -> None:
    store = OffsetStore()
    store.commit("g", "t", 0, _value(1))
    store.commit("g", "u", 0, _value(2))
    records = store.delete("g", [TopicPartition("t", 0), TopicPartition("t", 7)])
    assert [decode_record(r) for r in records] == [(OffsetCommitKey("g", "t", 0), None)]
    assert store.offsets("g") == {TopicPartition("u", 0): _value(2)}
    assert store.delete("nobody", [TopicPartition("t", 0)]) == []


def test_delete_group_drops_everything_and_forgets_the_group() -> None:
    store = OffsetStore()
    store.commit("g", "t", 0, _value(1))
    store.commit("g", "t", 1, _value(2))
    store.commit("h", "t", 0, _value(3))
    records = store.delete_group("g")
    assert {decode_record(r) for r in records} == {
        (OffsetCommitKey("g", "t", 0), None),
        (OffsetCommitKey("g", "t", 1), None),
    }
    assert store.groups() == ["h"]
    assert store.offsets("g") == {}


def test_empty_group_offsets_expire_retention_after_it_became_empty() -> None:
    store = OffsetStore()
    store.commit("g", "t", 0, _value(1, at=0))
    store.commit("g", "t", 1, _value(2, at=5 * DAY))  # committed after the group emptied
    emptied_at = 3 * DAY

    def since_emptied(group: str, topic: str, value: OffsetCommitValue) -> int | None:
        return emptied_at

    assert store.expire(emptied_at + 7 * DAY - 1, 7 * DAY, since_emptied) == []
    records = store.expire(emptied_at + 7 * DAY, 7 * DAY, since_emptied)
    assert len(records) == 2
    assert store.groups() == []


def test_standalone_offsets_expire_retention_after_each_commit() -> None:
    store = OffsetStore()
    store.commit("g", "t", 0, _value(1, at=0))
    store.commit("g", "t", 1, _value(2, at=DAY))

    def since_commit(group: str, topic: str, value: OffsetCommitValue) -> int | None:
        return value.commit_timestamp

    records = store.expire(7 * DAY, 7 * DAY, since_commit)
    assert [decode_record(r) for r in records] == [(OffsetCommitKey("g", "t", 0), None)]
    assert store.offsets("g") == {("t", 1): _value(2, at=DAY)}


def test_explicit_expire_timestamp_wins_but_kept_groups_never_expire() -> None:
    store = OffsetStore()
    store.commit("g", "t", 0, _value(1, at=0, expire=10))
    store.commit("g", "t", 1, _value(2, at=0))
    store.commit("active", "t", 0, _value(3, at=0, expire=10))

    def rule(group: str, topic: str, value: OffsetCommitValue) -> int | None:
        return None if group == "active" else value.commit_timestamp

    records = store.expire(10, 7 * DAY, rule)
    assert [decode_record(r) for r in records] == [(OffsetCommitKey("g", "t", 0), None)]
    assert store.get("g", "t", 1) is not None
    assert store.get("active", "t", 0) is not None


_ops = st.lists(
    st.tuples(
        st.sampled_from(["commit", "delete", "delete_group", "expire"]),
        st.sampled_from(["g1", "g2", "g3"]),
        st.sampled_from(["a", "b"]),
        st.integers(0, 2),
        st.integers(0, 100),
    ),
    max_size=40,
)


@settings(max_examples=100)
@given(_ops)
def test_replaying_the_records_rebuilds_an_equal_store(
    ops: list[tuple[str, str, str, int, int]],
) -> None:
    store = OffsetStore()
    log = []
    for op, group, topic, partition, number in ops:
        if op == "commit":
            log.append(store.commit(group, topic, partition, _value(number, at=number)))
        elif op == "delete":
            log.extend(store.delete(group, [TopicPartition(topic, partition)]))
        elif op == "delete_group":
            log.extend(store.delete_group(group))
        else:
            log.extend(store.expire(number, 50, lambda g, t, v: v.commit_timestamp))
    replayed = OffsetStore()
    for record in log:
        decoded = decode_record(record)
        assert decoded is not None
        key, value = decoded
        assert isinstance(key, OffsetCommitKey)
        assert value is None or isinstance(value, OffsetCommitValue)
        replayed.replay(key, value)
    assert _contents(replayed) == _contents(store)
