"""Property tests: whatever sequence of admin operations, heartbeats, time, commits and
leadership changes, the controller's image equals a fresh replay of the log it wrote, a
snapshot of it loads back equal, and the partition invariants hold."""

from __future__ import annotations

import dataclasses
import random
import tempfile
import uuid
from pathlib import Path

from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.controller import ControllerConfig, QuorumController
from pykraft.image import MetadataImage, Provenance, load_snapshot, write_image_snapshot
from pykraft.messages.kafka.allocate_producer_ids_request import AllocateProducerIdsRequest
from pykraft.messages.kafka.alter_partition_request import (
    AlterPartitionRequest,
    BrokerState,
    PartitionData,
    TopicData,
)
from pykraft.messages.kafka.create_partitions_request import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.messages.kafka.unregister_broker_request import UnregisterBrokerRequest
from pykraft.messages.kafka.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest

NAMES = ["a", "b", "c.d", "c_d"]
BROKERS = st.integers(1, 4)

operations = st.one_of(
    st.tuples(st.just("register"), BROKERS, st.sampled_from([None, "r1", "r2"]), st.booleans(),
              st.booleans()),
    st.tuples(st.just("heartbeat"), BROKERS, st.booleans(), st.booleans(), st.booleans()),
    st.tuples(st.just("tick"), st.integers(0, 6000)),
    st.tuples(st.just("create"), st.sampled_from(NAMES), st.integers(1, 4), st.integers(1, 3)),
    st.tuples(st.just("create"), st.sampled_from(NAMES), st.integers(1, 4), st.integers(1, 2)),
    st.tuples(st.just("delete"), st.sampled_from(NAMES)),
    st.tuples(st.just("partitions"), st.sampled_from(NAMES), st.integers(1, 3)),
    st.tuples(st.just("config"), st.sampled_from(NAMES),
              st.sampled_from(["retention.ms", "cleanup.policy", "bogus"]),
              st.sampled_from(["0", "100", "compact", "x", None])),
    st.tuples(st.just("isr"), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("features"), st.integers(7, 29)),
    st.tuples(st.just("pids"), BROKERS),
    st.tuples(st.just("unregister"), BROKERS),
    st.tuples(st.just("commit")),
    st.tuples(st.just("failover"), st.booleans()),
)


def apply(cluster: Cluster, op: tuple[object, ...], incarnations: dict[int, int]) -> None:
    image = cluster.controller.image
    kind = op[0]
    if not cluster.controller.is_active and kind != "failover":
        return
    if kind == "register":  # and, when ``start``, commit and heartbeat to be unfenced
        _, broker_id, rack, fresh, start = op
        assert isinstance(broker_id, int)
        if fresh:
            incarnations[broker_id] = incarnations.get(broker_id, 0) + 1
        cluster.register(broker_id, rack=rack if isinstance(rack, str) else None,
                         incarnation=uuid.UUID(int=broker_id * 100 + incarnations.get(
                             broker_id, 0)), commit=bool(start))
        if start:
            cluster.heartbeat(broker_id, commit=False)
    elif kind == "heartbeat":
        _, broker_id, fence, shut_down, caught_up = op
        assert isinstance(broker_id, int)
        offset = cluster.controller.committed_offset if caught_up else 0
        cluster.heartbeat(broker_id, offset=offset, want_fence=bool(fence),
                          want_shut_down=bool(shut_down), commit=False)
    elif kind == "tick":
        assert isinstance(op[1], int)
        cluster.tick(op[1])
    elif kind == "create":
        _, name, partitions, rf = op
        assert isinstance(name, str) and isinstance(partitions, int) and isinstance(rf, int)
        cluster.submit(create_topic(name, partitions, rf))
    elif kind == "delete":
        cluster.submit(DeleteTopicsRequest(topics=(DeleteTopicState(
            name=str(op[1])),), timeout_ms=1000))
    elif kind == "partitions":
        topic = image.topics.by_name.get(str(op[1]))
        count = len(topic.partitions) if topic else 0
        assert isinstance(op[2], int)
        cluster.submit(CreatePartitionsRequest(topics=(CreatePartitionsTopic(
            name=str(op[1]), count=count + op[2], assignments=None),),
            timeout_ms=1000, validate_only=False))
    elif kind == "config":
        _, name, key, value = op
        cluster.submit(IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
            resource_type=2, resource_name=str(name), configs=(AlterableConfig(
                name=str(key), config_operation=0 if value is not None else 1,
                value=value if isinstance(value, str) else None),)),), validate_only=False))
    elif kind == "isr":
        alter_isr(cluster, str(op[1]), shrink=bool(op[2]))
    elif kind == "features":
        assert isinstance(op[1], int)
        cluster.submit(UpdateFeaturesRequest(feature_updates=(FeatureUpdateKey(
            feature="metadata.version", max_version_level=op[1], upgrade_type=1),)))
    elif kind == "pids":
        broker = image.cluster.brokers.get(int(str(op[1])))
        cluster.submit(AllocateProducerIdsRequest(
            broker_id=int(str(op[1])), broker_epoch=broker.epoch if broker else 0))
    elif kind == "unregister":
        cluster.submit(UnregisterBrokerRequest(broker_id=int(str(op[1]))))
    elif kind == "commit":
        cluster.commit()
    else:
        cluster.depose(truncate=bool(op[1]))
        cluster.elect()


