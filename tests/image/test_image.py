"""Metadata image and delta: replay rules, image write order, transactions, versions."""

from __future__ import annotations

import uuid

import pytest

from pykraft.errors import MetadataImageError
from pykraft.image import ImageLoader, MetadataDelta, MetadataImage
from pykraft.image.versions import record_version
from pykraft.records.batch import encode_batch, iter_batches
from pykraft.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    ConfigRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterControllerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    UnregisterControllerRecord,
    decode_metadata_record,
    encode_metadata_record,
)

TOPIC = uuid.UUID(int=77)


def broker(broker_id: int, epoch: int = 10, fenced: bool = True) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=epoch,
        end_points=(BrokerEndpoint(name="PLAINTEXT", host="h", port=9092, security_protocol=0),),
        features=(), rack=None, fenced=fenced)


def sample_records() -> list[object]:
    return [
        FeatureLevelRecord(name="group.version", feature_level=1),
        FeatureLevelRecord(name="metadata.version", feature_level=19),
        broker(2), broker(1, fenced=False),
        RegisterControllerRecord(controller_id=3000, incarnation_id=uuid.UUID(int=5),
                                 zk_migration_ready=False, end_points=(), features=()),
        TopicRecord(name="t", topic_id=TOPIC),
        PartitionRecord(partition_id=0, topic_id=TOPIC, replicas=(1, 2), isr=(1, 2), leader=1,
                        leader_epoch=0, partition_epoch=0,
                        directories=(uuid.UUID(int=0),) * 2),
        ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value="5"),
        ConfigRecord(resource_type=4, resource_name="", name="num.io.threads", value="9"),
        ProducerIdsRecord(broker_id=1, broker_epoch=10, next_producer_id=2000),
        NoOpRecord(),
    ]


def image_of(records: list[object], base: MetadataImage | None = None) -> MetadataImage:
    delta = MetadataDelta(base or MetadataImage())
    for record in records:
        delta.replay(record)
    return delta.apply()


def test_image_write_order_is_features_cluster_topics_configs_producer_ids() -> None:
    image = image_of(sample_records())
    kinds = [type(record).__name__ for record, _ in image.records()]
    assert kinds == [
        "FeatureLevelRecord", "FeatureLevelRecord", "RegisterBrokerRecord",
        "RegisterBrokerRecord", "RegisterControllerRecord", "TopicRecord", "PartitionRecord",
        "ConfigRecord", "ConfigRecord", "ProducerIdsRecord",
    ]
    first = image.records()[0][0]
    assert isinstance(first, FeatureLevelRecord) and first.name == "metadata.version"
    assert image_of([r for r, _ in image.records()]) == image


def test_records_follow_metadata_version() -> None:
    image = image_of(sample_records())
    versions = {type(r).__name__: v for r, v in image.records()}
    assert versions["RegisterBrokerRecord"] == 3 and versions["PartitionRecord"] == 1
    older = image_of([FeatureLevelRecord(name="metadata.version", feature_level=7)], image)
    versions = {type(r).__name__: v for r, v in older.records()}
    assert versions["RegisterBrokerRecord"] == 1 and versions["PartitionRecord"] == 0
    assert "RegisterControllerRecord" not in versions  # needs 3.7-IV0


@pytest.mark.parametrize(("cls", "mv", "version"), [
    (RegisterBrokerRecord, 7, 1), (RegisterBrokerRecord, 8, 2), (RegisterBrokerRecord, 17, 3),
    (RegisterBrokerRecord, 6, 0), (RegisterBrokerRecord, 30, 4), (PartitionRecord, 16, 0),
    (PartitionRecord, 17, 1),
    (PartitionChangeRecord, 23, 2), (BrokerRegistrationChangeRecord, 7, 1),
    (BrokerRegistrationChangeRecord, 17, 2), (TopicRecord, 29, 0),
])
def test_record_version_gates(cls: type, mv: int, version: int) -> None:
    assert record_version(cls, mv) == version


