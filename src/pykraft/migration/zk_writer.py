"""KRaft -> ZooKeeper writes while migrating (migration-plan §7; Kafka's
``KRaftMigrationZkWriter``): :func:`sync` (``handleSnapshot``) compares an image with the
ZooKeeper read model, :func:`dual_write` (``handleDelta``) turns what a delta touched into
writes. Both give :class:`~pykraft.migration.zk_write.ZkWrite`s, one per Kafka operation, in
Kafka's order of the kinds; within a kind Kafka iterates hash sets, kept where it decides
something visible (the quota entities: the change notifications' numbers).
"""

from __future__ import annotations

from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.migration.zk_acl_writes import acls_delta, acls_sync, tokens_delta, tokens_sync
from pykraft.migration.zk_config_writes import (
    Passwords,
    configs_delta,
    configs_sync,
    producer_id_sync,
    quotas_delta,
    quotas_sync,
    write_producer_id,
)
from pykraft.migration.zk_topic_writes import topics_delta, topics_sync
from pykraft.migration.zk_tree import ZkTree
from pykraft.migration.zk_write import ZkWrite


def sync(image: MetadataImage, tree: ZkTree, controller_epoch: int,
         passwords: Passwords | None = None) -> list[ZkWrite]:
    """``handleSnapshot``: the writes making ZooKeeper (``tree``, read before) hold
    ``image``; ``controller_epoch`` is the KRaft leader epoch written into partition states.
    Kafka reads each kind from ZooKeeper after running the previous kinds' writes: only the
    topic writes change what a later kind reads (the topic config znodes), and
    :func:`~pykraft.migration.zk_config_writes.configs_sync` accounts for them."""
    topics = topics_sync(image.topics, tree, controller_epoch)
    return [*topics.writes, *configs_sync(image.configs.resources, tree, topics, passwords),
            *quotas_sync(image, tree), *producer_id_sync(image, tree),
            *acls_sync(image.acls, tree), *tokens_sync(image.delegation_tokens, tree)]


def touches_zookeeper(delta: MetadataDelta) -> bool:
    """Kafka's ``handleDelta`` result: whether ``delta`` touched a part of the image that
    ZooKeeper holds (the delta write time is recorded only for those)."""
    return any(part is not None for part in (
        delta.topics_delta, delta.configs_delta, delta.client_quotas_delta, delta.scram_delta,
        delta.producer_ids_delta, delta.acls_delta, delta.delegation_tokens_delta))


def dual_write(previous: MetadataImage, image: MetadataImage, delta: MetadataDelta,
               controller_epoch: int, passwords: Passwords | None = None) -> list[ZkWrite]:
    """``handleDelta``: the writes of what ``delta`` (``previous`` -> ``image``) touched."""
    writes: list[ZkWrite] = []
    if delta.topics_delta is not None:
        writes += topics_delta(previous.topics, image.topics, controller_epoch)
    writes += configs_delta(previous, image, delta, passwords)
    if delta.client_quotas_delta is not None or delta.scram_delta is not None:
        writes += quotas_delta(image, delta)
    if delta.producer_ids_delta is not None:
        writes.append(write_producer_id(image.producer_ids.next_producer_id))
    if delta.acls_delta is not None:
        writes += acls_delta(previous.acls, image.acls, delta.acls_delta.touched)
    if delta.delegation_tokens_delta is not None:
        writes += tokens_delta(image.delegation_tokens, delta.delegation_tokens_delta.touched)
    return writes