def alter_isr(cluster: Cluster, name: str, *, shrink: bool) -> None:
    image = cluster.controller.image
    topic = image.topics.by_name.get(name)
    if topic is None or 0 not in topic.partitions:
        return
    partition = topic.partitions[0]
    leader = image.cluster.brokers.get(partition.leader)
    if leader is None:
        return
    isr = [partition.leader] if shrink else [
        r for r in partition.replicas
        if (b := image.cluster.brokers.get(r)) and not b.fenced and not b.in_controlled_shutdown]
    cluster.submit(AlterPartitionRequest(
        broker_id=leader.broker_id, broker_epoch=leader.epoch,
        topics=(TopicData(topic_id=topic.topic_id, partitions=(PartitionData(
            partition_index=0, leader_epoch=partition.leader_epoch,
            new_isr_with_epochs=tuple(BrokerState(broker_id=b, broker_epoch=-1)
                                      for b in isr),
            partition_epoch=partition.partition_epoch),)),)))


def check_invariants(image: MetadataImage) -> None:
    brokers = image.cluster.brokers
    for topic in image.topics.by_id.values():
        for partition in topic.partitions.values():
            assert len(set(partition.replicas)) == len(partition.replicas)
            assert set(partition.isr) <= set(partition.replicas) and partition.isr
            if partition.leader != -1:
                assert partition.leader in partition.isr
                broker = brokers.get(partition.leader)
                assert broker is not None and not broker.fenced
                assert not broker.in_controlled_shutdown


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(operations, max_size=60), seed=st.integers(0, 2**16))
def test_controller_image_equals_replay_and_snapshot(ops: list[tuple[object, ...]],
                                                     seed: int) -> None:
    cluster = Cluster(seed=seed, mv=random.Random(seed).choice([12, 17, 19, 23]))
    cluster.elect()
    cluster.start_brokers(["r1", "r2", None])
    incarnations: dict[int, int] = {}
    for op in ops:
        apply(cluster, op, incarnations)
        check_invariants(cluster.controller.image)
    cluster.commit()
    controller = cluster.controller
    assert not controller.take_responses()
    replayed = cluster.replayed_image()
    assert controller.committed_image == replayed
    if controller.is_active:
        assert controller.image == replayed
    # a follower fed the same committed batches builds the same image
    follower = QuorumController(ControllerConfig(node_id=9), writer=cluster.raft.append,
                                rng=random.Random(0))
    for index in range(cluster.raft.committed_batches):
        follower.handle_commit(cluster.raft.batch(index))
    assert follower.image == replayed
    # and a snapshot of it loads back equal
    snapshot_image = dataclasses.replace(
        replayed, provenance=Provenance(cluster.controller.committed_offset, 1, 0))
    with tempfile.TemporaryDirectory() as directory:
        path = write_image_snapshot(Path(directory), snapshot_image, clock=lambda: 0,
                                    max_records_per_batch=3)
        assert load_snapshot(path) == replayed
        restarted = QuorumController(ControllerConfig(node_id=9), writer=cluster.raft.append,
                                     rng=random.Random(0))
        restarted.load_image(load_snapshot(path))
    assert restarted.image == replayed
