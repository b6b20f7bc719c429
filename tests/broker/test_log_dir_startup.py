"""A log directory already failed when the broker starts (Kafka 4.4's
``createAndValidateLogDirs`` and ``loadLogs``): it starts offline, the broker serves its
other directories and creates no second copy of a replica placed in the failed one; what
stops the broker instead (every directory failed, the metadata directory, a foreign or
unformatted one) is refused with Kafka's reason."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from replica_fixtures import topic, with_records

from pykraft.broker.broker_metrics import broker_families
from pykraft.broker.replica_manager import PartitionError, ReplicaManager
from pykraft.errors import StorageError
from pykraft.features import METADATA_VERSION_FEATURE
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.image.versions import MV_3_7_IV2
from pykraft.log.log_dir_failure import LogDirFailures
from pykraft.log.log_manager import LogManager
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import FeatureLevelRecord, PartitionChangeRecord
from pykraft.storage import partition_log
from pykraft.storage.log_config import LogConfig
from pykraft.storage.log_dir_check import check_log_dirs
from pykraft.storage.meta_properties import META_PROPERTIES, MetaProperties, write_meta_properties

CLUSTER = "q1w2e3r4t5y6u7i8o9p0aa"
NODE = 1
T1 = uuid.UUID(int=71)
DIR_A, DIR_B = uuid.UUID(int=1008), uuid.UUID(int=1009)
UNASSIGNED = uuid.UUID(int=1)


def _formatted(directory: Path, dir_id: uuid.UUID, *, cluster: str = CLUSTER,
               node: int = NODE) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_meta_properties(directory / META_PROPERTIES, MetaProperties(1, node, cluster, dir_id))
    return directory


def _two_dirs(tmp_path: Path) -> tuple[Path, Path]:
    return (_formatted(tmp_path / "a", DIR_A), _formatted(tmp_path / "b", DIR_B))


def _refusal(log_dirs: list[Path], metadata: Path) -> str:
    with pytest.raises(StorageError) as refused:
        check_log_dirs(log_dirs, metadata, NODE, broker=True)
    return str(refused.value)


# ---------------------------------------------------------------- the start-up checks


def test_a_path_that_is_not_a_directory_starts_offline(tmp_path: Path) -> None:
    a, b = _two_dirs(tmp_path)
    (b / META_PROPERTIES).unlink()
    b.rmdir()
    b.write_text("not a directory")
    found = check_log_dirs([a, b], a, NODE, broker=True)
    assert list(found.metas) == [a] and found.cluster_id == CLUSTER
    assert found.offline == {b: f"Failed to load {b} during broker startup: "
                                f"{b / META_PROPERTIES}: cannot read: Not a directory"}


def test_a_bad_meta_properties_starts_offline(tmp_path: Path) -> None:
    """A value that does not parse (Kafka: "Unable to read node.id as a base-10 number")
    is an error reading the file: the directory starts offline, as Kafka 4.4 did."""
    a, b = _two_dirs(tmp_path)
    path = b / META_PROPERTIES
    path.write_text(path.read_text().replace(f"node.id={NODE}", "node.id=abc"))
    found = check_log_dirs([a, b], a, NODE, broker=True)
    assert list(found.metas) == [a]
    assert found.offline[b].startswith(f"Failed to load {b} during broker startup: ")
    assert "node.id 'abc' is not an integer" in found.offline[b]


#: as root, the check runs in a child without the capabilities that ignore permission bits
_AS_A_USER = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
_CHECK = ("import json, sys; from pathlib import Path; "
          "from pykraft.storage.log_dir_check import check_log_dirs; "
          "a, b = Path(sys.argv[1]), Path(sys.argv[2]); "
          "found = check_log_dirs([a, b], a, 1, broker=True); "
          "print(json.dumps({str(d): why for d, why in found.offline.items()}))")


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None,
                    reason="as root chmod 000 needs setpriv to bite")
def test_an_unreadable_directory_starts_offline(tmp_path: Path) -> None:
    """``chmod 000``: reading its meta.properties is refused (Kafka 4.4 logged
    AccessDeniedException, then "Failed to load ... during broker startup")."""
    a, b = _two_dirs(tmp_path)
    b.chmod(0)
    try:
        if os.geteuid() == 0:
            done = subprocess.run([*_AS_A_USER, sys.executable, "-c", _CHECK, str(a), str(b)],
                                  capture_output=True, text=True, timeout=60, check=True)
            offline = {Path(d): why for d, why in json.loads(done.stdout).items()}
        else:
            offline = dict(check_log_dirs([a, b], a, NODE, broker=True).offline)
    finally:
        b.chmod(0o755)
    assert offline == {b: f"Failed to load {b} during broker startup: "
                          f"{b / META_PROPERTIES}: cannot read: Permission denied"}


def test_what_kafka_refuses_to_start_with(tmp_path: Path) -> None:
    """Each refusal names the directory and Kafka's reason."""
    a, b = _two_dirs(tmp_path)
    other = _formatted(tmp_path / "foreign", uuid.UUID(int=1010), cluster="ZZZZe3r4t5y6u7i8o9p0aa")
    assert "does not match cluster.id" in _refusal([a, other], a)
    stranger = _formatted(tmp_path / "stranger", uuid.UUID(int=1011), node=2)
    assert "stored node.id 2 does not match the configured node.id 1" in _refusal(
        [a, stranger], a)
    twin = _formatted(tmp_path / "twin", DIR_A)
    assert _refusal([a, twin], a).startswith(f"Duplicate directory ID {DIR_A} found")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _refusal([a, empty], a).startswith(f"no meta.properties found in {empty}")
    (b / META_PROPERTIES).write_text("version=1\nnode.id=abc\n")
    refused = _refusal([b, a], b)
    assert refused.startswith(f"{b / META_PROPERTIES}: node.id 'abc' is not an integer")
    assert refused.endswith(f"Encountered I/O error in metadata log directory {b}. Cannot "
                            "continue.")
    assert _refusal([b], b) == f"{b / META_PROPERTIES}: node.id 'abc' is not an integer"


