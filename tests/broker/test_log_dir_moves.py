"""AlterReplicaLogDirs on the broker: each partition's answer, the move's states, the copy
into a ``-future`` log while the replica serves, the swap (records, producer state, leader
epochs, high watermark carried), a cancelled move, and a restart in the middle of one."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from replica_fixtures import client_batch, topic, until, with_records

from pykraft.broker.alter_log_dirs import alter_replica_log_dirs
from pykraft.broker.dir_assignments import OnDone
from pykraft.broker.log_dir_mover import LogDirMover
from pykraft.broker.log_dirs import describe_log_dirs
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.features import METADATA_VERSION_FEATURE
from pykraft.ids import TopicPartition
from pykraft.image.configs import ConfigResourceType
from pykraft.image.image import MetadataImage
from pykraft.image.versions import MV_3_7_IV2
from pykraft.log.log_manager import CLEANER_OFFSET_CHECKPOINT, LogManager
from pykraft.messages.kafka.alter_replica_log_dirs_request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from pykraft.messages.kafka.describe_log_dirs_request import DescribeLogDirsRequest
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ConfigRecord, FeatureLevelRecord
from pykraft.replica.log_dir_move import LogDirMove, MoveState, Step
from pykraft.replica.replication_quota import UNLIMITED
from pykraft.runtime.error_answer import error_answer
from pykraft.storage.log_config import LogConfig
from pykraft.storage.offset_checkpoints import read_offset_checkpoint

T1 = uuid.UUID(int=71)
DIR_A, DIR_B = uuid.UUID(int=8), uuid.UUID(int=9)
TP = TopicPartition("t", 0)
NOW = 2_000
T = TypeVar("T")


class _Controller:
    """Takes AssignReplicasToDirs: remembers each, accepts when told."""

    def __init__(self) -> None:
        self.told: list[tuple[uuid.UUID, int, uuid.UUID]] = []
        self.waiting: list[OnDone] = []

    def assign(self, topic_id: uuid.UUID, partition: int, directory_id: uuid.UUID,
               on_done: OnDone = None) -> None:
        self.told.append((topic_id, partition, directory_id))
        self.waiting.append(on_done)

    def accept_all(self) -> None:
        for on_done in self.waiting:
            if on_done is not None:
                on_done()
        self.waiting.clear()


def _logs(tmp_path: Path) -> LogManager:
    dirs = [tmp_path / "a", tmp_path / "b"]
    logs = LogManager(dirs, LogConfig(segment_bytes=4096),
                      dir_ids={dirs[0]: DIR_A, dirs[1]: DIR_B})
    logs.startup(1_000)
    return logs


def _broker(tmp_path: Path, *, logs: LogManager | None = None, max_bytes: int = 1 << 20,
            configs: tuple[ConfigRecord, ...] = ()
            ) -> tuple[ReplicaManager, LogDirMover, _Controller]:
    """Broker 1 with log dirs a and b, leading t-0 (in a) alone, at 3.7-IV2; ``configs``
    in the image that creates t."""
    manager = ReplicaManager(1, logs or _logs(tmp_path), {})
    manager.logs.prefer(TP, tmp_path / "a")
    manager.apply_image(with_records(MetadataImage(), FeatureLevelRecord(
        name=METADATA_VERSION_FEATURE, feature_level=MV_3_7_IV2),
        *topic("t", T1, (1,), (2,)), *configs), 1_000)
    controller = _Controller()
    mover = LogDirMover(manager, clock_ms=lambda: NOW, max_bytes=max_bytes, backoff_ms=1,
                        assign=controller.assign)
    return manager, mover, controller


def _produce(manager: ReplicaManager, count: int, *, first_sequence: int) -> None:
    part = manager.partition_for("t", 0)
    for n in range(count):
        batch = client_batch([b"v" * 200] * 3, producer_id=7, epoch=0,
                             sequence=first_sequence + 3 * n)
        manager.append_records(part, batch, acks=-1, api_version=12, now_ms=NOW)


def _run(mover: LogDirMover) -> int:
    """Copy steps until none has work; how many ran."""
    steps = 0
    while mover.step(NOW):
        steps += 1
    return steps


def _values(manager: ReplicaManager) -> int:
    """Records in t-0 from offset 0 on, read batch by batch."""
    part = manager.partition_for("t", 0)
    return sum(h.last_offset_delta + 1 for h in part.log.batch_headers(0))


# ---------------------------------------------------------------------- the states


def _state(move: LogDirMove) -> MoveState:
    return move.state


def test_a_move_asks_the_controller_before_it_swaps() -> None:
    move = LogDirMove(DIR_A, DIR_B, assigns=True)
    assert move.revert_to is None
    assert move.caught_up() is Step.ASSIGN
    assert move.caught_up() is Step.WAIT and move.revert_to == DIR_A
    move.accepted()
    assert _state(move) is MoveState.ACCEPTED and move.revert_to == DIR_A
    assert move.caught_up() is Step.SWAP
    assert _state(move) is MoveState.DONE and move.revert_to is None
    with pytest.raises(RuntimeError):
        move.caught_up()


def test_without_directory_assignments_the_first_catch_up_swaps() -> None:
    move = LogDirMove(None, None, assigns=False)
    move.accepted()  # nothing was asked: changes nothing
    assert move.caught_up() is Step.SWAP


# ---------------------------------------------------------------------- the answers


def test_each_partition_is_answered_as_kafka(tmp_path: Path) -> None:
    manager, mover, _ = _broker(tmp_path)
    b = str((tmp_path / "b").absolute())
    assert mover.alter(TP, str(tmp_path / "elsewhere")) == ErrorCode.LOG_DIR_NOT_FOUND
    assert mover.alter(TopicPartition("nope", 0), b) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert mover.alter(TopicPartition("t", 9), b) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert mover.alter(TopicPartition("x" * 215, 0), b) == ErrorCode.INVALID_TOPIC_EXCEPTION
    # t-1 is broker 2's: known, not hosted here
    assert mover.alter(TopicPartition("t", 1), b) == ErrorCode.REPLICA_NOT_AVAILABLE
    assert mover.alter(TP, str((tmp_path / "a").absolute())) == ErrorCode.NONE
    assert manager.logs.futures == {} and mover.moving == frozenset()
    manager.logs.failures.offline.add(tmp_path / "b")
    assert mover.alter(TP, b) == ErrorCode.KAFKA_STORAGE_ERROR


def test_a_replica_not_yet_created_goes_to_the_directory_asked(tmp_path: Path) -> None:
    """Kafka's maybeUpdatePreferredLogDir: REPLICA_NOT_AVAILABLE now, and the log is
    created there when the replica comes."""
    manager, mover, _ = _broker(tmp_path)
    assert mover.alter(TopicPartition("t", 1), str((tmp_path / "b").absolute())) \
        == ErrorCode.REPLICA_NOT_AVAILABLE
    manager.apply_image(with_records(manager.image, *topic("u", uuid.UUID(int=5), (1,))), NOW)
    manager.apply_image(with_records(manager.image, *topic("t", T1, (1,), (1,))), NOW)
    where = {tp: h.log.directory.parent.name for tp, h in manager.partitions.items()}
    assert where[TopicPartition("t", 1)] == "b"


# ---------------------------------------------------------------------- the move


def test_a_replica_moves_while_it_takes_writes(tmp_path: Path) -> None:
    """The copy goes a step at a time while the leader appends; the controller is told of
    the new directory once caught up, and the logs swap once it accepted: every record,
    the producer state, epochs and high watermark carried, the old copy deleted."""
    manager, mover, controller = _broker(tmp_path, max_bytes=1024)
    _produce(manager, 10, first_sequence=0)
    part = manager.partition_for("t", 0)
    assert mover.alter(TP, str((tmp_path / "b").absolute())) == ErrorCode.NONE
    (future,) = manager.logs.futures.values()
    assert future.directory.parent == tmp_path / "b"
    assert future.directory.name.startswith("t-0.") and future.directory.name.endswith("-future")
    assert mover.step(NOW)  # one step: part of the log
    listed = describe_log_dirs(DescribeLogDirsRequest(topics=None), manager)
    rows = {(r.log_dir.rsplit("/", 1)[1], p.is_future_key): p.offset_lag
            for r in listed.results for t in r.topics for p in t.partitions}
    assert rows.keys() == {("a", False), ("b", True)} and rows[("b", True)] > 0
    _produce(manager, 5, first_sequence=30)  # the replica still takes writes
    _run(mover)
    assert controller.told == [(T1, 0, DIR_B)]  # caught up: asked, not swapped yet
    assert part.log.directory.parent == tmp_path / "a"
    _produce(manager, 2, first_sequence=45)
    part.log.assign_epoch_start_offset(3, part.log_end_offset)  # an epoch with no batch yet
    controller.accept_all()
    _run(mover)
    assert part.log.directory == tmp_path / "b" / "t-0"
    assert manager.logs.futures == {} and mover.moving == frozenset()
    assert _values(manager) == 3 * 17 and part.high_watermark == 3 * 17
    assert part.log.leader_epochs.entries == [(0, 0), (3, 3 * 17)]
    assert part.producer_state.producers[7].last_seq == 3 * 17 - 1
    assert all(p.name.endswith("-delete") for p in (tmp_path / "a").iterdir()
               if p.name.startswith("t-0"))


def test_a_move_elsewhere_cancels_the_one_in_progress(tmp_path: Path) -> None:
    """Back to the current directory: the future log is deleted and the controller, told
    of the target already, is told the original directory again."""
    manager, mover, controller = _broker(tmp_path)
    _produce(manager, 2, first_sequence=0)
    assert mover.alter(TP, str((tmp_path / "b").absolute())) == ErrorCode.NONE
    _run(mover)
    assert controller.told == [(T1, 0, DIR_B)]
    assert mover.alter(TP, str((tmp_path / "a").absolute())) == ErrorCode.NONE
    assert controller.told == [(T1, 0, DIR_B), (T1, 0, DIR_A)]
    assert manager.logs.futures == {} and mover.moving == frozenset()
    controller.accept_all()  # the first answer comes late: nothing swaps
    assert not mover.step(NOW)
    assert manager.partition_for("t", 0).log.directory.parent == tmp_path / "a"


def test_a_restart_resumes_the_copy(tmp_path: Path) -> None:
    """The ``-future`` log is loaded at start-up and the move goes on from its end."""
    manager, mover, _ = _broker(tmp_path, max_bytes=1024)
    _produce(manager, 10, first_sequence=0)
    mover.alter(TP, str((tmp_path / "b").absolute()))
    mover.step(NOW)
    copied = manager.logs.futures[TP].log_end_offset
    assert 0 < copied < 30
    manager.shutdown(NOW, NOW)
    logs = _logs(tmp_path)
    assert logs.futures[TP].log_end_offset == copied
    manager, mover, controller = _broker(tmp_path, logs=logs)
    mover.resume()
    assert mover.moving == {TP}
    _run(mover)
    controller.accept_all()
    _run(mover)
    part = manager.partition_for("t", 0)
    assert part.log.directory == tmp_path / "b" / "t-0" and _values(manager) == 30


def test_a_deleted_replica_drops_its_move(tmp_path: Path) -> None:
    manager, mover, _ = _broker(tmp_path)
    _produce(manager, 2, first_sequence=0)
    mover.alter(TP, str((tmp_path / "b").absolute()))
    manager.apply_image(with_records(manager.image, *topic("t", T1, (2,), (2,))), NOW)
    assert not mover.step(NOW)
    assert mover.moving == frozenset() and manager.logs.futures == {}


def test_the_copy_waits_while_its_quota_is_exceeded(tmp_path: Path) -> None:
    """replica.alter.log.dirs.io.max.bytes.per.second: the copied bytes count, and the
    mover copies nothing while the rate is over the bound (the clock stands still here)."""
    manager, mover, controller = _broker(tmp_path, max_bytes=1024)
    _produce(manager, 10, first_sequence=0)
    quota = manager.throttles.alter_log_dirs
    quota.bound = 500
    mover.alter(TP, str((tmp_path / "b").absolute()))
    mover.step(NOW)
    future = manager.logs.futures[TP]
    copied = future.log_end_offset
    assert quota.is_exceeded(NOW)

    async def run() -> None:
        task = asyncio.create_task(mover.run())
        for _ in range(20):
            await asyncio.sleep(0)
        assert future.log_end_offset == copied
        quota.bound = UNLIMITED
        await until(lambda: controller.told, "caught up")
        task.cancel()

    asyncio.run(run())
    assert future.log_end_offset == 30


def test_a_request_answers_each_partition_once_and_a_refusal_every_one(tmp_path: Path) -> None:
    """A partition named under two directories takes the last (Kafka's partitionDirs);
    without ALTER on the cluster every partition as named gets CLUSTER_AUTHORIZATION_FAILED
    (Kafka's getErrorResponse: each directory's topics apart)."""
    _, mover, _ = _broker(tmp_path)
    a = str((tmp_path / "a").absolute())
    body = AlterReplicaLogDirsRequest(dirs=(
        AlterReplicaLogDir(path="/nowhere", topics=(AlterReplicaLogDirTopic("t", (0, 1)),)),
        AlterReplicaLogDir(path=a, topics=(AlterReplicaLogDirTopic("t", (0,)),
                                           AlterReplicaLogDirTopic("u", (0,))))))
    answer = alter_replica_log_dirs(body, mover)
    assert [(t.topic_name, [(p.partition_index, ErrorCode(p.error_code)) for p in t.partitions])
            for t in answer.results] == [
        ("t", [(0, ErrorCode.NONE), (1, ErrorCode.LOG_DIR_NOT_FOUND)]),
        ("u", [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])]
    refused = error_answer(ApiKey.ALTER_REPLICA_LOG_DIRS, body,
                           ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    assert [(t.topic_name, [p.partition_index for p in t.partitions], {p.error_code
             for p in t.partitions}) for t in refused.results] == [
        ("t", [0, 1], {ErrorCode.CLUSTER_AUTHORIZATION_FAILED}),
        ("t", [0], {ErrorCode.CLUSTER_AUTHORIZATION_FAILED}),
        ("u", [0], {ErrorCode.CLUSTER_AUTHORIZATION_FAILED})]


def test_a_failed_target_dir_drops_the_move_and_the_replica_serves_on(tmp_path: Path) -> None:
    manager, mover, _ = _broker(tmp_path)
    _produce(manager, 2, first_sequence=0)
    mover.alter(TP, str((tmp_path / "b").absolute()))
    manager.logs.failures.report = lambda directory: bool(
        manager.take_dir_offline(directory)) or True
    manager.logs.failures.fail(tmp_path / "b", "Error while appending", OSError("I/O error"))
    assert not mover.step(NOW)
    assert mover.moving == frozenset() and manager.logs.futures == {}
    _produce(manager, 1, first_sequence=6)
    assert _values(manager) == 9


# ---------------------------------------------------------------------- the cleaner


def _compacted(tmp_path: Path) -> tuple[ReplicaManager, LogDirMover, _Controller]:
    """:func:`_broker` with t compacted, 200-byte segments, 8 records over 2 keys."""
    manager, mover, controller = _broker(tmp_path, max_bytes=1024, configs=tuple(
        ConfigRecord(resource_type=ConfigResourceType.TOPIC, resource_name="t", name=name,
                     value=value)
        for name, value in (("cleanup.policy", "compact"), ("internal.segment.bytes", "200"))))
    part = manager.partition_for("t", 0)
    for index in range(8):
        manager.append_records(part, client_batch([b"v%d" % index], key=b"k%d" % (index % 2)),
                               acks=-1, api_version=12, now_ms=NOW)
    assert len(part.log.segment_stats()) > 2  # cleanable segments
    return manager, mover, controller


def _cleaned_at(directory: Path) -> dict[TopicPartition, int]:
    return read_offset_checkpoint(directory / CLEANER_OFFSET_CHECKPOINT)


def test_a_partition_moving_between_dirs_is_not_cleaned_until_the_swap(tmp_path: Path) -> None:
    """Kafka pauses a partition's cleaning while it moves (``abortAndPauseCleaning`` when
    its future log is created, ``resumeCleaning`` after the swap, the cleaner checkpoint
    moved along): mid-move the cleaner skips it, after the swap it cleans it in its new
    directory."""
    manager, mover, controller = _compacted(tmp_path)
    size = manager.partition_for("t", 0).log.size
    assert mover.alter(TP, str((tmp_path / "b").absolute())) == ErrorCode.NONE
    assert mover.step(NOW)  # part of the log copied
    assert asyncio.run(manager.run_cleaner(NOW)) == 0
    _run(mover)
    assert asyncio.run(manager.run_cleaner(NOW)) == 0  # caught up, not swapped yet
    assert manager.partition_for("t", 0).log.size == size
    controller.accept_all()
    _run(mover)
    part = manager.partition_for("t", 0)
    assert part.log.directory.parent == tmp_path / "b"
    assert asyncio.run(manager.run_cleaner(NOW)) == 1
    assert part.log.size < size
    assert TP in _cleaned_at(tmp_path / "b") and TP not in _cleaned_at(tmp_path / "a")


def test_a_move_aborts_a_pass_in_progress_and_a_cancel_resumes(tmp_path: Path) -> None:
    """A move that starts while the cleaner walks the partition's records stops the pass
    before it swaps a segment (Kafka's ``checkCleaningAborted``); the move cancelled (back
    to the current directory), the partition is cleaned again."""
    manager, mover, _ = _compacted(tmp_path)
    size = manager.partition_for("t", 0).log.size

    async def moving_meanwhile(work: Callable[[], T]) -> T:
        if not mover.moving:
            assert mover.alter(TP, str((tmp_path / "b").absolute())) == ErrorCode.NONE
        return work()

    assert asyncio.run(manager.run_cleaner(NOW, compute=moving_meanwhile)) == 0
    assert mover.moving == {TP} and manager.partition_for("t", 0).log.size == size
    assert mover.alter(TP, str((tmp_path / "a").absolute())) == ErrorCode.NONE
    assert mover.moving == frozenset()
    assert asyncio.run(manager.run_cleaner(NOW)) == 1
    assert manager.partition_for("t", 0).log.size < size
