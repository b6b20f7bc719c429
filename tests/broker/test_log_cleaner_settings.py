"""The broker's log cleaner follows its dynamic ``log.cleaner.*`` configs as Kafka's
``LogCleaner.reconfigure`` does (a change restarts the loop, so a shorter backoff holds at
once; a thread count Kafka refuses is refused), gives up on a log whose cleaning fails
(uncleanable, per log directory), and shows Kafka's LogCleaner / LogCleanerManager gauges."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from prometheus_client.core import Metric
from replica_fixtures import client_batch, topic, with_records

from pykraft.broker.broker_metrics import broker_families, cleaner_families
from pykraft.broker.log_cleaner import LogCleanerTask
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.errors import CorruptRecordError
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.log.cleaner import Compute
from pykraft.log.log_manager import LogManager
from pykraft.records.metadata import ConfigRecord
from pykraft.storage.log_config import LogConfig

T = TypeVar("T")
BROKER = 4
LC = "kafka_log_logcleaner_"
LCM = "kafka_log_logcleanermanager_"
MIB = 1024 * 1024


def _compacted(directory: Path, static: dict[str, str] | None = None,
               topics: tuple[str, ...] = ("t",)) -> ReplicaManager:
    """Each topic's partition 0 compacted, 8 records over 2 keys in segments of 200
    bytes."""
    image = MetadataImage()
    for number, name in enumerate(topics):
        image = with_records(image, *topic(name, uuid.UUID(int=9 + number), (1,)), *(
            ConfigRecord(resource_type=2, resource_name=name, name=key, value=value)
            for key, value in (("cleanup.policy", "compact"),
                               ("internal.segment.bytes", "200"))))
    logs = LogManager([directory], LogConfig())
    logs.startup(1_000)
    manager = ReplicaManager(1, logs, static or {})
    manager.apply_image(image, 1_000)
    for name in topics:
        part = manager.partition_for(name, 0)
        for index in range(8):
            manager.append_records(part, client_batch([b"v%d" % index],
                                                      key=b"k%d" % (index % 2)),
                                   acks=-1, api_version=12, now_ms=2_000)
    return manager


def _configure(manager: ReplicaManager, task: LogCleanerTask, name: str, key: str,
               value: str | None) -> None:
    manager.apply_image(with_records(manager.image, ConfigRecord(
        resource_type=BROKER, resource_name=name, name=key, value=value)), 2_000)
    task.apply_configs(manager.image.configs)


def _gauges(manager: ReplicaManager) -> dict[tuple[str, tuple[str, ...]], float]:
    families: list[Metric] = list(cleaner_families(manager.cleaner, manager.logs.log_dirs))
    return {(sample.name, tuple(sample.labels.values())): sample.value
            for family in families for sample in family.samples}


def test_dynamic_settings_follow_the_cluster_default_then_the_broker(tmp_path: Path) -> None:
    manager = _compacted(tmp_path, {"log.cleaner.backoff.ms": "60000"})
    task = LogCleanerTask(manager, {"log.cleaner.backoff.ms": "60000"}, 1, lambda: 3_000)
    _configure(manager, task, "", "log.cleaner.backoff.ms", "100")
    assert manager.cleaner.config.backoff_ms == 100
    _configure(manager, task, "1", "log.cleaner.backoff.ms", "50")
    _configure(manager, task, "2", "log.cleaner.backoff.ms", "70")  # another broker's
    assert manager.cleaner.config.backoff_ms == 50
    _configure(manager, task, "", "log.cleaner.io.max.bytes.per.second", "2048")
    assert manager.cleaner.throttler.rate_per_second == 2048.0
    _configure(manager, task, "", "log.cleaner.dedupe.buffer.size", str(3 * MIB))
    assert manager.cleaner.config.max_map_entries() == int(3 * MIB // 24 * 0.9)
    # Kafka refuses more than double the threads, and 1 MiB or less a thread: the settings
    # in force stay
    _configure(manager, task, "", "log.cleaner.threads", "3")
    assert manager.cleaner.config.threads == 1
    _configure(manager, task, "", "log.cleaner.threads", "2")
    _configure(manager, task, "", "log.cleaner.dedupe.buffer.size", str(2 * MIB))
    assert (manager.cleaner.config.threads, manager.cleaner.config.dedupe_buffer_size) == (
        2, 3 * MIB)
    _configure(manager, task, "", "log.cleaner.dedupe.buffer.size", str(4 * MIB))
    assert (manager.cleaner.config.threads, manager.cleaner.config.max_map_entries()) == (
        2, int(2 * MIB // 24 * 0.9))
    _configure(manager, task, "1", "log.cleaner.backoff.ms", None)
    assert manager.cleaner.config.backoff_ms == 100


def test_a_change_restarts_the_loop_so_a_new_backoff_holds_at_once(tmp_path: Path) -> None:
    """Under a backoff of a day the cleaner would not look again; setting the backoff (or
    min.cleanable ratio of the topics, read at each pass) makes it pass again now."""
    manager = _compacted(tmp_path, {"log.cleaner.backoff.ms": str(86_400_000)})
    task = LogCleanerTask(manager, {"log.cleaner.backoff.ms": str(86_400_000)}, 1,
                          lambda: 3_000)
    passes: list[int] = []
    ran = asyncio.Event()
    run_cleaner = manager.run_cleaner

    async def counted(now_ms: int, compute: Compute | None = None) -> int:
        cleaned = await run_cleaner(now_ms, compute)
        passes.append(cleaned)
        ran.set()
        return cleaned

    manager.run_cleaner = counted  # type: ignore[method-assign]

    async def scenario() -> None:
        loop_task = asyncio.get_running_loop().create_task(task.run())
        try:
            # the first pass cleans t-0, the next at once finds nothing: then the backoff
            while len(passes) < 2:
                ran.clear()
                await asyncio.wait_for(ran.wait(), 10)
            assert passes == [1, 0]
            ran.clear()
            _configure(manager, task, "", "log.cleaner.backoff.ms", "10")
            await asyncio.wait_for(ran.wait(), 10)
            assert passes[:3] == [1, 0, 0]
        finally:
            loop_task.cancel()

    asyncio.run(scenario())


def test_a_log_whose_cleaning_fails_becomes_uncleanable(tmp_path: Path) -> None:
    manager = _compacted(tmp_path)
    before = _gauges(manager)
    assert before[(LC + "max_buffer_utilization_percent", ())] == 0
    assert (LCM + "time_since_last_run_ms", ()) not in before
    # every log directory's, at 0, as Kafka registers them
    assert before[(LCM + "uncleanable_partitions_count", (str(tmp_path),))] == 0
    assert before[(LCM + "uncleanable_bytes", (str(tmp_path),))] == 0

    async def corrupt(work: Callable[[], T]) -> T:
        raise CorruptRecordError("bad batch")

    assert asyncio.run(manager.run_cleaner(3_000, corrupt)) == 0
    tp = TopicPartition("t", 0)
    assert manager.cleaner.uncleanable == {tp: tmp_path}
    # never tried again; counted in its directory with its cleanable bytes
    assert asyncio.run(manager.run_cleaner(3_000)) == 0
    gauges = _gauges(manager)
    assert gauges[(LCM + "uncleanable_partitions_count", (str(tmp_path),))] == 1
    dirtiness = manager.logs.dirtiness(tp, 8, 3_000)
    assert dirtiness is not None and dirtiness.cleanable_bytes > 0
    assert gauges[(LCM + "uncleanable_bytes", (str(tmp_path),))] == dirtiness.cleanable_bytes
    assert gauges[(LCM + "max_dirty_percent", ())] == 0  # uncleanable logs are left out


def test_the_gauges_show_the_last_cleaning(tmp_path: Path) -> None:
    manager = _compacted(tmp_path)
    dirtiness = manager.logs.dirtiness(TopicPartition("t", 0), 8, 3_000)
    assert dirtiness is not None and dirtiness.ratio == 1.0
    assert asyncio.run(manager.run_cleaner(3_000)) == 1
    gauges = _gauges(manager)
    # two keys in a map of Kafka's default size: 0 % as Kafka rounds it
    assert manager.cleaner.buffer_utilization == 2 / manager.cleaner.config.map_slots()
    assert gauges[(LC + "max_buffer_utilization_percent", ())] == 0
    assert 0 < gauges[(LC + "cleaner_recopy_percent", ())] < 100
    assert gauges[(LC + "deadthreadcount", ())] == 0
    assert gauges[(LCM + "max_dirty_percent", ())] == 100  # as the pass found them
    assert gauges[(LCM + "time_since_last_run_ms", ())] >= 0
    asyncio.run(manager.run_cleaner(3_000))
    assert _gauges(manager)[(LCM + "max_dirty_percent", ())] == 0


@pytest.mark.parametrize("threads", [1, 2])
def test_the_threads_clean_that_many_logs_at_once(tmp_path: Path, threads: int) -> None:
    """Kafka's cleaner threads each take the filthiest log left: with two, two logs'
    records are walked at the same time."""
    static = {"log.cleaner.threads": str(threads)}
    manager = _compacted(tmp_path, static, topics=("a", "b"))
    in_flight = peak = 0

    async def compute(work: Callable[[], T]) -> T:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)  # the other lane's turn, if there is one
        in_flight -= 1
        return work()

    assert asyncio.run(manager.run_cleaner(3_000, compute)) == 2
    assert peak == threads


def test_the_gauges_exist_while_a_cleaner_runs(tmp_path: Path) -> None:
    """Kafka registers no LogCleaner gauges with ``log.cleaner.enable=false`` (no
    cleaner); a broker that starts one shows them."""
    manager = _compacted(tmp_path)

    def cleaner_series() -> set[str]:
        return {sample.name for family in broker_families(manager)
                for sample in family.samples if sample.name.startswith("kafka_log_logcleaner")}

    assert cleaner_series() == set()
    LogCleanerTask(manager, {}, 1, lambda: 3_000)
    assert LC + "deadthreadcount" in cleaner_series()
