"""A follower's appends and truncations on real partition logs: the leader's batches land
byte for byte, producer state follows (and survives a leadership move), and divergence or
a leader log start past ours truncate as Kafka does."""

from __future__ import annotations

import uuid
from pathlib import Path

from replica_fixtures import client_batch, hosted, produce, replicas_of, topic, with_records

from pykraft.broker.follower_log import (
    append_as_follower,
    last_fetched_epoch,
    truncate_fully_and_start_at,
    truncate_to,
)
from pykraft.broker.replica_manager import HostedPartition
from pykraft.image.image import MetadataImage
from pykraft.records.metadata import PartitionChangeRecord
from pykraft.replica.follower import truncation_for
from pykraft.storage.txn_index import AbortedTxn

T1 = uuid.UUID(int=7)
BIG = 1 << 24


def copy(leader: HostedPartition, follower: HostedPartition, upto: int | None = None) -> None:
    """One follower fetch's worth: the leader's batches from the follower's log end."""
    data = leader.log.read(follower.log_end_offset, BIG, max_offset=upto)
    append_as_follower(follower, data, leader_high_watermark=leader.high_watermark,
                       leader_log_start_offset=leader.log_start_offset, now_ms=3_000)


def diverging(leader: HostedPartition, follower: HostedPartition) -> tuple[int, int]:
    """The leader's answer to a follower fetch, by Kafka's rule (``Partition.readRecords``):
    the end of the largest epoch at or below the follower's last fetched one."""
    return leader.log.leader_epochs.end_offset_for(last_fetched_epoch(follower),
                                                   leader.log_end_offset)


def test_leader_batches_land_byte_for_byte_with_high_watermark_and_epochs(
        tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    leader, follower = replicas_of(tmp_path, 1, image), replicas_of(tmp_path, 2, image)
    produce(leader, [b"a", b"b"])
    produce(leader, [b"c"], producer_id=9, epoch=0, sequence=0)
    lead, part = hosted(leader), hosted(follower)
    lead.high_watermark = 2  # as the leader's ISR protocol would have it
    copy(lead, part)
    assert part.log.read(0, BIG) == lead.log.read(0, BIG)
    assert (part.log_end_offset, part.high_watermark) == (3, 2)
    assert part.log.leader_epochs.entries == [(0, 0)]
    assert part.producer_state.last_entry(9) is not None
    assert part.producer_state.map_end_offset == 3


def test_a_batch_cut_short_by_the_leaders_read_is_left_for_the_next_fetch(
        tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    leader, follower = replicas_of(tmp_path, 1, image), replicas_of(tmp_path, 2, image)
    produce(leader, [b"a"])
    produce(leader, [b"b" * 100])
    lead, part = hosted(leader), hosted(follower)
    data = lead.log.read(0, BIG)
    append_as_follower(part, data[:-10], leader_high_watermark=2, leader_log_start_offset=0,
                       now_ms=3_000)
    assert part.log_end_offset == 1
    copy(lead, part)
    assert part.log.read(0, BIG) == data


def test_extra_batches_of_an_old_epoch_are_truncated_to_the_new_leaders_epoch_end(
        tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2, 3)))
    old, follower, new = (replicas_of(tmp_path, i, image) for i in (1, 2, 3))
    produce(old, [b"a", b"b"])
    produce(old, [b"c"])
    produce(old, [b"lost-1", b"lost-2"], producer_id=9, epoch=0, sequence=0)  # 3-4
    lead_old, part, lead_new = hosted(old), hosted(follower), hosted(new)
    copy(lead_old, part)
    copy(lead_old, lead_new, upto=3)  # the new leader never saw offsets 3-4
    assert (part.log_end_offset, lead_new.log_end_offset) == (5, 3)
    assert part.producer_state.last_entry(9) is not None

    image = with_records(image, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=3))
    for manager in (old, follower, new):
        manager.apply_image(image, 4_000)
    assert lead_new.leader_epoch == 1
    produce(new, [b"d", b"e", b"f"], producer_id=9, epoch=0, sequence=0)  # 3-5, epoch 1

    epoch, end = diverging(lead_new, part)
    assert (epoch, end) == (0, 3)
    cut = truncation_for(part.log.leader_epochs, part.log_end_offset, epoch, end,
                         part.log_end_offset)
    assert (cut.offset, cut.completed) == (3, True)
    truncate_to(part, cut.offset, 5_000)
    assert part.log_end_offset == 3
    assert part.producer_state.last_entry(9) is None  # the truncated batch's state is gone
    copy(lead_new, part)
    assert part.log.read(0, BIG) == lead_new.log.read(0, BIG)
    assert part.log.leader_epochs.entries == [(0, 0), (1, 3)]

    # the follower becomes leader: a retry of the new leader's idempotent batch is
    # answered with its original offsets, nothing written
    image = with_records(image, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=2))
    follower.apply_image(image, 6_000)
    assert produce(follower, [b"d", b"e", b"f"], producer_id=9, epoch=0, sequence=0) == 3
    assert part.log_end_offset == 6