def test_a_zookeeper_era_meta_properties_starts_as_kafka_starts_it(tmp_path: Path) -> None:
    """A broker rolled from ZooKeeper mode keeps its version 0 file (``broker.id``), as
    Kafka's KRaft start does (the reference migration's file, captured after Kafka 3.9's
    KRaft broker started on it, was still version 0); one without ``cluster.id`` is
    refused with Kafka's start-up error."""
    rolled = tmp_path / "rolled"
    rolled.mkdir()
    (rolled / META_PROPERTIES).write_text(
        "#\n#Mon Nov 30 21:49:03 UTC 2026\nbroker.id=1\ndirectory.id=krBXe_YnCKY9mp5kT08vCA\n"
        f"version=0\ncluster.id={CLUSTER}\n")
    kraft = _formatted(tmp_path / "kraft", DIR_B)
    found = check_log_dirs([rolled, kraft], rolled, NODE, broker=True)
    assert found.cluster_id == CLUSTER
    assert found.metas[rolled].version == 0
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / META_PROPERTIES).write_text("version=0\nbroker.id=1\n")
    assert _refusal([kraft, bare], kraft) == f"Error: cluster ID not found in {bare}"


def test_every_log_dir_failed_stops_the_broker_not_a_controller(tmp_path: Path) -> None:
    a, b = _two_dirs(tmp_path)
    meta = _formatted(tmp_path / "meta", uuid.UUID(int=1012))
    for directory in (a, b):
        (directory / META_PROPERTIES).write_text("version=1\nnode.id=abc\n")
    assert _refusal([a, b], meta).startswith(
        f"Shutdown broker because none of the specified log dirs from {a}, {b} can be "
        "created or validated: ")
    found = check_log_dirs([a, b], meta, NODE, broker=False)
    assert list(found.metas) == [meta] and set(found.offline) == {a, b}
    assert _refusal([a, b], a).startswith("No readable meta.properties files found: ")


# ---------------------------------------------------------------- the broker


def _broker(tmp_path: Path, offline: Path | None, metadata: str = "a") -> ReplicaManager:
    """Broker 1 with log dirs a and b (the metadata log in ``metadata``), ``offline``
    failed at start."""
    a, b = tmp_path / "a", tmp_path / "b"
    failures = LogDirFailures([a, b], tmp_path / metadata,
                              halt=lambda status: pytest.fail(f"halted {status}"))
    if offline is not None:
        failures.fail_at_startup(offline, f"Failed to create or validate data directory "
                                          f"{offline}", f"{offline} is not readable")
    logs = LogManager([a, b], LogConfig(), dir_ids={a: DIR_A, b: DIR_B}, failures=failures)
    logs.startup(1_000)
    manager = ReplicaManager(NODE, logs, {})
    manager.apply_image(with_records(MetadataImage(), FeatureLevelRecord(
        name=METADATA_VERSION_FEATURE, feature_level=MV_3_7_IV2)), 1_000)
    return manager


def _place(manager: ReplicaManager, directories: list[uuid.UUID]) -> None:
    records = [*topic("t", T1, *[(NODE,)] * len(directories))]
    records += [PartitionChangeRecord(partition_id=p, topic_id=T1, directories=(d,))
                for p, d in enumerate(directories)]
    manager.apply_image(with_records(manager.image, *records), 1_000)


def _code(manager: ReplicaManager, partition: int) -> ErrorCode:
    try:
        manager.partition_for("t", partition)
    except PartitionError as refused:
        return ErrorCode(refused.error_code)
    return ErrorCode.NONE


