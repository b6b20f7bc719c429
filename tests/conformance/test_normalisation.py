"""The differential oracle's normalisation (conformance.differential) on made-up answers:
the lists Kafka builds from hash sets are compared in name order, and only those; fetch
session ids by their order of first appearance."""

from __future__ import annotations

import uuid

from conformance.differential import differences, normalised
from conformance.harness import ClusterInfo

CLUSTER = ClusterInfo(cluster_id="c", controller_id=1, controller=("h", 1), broker_id=1000,
                      broker=("h", 2), topic="t", partitions=1, epoch=1, sasl=("h", 3))


def topics(*named: tuple[str, uuid.UUID]) -> dict[str, object]:
    return {"topics": [{"name": name, "topic_id": topic_id} for name, topic_id in named]}


def test_metadata_topics_in_any_order_with_their_own_ids_are_alike() -> None:
    """Kafka lists a Set of topics; each topic's (random) id still follows its topic."""
    a, b, c, d = (uuid.uuid4() for _ in range(4))
    theirs = normalised(topics(("b", a), ("a", b)), CLUSTER, "Metadata")
    assert differences(theirs, normalised(topics(("a", c), ("b", d)), CLUSTER,
                                          "Metadata")) == {}
    swapped = normalised(topics(("b", c), ("a", c)), CLUSTER, "Metadata")
    assert differences(theirs, swapped) == {".topics[1].topic_id": ("<uuid 2>", "<uuid 1>")}


def test_an_ordered_list_keeps_its_order() -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    theirs = normalised(topics(("b", a), ("a", b)), CLUSTER, "CreateTopics")
    ours = normalised(topics(("a", a), ("b", b)), CLUSTER, "CreateTopics")
    assert set(differences(theirs, ours)) == {".topics[0].name", ".topics[1].name"}


def test_fetch_session_ids_compare_by_first_appearance() -> None:
    """Random session ids match when each side reuses its own alike; 0 stays 0."""
    def answers(opened: int, then: int) -> list[dict[str, int]]:
        return [{"session_id": opened}, {"session_id": then}, {"session_id": 0}]

    theirs = normalised(answers(7, 7), CLUSTER, "Fetch")
    assert differences(theirs, normalised(answers(99, 99), CLUSTER, "Fetch")) == {}
    assert differences(theirs, normalised(answers(99, 5), CLUSTER, "Fetch")) == {
        "[1].session_id": ("<session 1>", "<session 2>")}
