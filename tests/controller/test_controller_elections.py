"""ElectLeaders (preferred and unclean, KIP-460) and the automatic preferred-leader
rebalance (``auto.leader.rebalance.enable``, ``leader.imbalance.check.interval.seconds``),
as Kafka's ReplicationControlManager does them."""

from __future__ import annotations

from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]
from test_controller_lifecycle import (  # type: ignore[import-not-found]
    UNCLEAN,
    beat,
    lose_every_isr_member,
    partition,
)

from pykraft.controller.leader_elections import MAX_ELECTIONS_PER_IMBALANCE
from pykraft.image.topics import NO_LEADER
from pykraft.messages.kafka.alter_partition_request import (
    AlterPartitionRequest,
    BrokerState,
    PartitionData,
    TopicData,
)
from pykraft.messages.kafka.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from pykraft.messages.kafka.elect_leaders_response import ElectLeadersResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import PartitionChangeRecord
from pykraft.replica.leader import RECOVERING

PREFERRED, UNCLEAN_ELECTION = 0, 1
NOT_NEEDED = "Leader election not needed for topic partition."
CHECK_S = 5
NO_REBALANCE = {"auto.leader.rebalance.enable": "false"}


def elect(cluster: Cluster, election_type: int = PREFERRED,
          partitions: dict[str, list[int]] | None = None) -> ElectLeadersResponse:
    topics = None if partitions is None else tuple(
        TopicPartitions(topic=name, partitions=tuple(ids)) for name, ids in partitions.items())
    answer = cluster.call(ElectLeadersRequest(election_type=election_type,
                                              topic_partitions=topics))
    assert isinstance(answer, ElectLeadersResponse)
    return answer


def results(answer: ElectLeadersResponse) -> dict[str, list[tuple[int, str, str | None]]]:
    return {r.topic: [(p.partition_id, ErrorCode(p.error_code).name, p.error_message)
                      for p in r.partition_result]
            for r in answer.replica_election_results}


def moved_off_preferred(properties: dict[str, str] | None = None) -> Cluster:
    """Topic t, replicas [1, 2, 3]; broker 1 was fenced (2 leads) and came back into the
    ISR: 2 still leads."""
    cluster = Cluster(properties=properties)
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3], [2, 3, 1]]))
    beat(cluster, 1, want_fence=True)
    assert partition(cluster).leader == 2
    beat(cluster, 1)  # unfenced; the leader adds it back to the ISR:
    rejoin(cluster, 1)
    return cluster


def rejoin(cluster: Cluster, broker_id: int, indexes: tuple[int, ...] = (0,)) -> None:
    """The leader of partitions ``indexes`` of t (one broker leads them all) adds
    ``broker_id`` back to their ISRs."""
    topic = cluster.controller.image.topics.by_name["t"]
    states = {i: topic.partitions[i] for i in indexes}
    (leader_id,) = {state.leader for state in states.values()}
    cluster.call(AlterPartitionRequest(
        broker_id=leader_id, broker_epoch=cluster.controller.image.cluster.brokers[leader_id].epoch,
        topics=(TopicData(topic_id=topic.topic_id, partitions=tuple(PartitionData(
            partition_index=i, leader_epoch=state.leader_epoch,
            new_isr_with_epochs=tuple(BrokerState(broker_id=b, broker_epoch=-1)
                                      for b in (*state.isr, broker_id)),
            partition_epoch=state.partition_epoch) for i, state in states.items())),)))
    assert all(broker_id in partition(cluster, i).isr for i in indexes)


def test_a_preferred_election_moves_the_leader_back_to_the_first_replica() -> None:
    cluster = moved_off_preferred(NO_REBALANCE)
    epoch = partition(cluster).leader_epoch
    answer = elect(cluster, PREFERRED, {"t": [0, 1]})
    assert answer.error_code == ErrorCode.NONE
    assert results(answer) == {"t": [(0, "NONE", None), (1, "ELECTION_NOT_NEEDED", NOT_NEEDED)]}
    assert (partition(cluster).leader, partition(cluster).leader_epoch) == (1, epoch + 1)
    assert cluster.replayed_image() == cluster.controller.image


def test_unknown_topics_and_partitions_are_named_in_the_answer() -> None:
    cluster = moved_off_preferred(NO_REBALANCE)
    answer = elect(cluster, PREFERRED, {"t": [7], "nope": [0]})
    assert results(answer) == {
        "t": [(7, "UNKNOWN_TOPIC_OR_PARTITION", "No such partition as t-7")],
        "nope": [(0, "UNKNOWN_TOPIC_OR_PARTITION", "No such topic as nope")]}


def test_every_partition_leaves_out_those_that_need_no_election() -> None:
    cluster = moved_off_preferred(NO_REBALANCE)
    cluster.call(create_topic("u", 2, 3))
    answer = elect(cluster, PREFERRED)
    assert results(answer) == {"t": [(0, "NONE", None)], "u": []}
    assert partition(cluster).leader == 1