def test_partition_change_bumps_epochs() -> None:
    image = image_of(sample_records())
    changed = image_of([PartitionChangeRecord(partition_id=0, topic_id=TOPIC, isr=(1,))], image)
    p = changed.topics.by_id[TOPIC].partitions[0]
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1,), 1, 0, 1)
    changed = image_of([PartitionChangeRecord(partition_id=0, topic_id=TOPIC, leader=2)], changed)
    p = changed.topics.by_name["t"].partitions[0]
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (2, 1, 2)
    assert image.topics.by_id[TOPIC].partitions[0].partition_epoch == 0  # immutable


def test_remove_topic_takes_its_configs() -> None:
    image = image_of([*sample_records(), RemoveTopicRecord(topic_id=TOPIC)])
    assert image.topics.by_name == {} and (2, "t") not in image.configs.resources
    assert image.configs.get((4, "")) == {"num.io.threads": "9"}


def test_config_null_value_deletes() -> None:
    image = image_of([*sample_records(), ConfigRecord(resource_type=4, resource_name="",
                                                      name="num.io.threads", value=None)])
    assert (4, "") not in image.configs.resources


def test_a_config_write_copies_only_its_resource_and_leaves_the_old_image() -> None:
    before = image_of(sample_records())
    after = image_of([ConfigRecord(resource_type=2, resource_name="t", name="retention.ms",
                                   value="6")], base=before)
    assert before.configs.get((2, "t")) == {"retention.ms": "5"}
    assert after.configs.get((2, "t")) == {"retention.ms": "6"}
    assert after.configs.resources[4, ""] is before.configs.resources[4, ""]
    assert image_of([NoOpRecord()], base=after).configs is after.configs


def test_a_removed_topics_configs_can_come_back() -> None:
    image = image_of([*sample_records(), RemoveTopicRecord(topic_id=TOPIC),
                      ConfigRecord(resource_type=2, resource_name="t", name="cleanup.policy",
                                   value="compact")])
    assert image.configs.get((2, "t")) == {"cleanup.policy": "compact"}


def test_fencing_records() -> None:
    image = image_of(sample_records())
    fenced = image_of([FenceBrokerRecord(id=1, epoch=10)], image)
    assert fenced.cluster.brokers[1].fenced
    changed = image_of([BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=-1,
                                                        in_controlled_shutdown=1)], fenced)
    assert not changed.cluster.brokers[1].fenced
    assert changed.cluster.brokers[1].in_controlled_shutdown
    gone = image_of([UnregisterBrokerRecord(broker_id=1, broker_epoch=10)], changed)
    assert 1 not in gone.cluster.brokers


def test_cordoned_log_dirs_of_kafka_4_4s_registrations() -> None:
    """RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3 (Kafka 4.3-IV0 on) carry
    cordoned log directories; a change without them (null) leaves them."""
    dirs = (uuid.UUID(int=7), uuid.UUID(int=8))
    value = encode_metadata_record(
        RegisterBrokerRecord(broker_id=1, broker_epoch=10, log_dirs=dirs,
                             cordoned_log_dirs=dirs[:1]), 4)
    image = image_of([*sample_records(), decode_metadata_record(value)])
    assert image.cluster.brokers[1].cordoned_log_dirs == dirs[:1]
    assert image.cluster.brokers[1].to_record().cordoned_log_dirs == dirs[:1]
    changed = image_of([BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=-1,
                                                        cordoned_log_dirs=dirs)], image)
    assert changed.cluster.brokers[1].cordoned_log_dirs == dirs
    unchanged = image_of([BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10,
                                                          fenced=1)], changed)
    assert unchanged.cluster.brokers[1].cordoned_log_dirs == dirs


def test_unregister_controller_removes_its_registration() -> None:
    image = image_of([*sample_records(), UnregisterControllerRecord(controller_id=3000)])
    assert image.cluster.controllers == {}


