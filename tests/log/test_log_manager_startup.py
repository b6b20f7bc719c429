"""Start-up of the log manager: every partition directory opened and recovered, on
``num.recovery.threads.per.data.dir`` threads (issue 29), with the same outcome as one."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from pykraft.errors import StorageError
from pykraft.ids import TopicPartition
from pykraft.log.log_manager import LogManager
from pykraft.records.batch import encode_batch
from pykraft.storage.file_error import StateFileError
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import PartitionLog

NOW = 1_000
PARTITIONS = [TopicPartition("t", number) for number in range(5)]


def _fill(directory: Path) -> None:
    logs = LogManager([directory], LogConfig())
    logs.startup(NOW)
    for tp in PARTITIONS:
        log = logs.get_or_create(tp, uuid.UUID(int=7), LogConfig(), NOW)
        for offset in range(tp.partition + 1):
            log.append(encode_batch(offset, [(None, b"v")], partition_leader_epoch=0,
                                    timestamp=NOW), NOW)
    logs.checkpoint()  # no shutdown: the next start recovers, as after kill -9
    for log in logs.logs.values():
        log.close()


@pytest.mark.parametrize("threads", [1, 3])
def test_every_partition_is_loaded_on_any_number_of_threads(tmp_path: Path,
                                                             threads: int) -> None:
    _fill(tmp_path)
    logs = LogManager([tmp_path], LogConfig())
    logs.startup(NOW, recovery_threads=threads)
    assert {tp: log.log_end_offset for tp, log in logs.logs.items()} == {
        tp: tp.partition + 1 for tp in PARTITIONS}
    logs.shutdown()


def test_one_partition_failing_to_load_closes_the_others_and_raises(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fill(tmp_path)
    (tmp_path / "t-3" / "0.log").write_bytes(b"")  # not a segment name: Kafka fails too
    opened: list[PartitionLog] = []
    original = PartitionLog.open

    def tracked(*args: Any, **kwargs: Any) -> PartitionLog:
        opened.append(original(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(PartitionLog, "open", tracked)
    logs = LogManager([tmp_path], LogConfig())
    with pytest.raises(StateFileError, match="not a segment name"):
        logs.startup(NOW, recovery_threads=2)
    assert logs.logs == {}
    assert len(opened) == len(PARTITIONS) - 1 and all(log.closed for log in opened)


def test_recovery_threads_below_one_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="at least 1"):
        LogManager([tmp_path], LogConfig()).startup(NOW, recovery_threads=0)


def _restarted(directories: list[Path]) -> int:
    logs = LogManager(directories, LogConfig())
    logs.startup(NOW)
    return logs.previous_broker_epoch


def test_the_previous_broker_epoch_is_the_one_every_clean_shutdown_marker_names(
        tmp_path: Path) -> None:
    """KIP-966: the broker's registration names it (PreviousBrokerEpoch) only if every log
    directory was shut down cleanly by the same incarnation; the markers are used once."""
    directories = [tmp_path / "a", tmp_path / "b"]
    assert _restarted(directories) == -1  # never shut down
    logs = LogManager(directories, LogConfig())
    logs.startup(NOW)
    logs.shutdown(broker_epoch=42)
    assert _restarted(directories) == 42
    assert _restarted(directories) == -1  # that start consumed the markers (a crash since)
    logs.shutdown(broker_epoch=42)
    (tmp_path / "b" / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')
    assert _restarted(directories) == -1  # directories disagree
