"""Conformance rows for ElectLeaders (API 43, KIP-460) on both listeners: a broker
forwards it to the controller. The suite's cluster has one broker, so every partition is
led by its preferred (only) replica: the rows cover the answers that need no second
broker (unknown topics and partitions, elections not needed, every partition, an unknown
election type); tests/controller/test_controller_elections.py covers the moves."""

from __future__ import annotations

from typing import Any

from conformance.cases import BOTH, Case, Meaning, code
from conformance.harness import Run
from pykraft.messages.kafka.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from pykraft.protocol.apis import ApiKey

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED = "Leader election not needed for topic partition."


def elect(run: Run, election_type: int, partitions: dict[str, list[int]] | None) -> Any:
    topics = None if partitions is None else tuple(
        TopicPartitions(topic=name, partitions=tuple(ids)) for name, ids in partitions.items())
    return run.generated(ApiKey.ELECT_LEADERS, ElectLeadersRequest(
        election_type=election_type, topic_partitions=topics))


def elected(body: Any, run: Run) -> Meaning:
    """The top-level error (v1+) and each partition's, topics named as the run's."""
    shared, absent = run.cluster.topic, absent_topic(run)
    names = {shared: "shared", absent: "absent"}
    return (code(body.error_code) if run.version >= 1 else None, [
        (names.get(r.topic, r.topic), [(p.partition_id, code(p.error_code), p.error_message)
                                       for p in r.partition_result])
        for r in body.replica_election_results if r.topic in names])


def absent_topic(run: Run) -> str:
    return f"{run.fresh_topic}-absent"


def ask(election_type: int, partitions: list[int] | None = None,
        absent: list[int] | None = None) -> Any:
    def send(run: Run) -> Any:
        if partitions is None and absent is None:
            return elect(run, election_type, None)
        named = {run.cluster.topic: partitions or []} if partitions is not None else {}
        if absent is not None:
            named[absent_topic(run)] = absent
        return elect(run, election_type, named)
    return send


Topic = tuple[str, list[tuple[int, str, str | None]]]


def answer_of(run: Run, top: str, *topics: Topic) -> Meaning:
    """What :func:`elected` gives: v0 has no top-level error."""
    return (top if run.version >= 1 else None, list(topics))


def answer(top: str, *topics: Topic) -> Any:
    return lambda run: answer_of(run, top, *topics)


def no_such_partition(run: Run) -> Meaning:
    return answer_of(run, "NONE", ("shared", [
        (99, "UNKNOWN_TOPIC_OR_PARTITION", f"No such partition as {run.cluster.topic}-99")]))


def no_such_topic(run: Run) -> Meaning:
    return answer_of(run, "NONE", ("absent", [
        (0, "UNKNOWN_TOPIC_OR_PARTITION", f"No such topic as {absent_topic(run)}")]))


ELECTIONS = [
    Case("ElectLeaders", ApiKey.ELECT_LEADERS, "preferred_already_leads",
         ask(PREFERRED, [0, 1]), elected,
         answer("NONE", ("shared", [(0, "ELECTION_NOT_NEEDED", NOT_NEEDED),
                                    (1, "ELECTION_NOT_NEEDED", NOT_NEEDED)])),
         listeners=BOTH),
    Case("ElectLeaders", ApiKey.ELECT_LEADERS, "unknown_partition", ask(PREFERRED, [99]),
         elected, no_such_partition, listeners=BOTH),
    Case("ElectLeaders", ApiKey.ELECT_LEADERS, "unknown_topic", ask(PREFERRED, absent=[0]),
         elected, no_such_topic, listeners=BOTH),
    # every partition: those that need no election are left out, their topic stays listed
    Case("ElectLeaders", ApiKey.ELECT_LEADERS, "every_partition", ask(PREFERRED), elected,
         answer("NONE", ("shared", [])), listeners=BOTH),
    Case("ElectLeaders", ApiKey.ELECT_LEADERS, "unclean_with_a_leader", ask(UNCLEAN, [0]),
         elected, answer("NONE", ("shared", [(0, "ELECTION_NOT_NEEDED", NOT_NEEDED)])),
         listeners=BOTH, since=1),
    Case("ElectLeaders", ApiKey.ELECT_LEADERS, "unknown_election_type", ask(5, [0]), elected,
         answer("INVALID_REQUEST",
                ("shared", [(0, "INVALID_REQUEST", "Unknown election type 5")])),
         listeners=BOTH, since=1),
]