def _elr_image() -> MetadataImage:
    other = uuid.UUID(int=78)
    return image_of([
        *sample_records(),
        PartitionChangeRecord(partition_id=0, topic_id=TOPIC, eligible_leader_replicas=(2,),
                              last_known_elr=()),
        TopicRecord(name="u", topic_id=other),
        PartitionRecord(partition_id=0, topic_id=other, replicas=(1, 2), isr=(1,), leader=1,
                        leader_epoch=0, partition_epoch=0, eligible_leader_replicas=(),
                        last_known_elr=(2,)),
        PartitionRecord(partition_id=1, topic_id=other, replicas=(1, 2), isr=(1, 2), leader=1),
    ])


def test_clear_elr_of_one_topic_empties_its_elrs_and_moves_the_epoch() -> None:
    image = _elr_image()
    cleared = image_of([ClearElrRecord(topic_name="t")], image)
    p = cleared.topics.by_name["t"].partitions[0]
    assert (p.eligible_leader_replicas, p.last_known_elr, p.partition_epoch) == ((), (), 2)
    assert cleared.topics.by_name["u"] is image.topics.by_name["u"]
    with pytest.raises(MetadataImageError, match="no such topic found"):
        image_of([ClearElrRecord(topic_name="gone")], image)


def test_clear_elr_without_a_name_clears_every_topic_with_elrs() -> None:
    image = _elr_image()
    cleared = image_of([ClearElrRecord(topic_name="")], image)
    u = cleared.topics.by_name["u"].partitions
    assert (u[0].last_known_elr, u[0].partition_epoch) == ((), 1)
    assert u[1] == image.topics.by_name["u"].partitions[1]  # no ELR: untouched
    assert cleared.topics.by_name["t"].partitions[0].eligible_leader_replicas == ()


@pytest.mark.parametrize("record", [
    FenceBrokerRecord(id=9, epoch=1),
    FenceBrokerRecord(id=1, epoch=11),  # wrong epoch
    PartitionChangeRecord(partition_id=5, topic_id=TOPIC, isr=(1,)),
    PartitionChangeRecord(partition_id=0, topic_id=uuid.UUID(int=9), isr=(1,)),
    RemoveTopicRecord(topic_id=uuid.UUID(int=9)),
])
def test_inconsistent_records_raise(record: object) -> None:
    with pytest.raises(MetadataImageError):
        image_of([*sample_records(), record])


def test_feature_level_zero_removes() -> None:
    image = image_of([*sample_records(), FeatureLevelRecord(name="group.version",
                                                            feature_level=0)])
    assert image.features.finalized == {"metadata.version": 19}


def batch_of(base: int, records: list[object]) -> bytes:
    return encode_batch(base, [(None, encode_metadata_record(r)) for r in records],
                        partition_leader_epoch=1, timestamp=0)


def load(*batches: bytes) -> ImageLoader:
    loader = ImageLoader()
    for data in batches:
        for batch in iter_batches(data):
            loader.load_batch(batch)
    return loader


def test_transaction_visible_only_when_ended() -> None:
    mv = FeatureLevelRecord(name="metadata.version", feature_level=19)
    loader = load(batch_of(0, [BeginTransactionRecord(name="x"), mv]))
    open_before = loader.in_transaction
    assert open_before and loader.image.features.finalized == {}
    for batch in iter_batches(batch_of(2, [TopicRecord(name="t", topic_id=TOPIC),
                                           EndTransactionRecord()])):
        loader.load_batch(batch)
    assert not loader.in_transaction
    assert loader.image.features.metadata_version == 19 and "t" in loader.image.topics.by_name
    assert loader.image.provenance.last_offset == 3


def test_aborted_transaction_is_dropped() -> None:
    loader = load(batch_of(0, [BeginTransactionRecord(), TopicRecord(name="t", topic_id=TOPIC)]),
                  batch_of(2, [AbortTransactionRecord(reason="failover"),
                               FeatureLevelRecord(name="metadata.version", feature_level=19)]))
    assert loader.image.topics.by_name == {} and loader.image.features.metadata_version == 19


@pytest.mark.parametrize("records", [
    [BeginTransactionRecord(), BeginTransactionRecord()],
    [EndTransactionRecord()],
    [AbortTransactionRecord()],
])
def test_misplaced_transaction_markers_raise(records: list[object]) -> None:
    with pytest.raises(MetadataImageError):
        load(batch_of(0, records))