def test_a_preferred_replica_out_of_the_isr_is_not_available() -> None:
    cluster = Cluster(properties=NO_REBALANCE)
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]]))
    beat(cluster, 1, want_fence=True)
    beat(cluster, 1)  # unfenced, but not back in the ISR
    answer = elect(cluster, PREFERRED, {"t": [0]})
    assert results(answer) == {"t": [(0, "PREFERRED_LEADER_NOT_AVAILABLE",
                                  "The preferred leader was not available.")]}
    assert partition(cluster).leader == 2


def test_an_unclean_election_needs_a_leaderless_partition() -> None:
    cluster = moved_off_preferred(NO_REBALANCE)
    answer = elect(cluster, UNCLEAN_ELECTION, {"t": [0]})
    assert results(answer) == {"t": [(0, "ELECTION_NOT_NEEDED", NOT_NEEDED)]}


def test_an_unclean_election_takes_a_replica_outside_the_isr_whatever_the_topic_says() -> None:
    cluster = Cluster(properties=NO_REBALANCE)
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    lose_every_isr_member(cluster)  # the topic does not allow unclean elections
    assert partition(cluster).leader == NO_LEADER
    answer = elect(cluster, UNCLEAN_ELECTION, {"t": [0]})
    assert results(answer) == {"t": [(0, "NONE", None)]}
    state = partition(cluster)
    assert (state.leader, state.isr, state.leader_recovery_state) == (2, (2,), RECOVERING)


def test_an_unclean_election_without_a_live_replica_is_not_available() -> None:
    cluster = Cluster(properties={UNCLEAN: "false", **NO_REBALANCE})
    cluster.elect()
    cluster.start_brokers(["a", "b"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2]]))
    beat(cluster, 2, want_fence=True)
    beat(cluster, 1, want_fence=True)
    answer = elect(cluster, UNCLEAN_ELECTION, {"t": [0]})
    assert results(answer) == {"t": [(0, "ELIGIBLE_LEADERS_NOT_AVAILABLE",
                                  "Eligible topic partition leaders are not available.")]}


def test_an_unknown_election_type_is_an_invalid_request_on_every_partition() -> None:
    cluster = moved_off_preferred(NO_REBALANCE)
    answer = elect(cluster, 7, {"t": [0, 1]})
    assert answer.error_code == ErrorCode.INVALID_REQUEST
    message = "Unknown election type 7"
    assert results(answer) == {"t": [(0, "INVALID_REQUEST", message),
                                     (1, "INVALID_REQUEST", message)]}
    assert partition(cluster).leader == 2


def test_the_rebalance_waits_one_check_interval_then_restores_preferred_leaders() -> None:
    cluster = moved_off_preferred({"leader.imbalance.check.interval.seconds": str(CHECK_S)})
    cluster.tick(CHECK_S * 1000 - 1)
    assert partition(cluster).leader == 2
    assert cluster.controller.next_deadline_ms() is not None
    cluster.tick(1)
    cluster.commit()
    assert partition(cluster).leader == 1
    assert cluster.replayed_image() == cluster.controller.image


def test_without_auto_rebalance_leaders_stay_where_they_are() -> None:
    cluster = moved_off_preferred({**NO_REBALANCE,
                                   "leader.imbalance.check.interval.seconds": str(CHECK_S)})
    for _ in range(10):  # ten check intervals, every broker heartbeating
        cluster.tick(CHECK_S * 1000)
        for broker_id in (1, 2, 3):
            beat(cluster, broker_id)
    assert partition(cluster).leader == 2


def test_the_rebalance_is_limited_per_run_and_reruns_soon() -> None:
    check_ms = CHECK_S * 1000
    cluster = Cluster(properties={"leader.imbalance.check.interval.seconds": str(CHECK_S)})
    cluster.elect()
    cluster.start_brokers(["a", "b"])
    count = MAX_ELECTIONS_PER_IMBALANCE + 5
    # the second replica is listed first: every partition starts led by its preferred
    # replica 2, then 2 is fenced and comes back
    cluster.call(create_topic("t", -1, -1, assignments=[[2, 1]] * count))
    start = len(cluster.raft.metadata_records())
    beat(cluster, 2, want_fence=True)
    beat(cluster, 2)
    rejoin(cluster, 2, tuple(range(count)))
    cluster.tick(check_ms)
    cluster.commit()
    led = [p.leader for p in cluster.controller.image.topics.by_name["t"].partitions.values()]
    assert led.count(2) == MAX_ELECTIONS_PER_IMBALANCE
    cluster.tick(10)
    cluster.commit()
    led = [p.leader for p in cluster.controller.image.topics.by_name["t"].partitions.values()]
    assert led.count(2) == count
    elections = [r.message for r in cluster.raft.metadata_records()[start:]
                 if isinstance(r.message, PartitionChangeRecord) and r.message.leader == 2]
    assert len(elections) == count
