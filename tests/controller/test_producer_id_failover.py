"""AllocateProducerIds: a block is answered only once its ProducerIdsRecord committed, so no
block handed to a broker is ever handed out again, after a failover or by another
controller replaying the log."""

from __future__ import annotations

from controller_harness import MV_3_7_IV4, Cluster  # type: ignore[import-not-found]

from pykraft.messages.kafka.allocate_producer_ids_request import AllocateProducerIdsRequest
from pykraft.messages.kafka.allocate_producer_ids_response import AllocateProducerIdsResponse
from pykraft.protocol.errors import ErrorCode

BROKER = 1


def request(cluster: Cluster) -> AllocateProducerIdsRequest:
    epoch = cluster.controller.image.cluster.brokers[BROKER].epoch
    return AllocateProducerIdsRequest(broker_id=BROKER, broker_epoch=epoch)


def block(response: object) -> range:
    assert isinstance(response, AllocateProducerIdsResponse)
    assert response.error_code == ErrorCode.NONE, response
    start = int(response.producer_id_start)
    return range(start, start + int(response.producer_id_len))


def running() -> Cluster:
    cluster = Cluster(mv=MV_3_7_IV4)
    cluster.elect()
    cluster.start_brokers([None])
    return cluster


def test_answers_wait_for_the_commit_and_blocks_in_flight_do_not_overlap() -> None:
    cluster = running()
    tickets = [cluster.submit(request(cluster)) for _ in range(2)]
    assert not set(tickets) & set(cluster.responses)
    cluster.commit()
    assert [block(cluster.responses.pop(t)) for t in tickets] == [range(0, 1000),
                                                                  range(1000, 2000)]


def test_a_block_lost_with_its_leader_was_never_handed_out() -> None:
    cluster = running()
    handed = [block(cluster.call(request(cluster)))]
    ticket = cluster.submit(request(cluster))  # appended, not committed
    cluster.depose(truncate=True)
    assert cluster.responses.pop(ticket).error_code == ErrorCode.NOT_CONTROLLER
    cluster.elect()
    handed += [block(cluster.call(request(cluster))) for _ in range(2)]
    assert handed == [range(0, 1000), range(1000, 2000), range(2000, 3000)]


def test_a_block_committed_after_its_leader_left_is_not_handed_out_again() -> None:
    cluster = running()
    handed = [block(cluster.call(request(cluster)))]
    ticket = cluster.submit(request(cluster))
    cluster.depose(truncate=False)  # the next leader commits the record
    cluster.commit()
    late = cluster.responses.pop(ticket)
    assert late.error_code == ErrorCode.NOT_CONTROLLER  # the broker asks again
    cluster.elect()
    handed.append(block(cluster.call(request(cluster))))
    assert handed == [range(0, 1000), range(2000, 3000)]


def test_another_controller_replaying_the_log_continues_above_every_block() -> None:
    cluster = running()
    handed = [block(cluster.call(request(cluster))) for _ in range(3)]
    successor = Cluster(mv=MV_3_7_IV4)
    successor.raft.batches = list(cluster.raft.batches)
    successor.raft.epoch = cluster.raft.epoch
    successor.commit()
    successor.elect()
    successor.heartbeat(BROKER)
    assert block(successor.call(request(successor))) == range(3000, 4000)
    assert max(b.stop for b in handed) == 3000
