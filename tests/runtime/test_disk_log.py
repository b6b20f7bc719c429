"""DiskRaftLog behaves like the core's MemoryLog; group commit covers appends before it."""

from __future__ import annotations

import asyncio
import errno
import tempfile
import threading
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.quorum_state import ElectionState
from pykraft.records.batch import encode_batch
from pykraft.runtime.disk_log import DiskRaftLog, FlushJob, run_flush
from pykraft.runtime.disk_quorum_state import FileQuorumStateStore
from pykraft.runtime.flusher import GroupCommitFlusher

Op = tuple[str, int, int]
ops = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3), st.integers(0, 2)),  # records, epoch bump
    st.tuples(st.just("truncate"), st.integers(0, 30), st.just(0)),
), max_size=25)


@settings(max_examples=40, deadline=None)
@given(ops=ops, probes=st.lists(st.integers(0, 8), min_size=1, max_size=5))
def test_matches_memory_log(ops: list[Op], probes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        _compare_with_memory_log(Path(directory), ops, probes)


def _compare_with_memory_log(directory: Path, ops: list[Op], probes: list[int]) -> None:
    disk = DiskRaftLog.open(directory, segment_bytes=300)  # small: many segments
    memory = MemoryLog()
    epoch = 1
    for kind, count, bump in ops:
        if kind == "append":
            epoch += bump
            data = encode_batch(memory.log_end_offset, [(None, b"v")] * count,
                                partition_leader_epoch=epoch, timestamp=0)
            disk.append(data)
            memory.append(data)
        elif count < memory.log_end_offset:
            memory.truncate_to(count)
            disk.truncate_to(count)
            epoch = max(1, memory.last_fetched_epoch)
        assert disk.log_end_offset == memory.log_end_offset
        assert disk.last_fetched_epoch == memory.last_fetched_epoch
    for offset in range(memory.log_end_offset):
        assert disk.read(offset, 1 << 20) == memory.read(offset, 1 << 20)
    for probe in probes:
        if memory.log_end_offset:
            assert disk.end_offset_for_epoch(probe).offset >= 0
        if probe >= memory.last_fetched_epoch:
            assert disk.end_offset_for_epoch(probe) == memory.end_offset_for_epoch(probe)
    disk.close()


def _append(disk: DiskRaftLog, records: int, epoch: int = 1) -> None:
    disk.append(encode_batch(disk.log_end_offset, [(None, b"x")] * records,
                             partition_leader_epoch=epoch, timestamp=0))


def test_group_commit_covers_everything_appended_before_it_started(tmp_path: Path) -> None:
    disk = DiskRaftLog.open(tmp_path, segment_bytes=1 << 20)
    release = threading.Event()
    started = threading.Event()
    jobs: list[FlushJob] = []

    def slow_fsync(job: FlushJob) -> None:
        jobs.append(job)
        started.set()
        release.wait(10)
        run_flush(job)

    flushed: list[int] = []

    async def scenario() -> None:
        flusher = GroupCommitFlusher(disk, flushed.append, lambda e: None, fsync=slow_fsync)
        _append(disk, 1)
        flusher.request()
        await asyncio.to_thread(started.wait, 10)
        for _ in range(5):  # arrive while the first fsync is running
            _append(disk, 2)
            flusher.request()
        assert disk.flushed_offset == 0
        release.set()
        await flusher.wait_idle()
        assert flusher.rounds == 2

    asyncio.run(scenario())
    assert [job.target_offset for job in jobs] == [1, 11]
    assert flushed == [1, 11]
    assert disk.flushed_offset == 11
    disk.close()


def test_a_flush_without_free_descriptors_is_retried_not_fatal(tmp_path: Path) -> None:
    """EMFILE (too many connections) is not a failed fsync: the round waits for
    descriptors, appends meanwhile join the next round, and nothing is reported fatal."""
    disk = DiskRaftLog.open(tmp_path, segment_bytes=1 << 20)
    failures = [OSError(errno.EMFILE, "Too many open files"),
                OSError(errno.ENFILE, "Too many open files in system")]
    jobs: list[FlushJob] = []

    def starved_fsync(job: FlushJob) -> None:
        jobs.append(job)
        if failures:
            raise failures.pop(0)
        run_flush(job)

    flushed: list[int] = []
    errors: list[BaseException] = []

    async def scenario() -> None:
        flusher = GroupCommitFlusher(disk, flushed.append, errors.append, fsync=starved_fsync)
        _append(disk, 1)
        flusher.request()
        _append(disk, 2)
        flusher.request()  # pending behind the retried round
        assert await flusher.wait_idle(10)

    asyncio.run(scenario())
    assert errors == []
    assert [job.target_offset for job in jobs] == [1, 1, 1, 3]
    assert flushed == [1, 3]
    disk.close()


def test_truncation_during_a_flush_lowers_what_it_proves(tmp_path: Path) -> None:
    disk = DiskRaftLog.open(tmp_path, segment_bytes=1 << 20)
    _append(disk, 3)
    _append(disk, 3)
    job = disk.prepare_flush()
    assert job is not None and job.target_offset == 6
    disk.truncate_to(3)
    _append(disk, 5, epoch=2)  # new data written after the fsync may have started
    run_flush(job)
    assert disk.complete_flush(job) == 3
    follow_up = disk.prepare_flush()
    assert follow_up is not None and follow_up.target_offset == 8
    disk.close()


def test_reopen_after_close_keeps_data_and_epochs(tmp_path: Path) -> None:
    disk = DiskRaftLog.open(tmp_path, segment_bytes=1 << 20)
    _append(disk, 2, epoch=1)
    _append(disk, 2, epoch=3)
    disk.close()
    again = DiskRaftLog.open(tmp_path, segment_bytes=1 << 20)
    assert (again.log_end_offset, again.flushed_offset, again.last_fetched_epoch) == (4, 4, 3)
    assert again.end_offset_for_epoch(2).offset == 2
    again.close()


def test_quorum_state_round_trip_in_kafka_v0_format(tmp_path: Path) -> None:
    store = FileQuorumStateStore(tmp_path, frozenset({3, 1, 2}))
    assert store.read() is None
    store.write(ElectionState(epoch=4, leader_id=2))
    assert store.path.read_bytes() == (
        b'{"clusterId":"","leaderId":2,"leaderEpoch":4,"votedId":-1,"appliedOffset":0,'
        b'"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}'
    )
    assert store.read() == ElectionState(epoch=4, leader_id=2)
    store.write(ElectionState(epoch=5, voted_id=3))
    assert store.read() == ElectionState(epoch=5, voted_id=3)