def test_a_follower_behind_the_leaders_log_start_restarts_there(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    follower = replicas_of(tmp_path, 2, image)
    part = hosted(follower)
    append_as_follower(part, client_batch([b"x"], producer_id=4, epoch=0, sequence=0),
                       leader_high_watermark=1, leader_log_start_offset=0, now_ms=2_000)
    assert part.producer_state.last_entry(4) is not None
    truncate_fully_and_start_at(part, 50, 3_000)
    assert (part.log_start_offset, part.log_end_offset, part.high_watermark) == (50, 50, 50)
    assert part.producer_state.last_entry(4) is None
    assert part.log.leader_epochs.entries == []
    assert list(part.log.directory.glob("*.snapshot")) == []


def test_the_follower_log_start_follows_the_leaders(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    leader, follower = replicas_of(tmp_path, 1, image), replicas_of(tmp_path, 2, image)
    for value in (b"a", b"b", b"c"):
        produce(leader, [value])
    lead, part = hosted(leader), hosted(follower)
    copy(lead, part, upto=2)
    lead.high_watermark = 3
    lead.log.increment_log_start_offset(2, 3)
    copy(lead, part)
    assert (part.log_start_offset, part.log_end_offset, part.high_watermark) == (2, 3, 3)


def test_an_epoch_led_without_appending_is_dropped_at_the_log_end(tmp_path: Path) -> None:
    """B leads epoch 1 at offset 3 and appends nothing; C leads epoch 2 at 3. B's epoch 1
    starts at its log end with no batch: the truncation to 3 the leader asks for drops it,
    so the next fetch agrees (it looped for ever, truncating to 3 each time)."""
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2, 3)))
    old, b_node, c_node = (replicas_of(tmp_path, i, image) for i in (1, 2, 3))
    produce(old, [b"a", b"b", b"c"])
    b_part, c_part = hosted(b_node), hosted(c_node)
    for part in (b_part, c_part):
        copy(hosted(old), part)

    image = with_records(image, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=2))
    for manager in (b_node, c_node):
        manager.apply_image(image, 4_000)
    assert b_part.log.leader_epochs.entries == [(0, 0), (1, 3)]
    image = with_records(image, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=3))
    for manager in (b_node, c_node):
        manager.apply_image(image, 5_000)
    produce(c_node, [b"d"])

    epoch, end = diverging(c_part, b_part)
    assert (epoch, end) == (0, 3)
    cut = truncation_for(b_part.log.leader_epochs, b_part.log_end_offset, epoch, end,
                         b_part.log_end_offset)
    assert (cut.offset, cut.completed) == (3, True)
    truncate_to(b_part, cut.offset, 6_000)
    assert b_part.log.leader_epochs.entries == [(0, 0)]
    assert last_fetched_epoch(b_part) == 0
    copy(c_part, b_part)
    assert b_part.log.read(0, BIG) == c_part.log.read(0, BIG)
    assert b_part.log.leader_epochs.entries == [(0, 0), (2, 3)]


def test_markers_end_transactions_on_the_follower_as_on_the_leader(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    leader, follower = replicas_of(tmp_path, 1, image), replicas_of(tmp_path, 2, image)
    lead = hosted(leader)
    produce(leader, [b"a"], producer_id=9, epoch=0, sequence=0, transactional=True)  # 0
    leader.append_marker(lead, producer_id=9, producer_epoch=0, aborted=True,
                         coordinator_epoch=3, transaction_version=0, now_ms=2_000)  # 1
    produce(leader, [b"plain"])                                                      # 2
    produce(leader, [b"c"], producer_id=7, epoch=0, sequence=0, transactional=True)  # 3
    # the leader indexed the abort alone: nothing else open, so the offset after it
    assert lead.log.collect_aborted(0, 10) == [AbortedTxn(9, 0, 1, 2)]
    assert lead.last_stable_offset == 0  # nothing replicated yet
    part = hosted(follower)
    copy(lead, part)  # one chunk: Kafka's follower ends its transactions after applying
    # every batch, so producer 7's (offset 3) already counts as open at the abort
    assert part.log.collect_aborted(0, 10) == [AbortedTxn(9, 0, 1, 3)]
    assert part.producer_state.first_undecided_offset() == 3
    lead.high_watermark = 4
    assert lead.last_stable_offset == 3
