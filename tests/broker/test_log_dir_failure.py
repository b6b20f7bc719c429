"""A log directory that fails: the broker logs it at ERROR and halts (Kafka's
handleLogDirFailure when the directory cannot be reported), a failed append leaves the log
as it was, and reads and replicated appends report their I/O errors too."""

from __future__ import annotations

import errno
import logging
import os
import uuid
from pathlib import Path

import pytest
from replica_fixtures import client_batch, hosted, produce, topic, with_records

from pykraft.broker.replica_manager import ReplicaManager
from pykraft.errors import StorageIOError
from pykraft.image.image import MetadataImage
from pykraft.log.log_dir_failure import LogDirFailures
from pykraft.log.log_manager import LogManager
from pykraft.log.partition_reads import FetchIsolation, PartitionFetch, read_partitions
from pykraft.protocol.errors import ErrorCode
from pykraft.storage.log_config import LogConfig

T1 = uuid.UUID(int=1)


class Halts:
    """Records the halts instead of ending the test process."""

    def __init__(self) -> None:
        self.statuses: list[int] = []

    def __call__(self, status: int) -> None:
        self.statuses.append(status)


def _replicas(tmp_path: Path, halts: Halts) -> ReplicaManager:
    directory = tmp_path / "logs"
    logs = LogManager([directory], LogConfig(), failures=LogDirFailures(
        [directory], metadata_log_dir=directory, halt=halts))
    logs.startup(1_000)
    manager = ReplicaManager(1, logs, {})
    manager.apply_image(with_records(MetadataImage(), *topic("t", T1, (1,))), 1_000)
    return manager


def _disk_full(*_: object) -> int:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_each_failure_is_logged_once_with_kafkas_reason(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The metadata log's directory, then the last one left, then another: Kafka's fatal
    reasons; a directory already offline neither logs nor halts again."""
    meta, data, other = tmp_path / "meta", tmp_path / "data", tmp_path / "other"
    halts = Halts()
    failures = LogDirFailures([meta, data, other], metadata_log_dir=meta, halt=halts)
    error = OSError(errno.ENOSPC, "No space left on device")
    with caplog.at_level(logging.ERROR, logger="pykraft.log.log_dir_failure"):
        failures.fail(other, "Error while appending records to t-0", error)
        failures.fail(other, "again", error)
        failures.fail(meta, "Error while reading t-1", error)
        failures.fail(data, "Error while reading t-2", error)
    reasons = [r.fields["reason"] for r in caplog.records  # type: ignore[attr-defined]
               if r.getMessage() == "halting"]
    assert reasons == [
        f"Shutdown broker because log dir {other} has failed and cannot be reported to the "
        "controller (no directory id)",
        f"Shutdown broker because the metadata log dir {meta} has failed",
        f"Shutdown broker because all log dirs in {meta}, {data}, {other} have failed"]
    assert [r.levelno for r in caplog.records] == [logging.ERROR] * 6
    assert halts.statuses == [1, 1, 1] and failures.offline == {meta, data, other}


def test_a_full_disk_fails_the_append_halts_and_damages_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The append that hits ENOSPC raises StorageIOError (KAFKA_STORAGE_ERROR) and halts
    the broker; the log keeps its end offset and bytes, and takes appends once there is
    room again (what a restart would find)."""
    halts = Halts()
    manager = _replicas(tmp_path, halts)
    produce(manager, [b"a", b"b"])
    part = hosted(manager)
    before = (part.log_end_offset, part.log.active.path.read_bytes())
    monkeypatch.setattr(os, "pwrite", _disk_full)  # what segments write with
    with pytest.raises(StorageIOError, match="No space left on device"):
        produce(manager, [b"c"])
    assert halts.statuses == [1]
    assert (part.log_end_offset, part.log.active.path.read_bytes()) == before
    monkeypatch.undo()
    assert produce(manager, [b"c"]) == 2
    manager.shutdown()


def test_an_unreadable_log_fails_its_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read's I/O error is KAFKA_STORAGE_ERROR for the partition and fails the
    directory, as Kafka's read path does (``maybeHandleIOException``)."""
    halts = Halts()
    manager = _replicas(tmp_path, halts)
    manager.partition_for("t", 0).log.append(client_batch([b"a"]), 1_000)
    part = hosted(manager)

    def unreadable(*_: object, **__: object) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(part.log.active, "locate", unreadable)
    reads = read_partitions([PartitionFetch(0, 0, 100)], lambda _: part, max_bytes=100,
                            isolation=FetchIsolation.LOG_END, failed=manager.read_failed)
    assert [r.error for r in reads] == [ErrorCode.KAFKA_STORAGE_ERROR]
    assert halts.statuses == [1] and manager.logs.failures.offline == {tmp_path / "logs"}
    manager.shutdown()


@pytest.mark.parametrize("checkpoint", ["replication-offset-checkpoint",
                                        "recovery-point-offset-checkpoint"])
def test_a_checkpoint_that_cannot_be_written_fails_its_directory(
        tmp_path: Path, checkpoint: str) -> None:
    """Kafka's checkpoint files go through the same failure channel: a high watermark or
    recovery point checkpoint that cannot replace its file fails the directory."""
    halts = Halts()
    manager = _replicas(tmp_path, halts)
    (tmp_path / "logs" / checkpoint).mkdir()  # the rename over it fails
    with pytest.raises(OSError):
        manager.checkpoint(1_000)
    assert halts.statuses == [1] and manager.logs.failures.offline == {tmp_path / "logs"}
    (tmp_path / "logs" / checkpoint).rmdir()
    manager.shutdown()
