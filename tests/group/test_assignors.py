"""The server-side assignors: complete, exclusive, balanced and (uniform) sticky."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.group.assignors import (
    ASSIGNORS,
    DEFAULT_ASSIGNOR,
    Assignment,
    MemberSpec,
    RangeAssignor,
    UniformAssignor,
)

TOPICS = [uuid.UUID(int=i + 1) for i in range(4)]

counts_st = st.fixed_dictionaries({t: st.integers(0, 12) for t in TOPICS})
member_ids_st = st.lists(st.text("abcdef", min_size=1, max_size=4), min_size=1, max_size=7,
                         unique=True)


def owners(result: Mapping[str, Assignment]) -> dict[tuple[uuid.UUID, int], list[str]]:
    found: dict[tuple[uuid.UUID, int], list[str]] = {}
    for member, parts in result.items():
        for topic, partitions in parts.items():
            for p in partitions:
                found.setdefault((topic, p), []).append(member)
    return found


def check_complete_and_exclusive(
    members: Mapping[str, MemberSpec], counts: Mapping[uuid.UUID, int],
    result: Mapping[str, Assignment],
) -> None:
    assert set(result) == set(members)
    found = owners(result)
    subscribed = set().union(*(m.subscribed for m in members.values()))
    expected = {(t, p) for t in subscribed for p in range(counts[t])}
    assert set(found) == expected
    for (topic, _), who in found.items():
        assert len(who) == 1
        assert topic in members[who[0]].subscribed


def sizes(result: Mapping[str, Assignment]) -> list[int]:
    return [sum(len(p) for p in parts.values()) for parts in result.values()]


@settings(max_examples=150, deadline=None)
@given(counts_st, member_ids_st, st.data())
def test_every_assignor_assigns_each_subscribed_partition_to_one_subscriber(
    counts: dict[uuid.UUID, int], member_ids: list[str], data: st.DataObject
) -> None:
    members = {
        m: MemberSpec(frozenset(data.draw(st.sets(st.sampled_from(TOPICS), min_size=1))))
        for m in member_ids
    }
    for assignor in ASSIGNORS.values():
        check_complete_and_exclusive(members, counts, assignor.assign(members, counts))


@settings(max_examples=150, deadline=None)
@given(counts_st, member_ids_st, st.sets(st.sampled_from(TOPICS), min_size=1))
def test_uniform_balances_a_shared_subscription_within_one(
    counts: dict[uuid.UUID, int], member_ids: list[str], topics: set[uuid.UUID]
) -> None:
    members = {m: MemberSpec(frozenset(topics)) for m in member_ids}
    result = UniformAssignor().assign(members, counts)
    assert max(sizes(result)) - min(sizes(result)) <= 1


@settings(max_examples=150, deadline=None)
@given(counts_st, member_ids_st, st.data())
def test_uniform_is_sticky_when_a_member_joins(
    counts: dict[uuid.UUID, int], member_ids: list[str], data: st.DataObject
) -> None:
    """With one subscription, each old member keeps min(its old count, its new quota) of
    its partitions: only the partitions the newcomer needs move."""
    topics = frozenset(data.draw(st.sets(st.sampled_from(TOPICS), min_size=1)))
    uniform = UniformAssignor()
    before = uniform.assign({m: MemberSpec(topics) for m in member_ids}, counts)
    members = {m: MemberSpec(topics, before[m]) for m in member_ids}
    members["newcomer"] = MemberSpec(topics)
    after = uniform.assign(members, counts)
    check_complete_and_exclusive(members, counts, after)
    total = sum(counts[t] for t in topics)
    ceiling = -(-total // len(members))
    for m in member_ids:
        kept = sum(len(before[m].get(t, frozenset()) & after[m].get(t, frozenset()))
                   for t in topics)
        assert kept >= min(sum(len(p) for p in before[m].values()), ceiling - 1)
    moved = sum(len(p) for p in after["newcomer"].values())
    assert moved <= ceiling


def test_uniform_keeps_everything_when_nothing_changes() -> None:
    counts = {TOPICS[0]: 7, TOPICS[1]: 3}
    uniform = UniformAssignor()
    topics = frozenset(counts)
    first = uniform.assign({"a": MemberSpec(topics), "b": MemberSpec(topics)}, counts)
    again = uniform.assign({m: MemberSpec(topics, first[m]) for m in first}, counts)
    assert again == first


def test_uniform_drops_partitions_of_topics_no_longer_subscribed() -> None:
    counts = {TOPICS[0]: 2, TOPICS[1]: 2}
    current = {TOPICS[0]: frozenset({0, 1}), TOPICS[1]: frozenset({0, 1})}
    result = UniformAssignor().assign({"a": MemberSpec(frozenset({TOPICS[1]}), current)}, counts)
    assert result == {"a": {TOPICS[1]: frozenset({0, 1})}}


@settings(max_examples=100, deadline=None)
@given(counts_st, member_ids_st, st.data())
def test_uniform_heterogeneous_leaves_no_movable_imbalance(
    counts: dict[uuid.UUID, int], member_ids: list[str], data: st.DataObject
) -> None:
    """No partition could move to another subscriber of its topic holding two fewer."""
    members = {
        m: MemberSpec(frozenset(data.draw(st.sets(st.sampled_from(TOPICS), min_size=1))))
        for m in member_ids
    }
    result = UniformAssignor().assign(members, counts)
    load = {m: sum(len(p) for p in parts.values()) for m, parts in result.items()}
    for (topic, _), (owner,) in owners(result).items():
        for other, spec in members.items():
            if topic in spec.subscribed:
                assert load[other] + 1 >= load[owner]


def test_range_gives_contiguous_ranges_in_member_order_static_first() -> None:
    t = TOPICS[0]
    members = {
        "a": MemberSpec(frozenset({t})),
        "b": MemberSpec(frozenset({t})),
        "z": MemberSpec(frozenset({t}), instance_id="i1"),
    }
    result = RangeAssignor().assign(members, {t: 7})
    assert result == {
        "z": {t: frozenset({0, 1, 2})},
        "a": {t: frozenset({3, 4})},
        "b": {t: frozenset({5, 6})},
    }


def test_range_members_without_partitions_get_an_empty_assignment() -> None:
    t = TOPICS[0]
    members = {m: MemberSpec(frozenset({t})) for m in "abc"}
    assert RangeAssignor().assign(members, {t: 1}) == {"a": {t: frozenset({0})}, "b": {}, "c": {}}


def test_the_default_is_uniform_and_both_are_registered() -> None:
    assert DEFAULT_ASSIGNOR == "uniform"
    assert sorted(ASSIGNORS) == ["range", "uniform"]
    assert UniformAssignor().assign({}, {TOPICS[0]: 3}) == {}