def test_a_replica_placed_in_the_failed_dir_is_not_created_elsewhere(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's createLogInAssignedDirectoryId: with a directory offline, a replica the image
    places there (its log may be there) gets no second copy, which would stop the next
    start-up once the directory is back: it is not hosted (NOT_LEADER_OR_FOLLOWER, Kafka's
    "Log for partition ... is not available"), nor counted offline (Kafka marks offline
    only the replicas of a directory that fails while it runs); one placed in the online
    directory, or UNASSIGNED, is created in the online one, and so is the first once the
    image places it there."""
    a, b = tmp_path / "a", tmp_path / "b"
    (b / "t-0").mkdir(parents=True)  # the replica's log, out of reach
    with caplog.at_level(logging.ERROR, logger="pykraft.log.log_dir_failure"):
        manager = _broker(tmp_path, offline=b)
    (failed,) = caplog.records
    assert failed.getMessage() == "log_dir_failed"
    assert failed.fields["dir"] == str(b)  # type: ignore[attr-defined]
    assert failed.fields["error"] == f"{b} is not readable"  # type: ignore[attr-defined]
    assert manager.logs.online_dirs == (a,)
    _place(manager, [DIR_B, DIR_A, UNASSIGNED])
    assert [_code(manager, p) for p in range(3)] == [
        ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE, ErrorCode.NONE]
    assert not (a / "t-0").exists() and manager.offline_count == 0
    gauges = {(sample.name, tuple(sample.labels.values())): sample.value
              for family in broker_families(manager) for sample in family.samples
              if "logmanager" in sample.name}
    assert gauges == {("kafka_log_logmanager_offlinelogdirectorycount", ()): 1,
                      ("kafka_log_logmanager_logdirectoryoffline", (str(a),)): 0,
                      ("kafka_log_logmanager_logdirectoryoffline", (str(b),)): 1}
    assert {tp: h.log.directory.parent for tp, h in manager.partitions.items()} == {
        TopicPartition("t", 1): a, TopicPartition("t", 2): a}
    manager.apply_image(with_records(manager.image, PartitionChangeRecord(
        partition_id=0, topic_id=T1, directories=(DIR_A,))), 1_000)
    assert _code(manager, 0) == ErrorCode.NONE
    assert manager.partition_for("t", 0).log.directory == a / "t-0"


def test_without_a_failed_dir_a_replica_placed_in_an_unknown_dir_is_created(
        tmp_path: Path) -> None:
    manager = _broker(tmp_path, offline=None)
    _place(manager, [uuid.UUID(int=4242)])
    assert _code(manager, 0) == ErrorCode.NONE


def test_a_dir_that_fails_while_loading_goes_offline_and_the_other_serves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's loadLogs: an I/O error opening a directory's logs takes that directory
    offline, the logs opened there closed; the broker starts on the others."""
    a, b = tmp_path / "a", tmp_path / "b"
    for directory in (a / "t-1", b / "t-0", b / "t-2"):
        directory.parent.mkdir(exist_ok=True)
        partition_log.PartitionLog.open(directory, LogConfig(), now_ms=0).close()
    opened = partition_log.PartitionLog.open

    def failing_open(directory: Path, *args: object, **kwargs: object
                     ) -> partition_log.PartitionLog:
        if directory.name == "t-2":
            raise OSError(errno.EIO, "Input/output error")
        return opened(directory, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(partition_log.PartitionLog, "open", failing_open)
    with caplog.at_level(logging.ERROR, logger="pykraft.log.log_dir_failure"):
        manager = _broker(tmp_path, offline=None)
    assert manager.logs.online_dirs == (a,)
    assert set(manager.logs.logs) == {TopicPartition("t", 1)}
    (failed,) = caplog.records
    assert failed.fields == {  # type: ignore[attr-defined]
        "dir": str(b), "message": f"Error while loading log dir {b}",
        "error": "OSError: [Errno 5] Input/output error"}


def test_the_last_dir_failing_while_loading_stops_the_broker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    b = tmp_path / "b"
    b.mkdir()
    partition_log.PartitionLog.open(b / "t-0", LogConfig(), now_ms=0).close()

    def failing_open(*_: object, **__: object) -> partition_log.PartitionLog:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(partition_log.PartitionLog, "open", failing_open)
    with pytest.raises(StorageError, match="Shutdown broker because all log dirs in "):
        _broker(tmp_path, offline=tmp_path / "a", metadata="meta")


def test_a_move_whose_source_dir_failed_creates_no_current_log(tmp_path: Path) -> None:
    """t-0 was moving from b (failed at start-up) to a: its future log in a is loaded, and
    no fresh current log is created beside it, though the image places it in a."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    future = a / "t-0.0123456789abcdef0123456789abcdef-future"
    partition_log.PartitionLog.open(future, LogConfig(), now_ms=0).close()
    manager = _broker(tmp_path, offline=b)
    assert set(manager.logs.futures) == {TopicPartition("t", 0)}
    _place(manager, [DIR_A])
    assert _code(manager, 0) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert sorted(p.name for p in a.iterdir() if p.name.startswith("t-0")) == [future.name]
