"""The log cleaner's broker settings as Kafka's ``CleanerConfig``, ``Throttler`` and
``Cleaner`` apply them: the offset map bounded by ``log.cleaner.dedupe.buffer.size`` (a
range or a single segment too large cleaned in parts), reads in pieces of the read buffer,
the I/O counted against ``log.cleaner.io.max.bytes.per.second``, thread-count changes
validated."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from partition_batches import raw_batch, record

from pykraft.errors import ConfigError
from pykraft.log.batch_records import batch_records
from pykraft.log.cleaner import CleanerStats, clean_log
from pykraft.log.cleaner_bytes import io_chunks
from pykraft.log.cleaner_config import (
    BYTES_PER_ENTRY,
    CleanerConfig,
    Throttler,
    check_reconfiguration,
)
from pykraft.records.batch import iter_batches
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import PartitionLog


def _log(directory: Path, segments: list[list[bytes]]) -> PartitionLog:
    """A compacted log of one record a batch, the given keys, each list a segment (the
    last one active), every value distinct."""
    config = dataclasses.replace(LogConfig(segment_bytes=1 << 20), delete=False, compact=True)
    log = PartitionLog.open(directory, config, now_ms=0)
    for number, keys in enumerate(segments):
        if number:
            log.roll(now_ms=0)
        for key in keys:
            offset = log.log_end_offset
            log.append(raw_batch([record(0, 0, key, b"v%d" % offset)], base_offset=offset),
                       now_ms=0)
    return log


def _keys(log: PartitionLog) -> list[tuple[int, bytes | None]]:
    found: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    while data := log.read(offset, 1 << 20):  # a segment a read
        for batch in iter_batches(data):
            found.extend((r.offset, r.key) for r in batch_records(batch))
            offset = batch.header.next_offset
    return found


def _map_of(entries: int) -> CleanerConfig:
    """A config whose offset map takes ``entries`` keys (load factor 1)."""
    return CleanerConfig(dedupe_buffer_size=entries * BYTES_PER_ENTRY, load_factor=1.0)


def _clean(log: PartitionLog, config: CleanerConfig, first_dirty: int,
           spent: list[int] | None = None) -> CleanerStats | None:
    async def throttle(nbytes: int) -> None:
        if spent is not None:
            spent.append(nbytes)

    return asyncio.run(clean_log(log, now_ms=1_000, high_watermark=log.log_end_offset,
                                 first_dirty_offset=first_dirty, producer_last_offsets={},
                                 config=config, throttle=throttle))


def test_settings_come_from_the_file_then_the_cluster_default_then_the_broker() -> None:
    config = CleanerConfig.from_layers(
        {"log.cleaner.threads": "2", "log.cleaner.backoff.ms": "100"},
        {"log.cleaner.backoff.ms": "200", "log.cleaner.io.max.bytes.per.second": "1000"},
        {"log.cleaner.io.max.bytes.per.second": "5000.5"})
    assert (config.threads, config.backoff_ms, config.max_io_bytes_per_second) == (2, 200,
                                                                                  5000.5)
    assert CleanerConfig.from_layers({}) == CleanerConfig()
    # Kafka's defaults: 128 MiB over one thread, 24 bytes a slot, 90 % of them
    assert CleanerConfig().max_map_entries() == int(128 * 1024 * 1024 // 24 * 0.9)
    assert CleanerConfig(threads=4).max_map_entries() == int(32 * 1024 * 1024 // 24 * 0.9)
    assert CleanerConfig(threads=2, io_buffer_size=1000).read_bytes() == 250
    with pytest.raises(ConfigError, match="log cleaner config"):
        CleanerConfig.from_layers({"log.cleaner.backoff.ms": "soon"})


def test_a_buffer_kafka_would_refuse_is_refused_with_its_message() -> None:
    """Kafka 4.4 requires more than 1 MiB a thread (``KafkaConfig``), and a map able to hold
    a key at the load factor (``Cleaner``)."""
    with pytest.raises(ConfigError, match=r"^requirement failed: log\.cleaner\.dedupe\."
                                          r"buffer\.size must be at least 1MB per cleaner "
                                          r"thread\.$"):
        CleanerConfig.from_layers({"log.cleaner.dedupe.buffer.size": str(1024 * 1024)})
    with pytest.raises(ConfigError, match="1MB per cleaner thread"):
        CleanerConfig.from_layers({"log.cleaner.dedupe.buffer.size": str(4 * 1024 * 1024),
                                   "log.cleaner.threads": "4"})
    with pytest.raises(ConfigError, match=r"offset map is too small to fit in even a single "
                                          r"message.*decrease log\.cleaner\.threads"):
        CleanerConfig.from_layers({"log.cleaner.io.buffer.load.factor": "0.0000001"})
    fits = CleanerConfig.from_layers({"log.cleaner.dedupe.buffer.size": str(1024 * 1024 + 1)})
    assert fits.max_map_entries() == int((1024 * 1024 + 1) // 24 * 0.9)
    assert CleanerConfig.from_layers({"log.cleaner.threads": "0",
                                      "log.cleaner.dedupe.buffer.size": "1"}).threads == 0


@pytest.mark.parametrize(("current", "new", "error"), [
    (2, 0, "Log cleaner threads should be at least 1"),
    (4, 1, "cannot be reduced to less than half the current value 4"),
    (2, 5, "cannot be increased to more than double the current value 2"),
    (2, 1, None), (2, 4, None), (3, 1, None)])
def test_thread_changes_are_validated_as_kafka_validates_them(current: int, new: int,
                                                             error: str | None) -> None:
    change = (CleanerConfig(threads=current), CleanerConfig(threads=new))
    if error is None:
        check_reconfiguration(*change)
    else:
        with pytest.raises(ConfigError, match=error):
            check_reconfiguration(*change)


def test_the_throttler_pauses_to_bring_the_rate_down() -> None:
    throttler = Throttler(1000.0, now_ms=0)
    assert throttler.observe(900, now_ms=100) == 0  # within the 300 ms check interval
    # 1,900 bytes in 400 ms at 1,000 B/s: 1,900 ms in all, 1,500 ms more
    assert throttler.observe(1000, now_ms=400) == 1500
    assert throttler.observe(100, now_ms=1_950) == 0  # the period restarted after the pause
    assert throttler.observe(100, now_ms=2_300) == 0  # 200 bytes in 400 ms: below the rate
    throttler.rate_per_second = 100.0  # a reconfiguration holds at once
    assert throttler.observe(100, now_ms=2_700) == 600


def test_reads_go_in_pieces_of_whole_batches() -> None:
    batches = [raw_batch([record(0, 0, b"k", b"x" * size)], base_offset=i)
               for i, size in enumerate((10, 10, 500, 10))]
    pieces = io_chunks(b"".join(batches), 2 * len(batches[0]))
    # two small batches fit a piece; the large one is a piece of its own
    assert pieces == [batches[0] + batches[1], batches[2], batches[3]]


def test_a_dirty_range_larger_than_the_map_is_cleaned_in_parts(tmp_path: Path) -> None:
    log = _log(tmp_path / "t-0", [[b"a", b"b", b"c", b"d"], [b"a", b"b", b"e", b"f"], [b"x"]])
    first = _clean(log, _map_of(5), first_dirty=0)
    # a fifth key (e, offset 6) fills the map: f finds it full, so the pass cleans below 7
    # (older a and b go) and keeps f for the next
    assert first is not None and first.end_offset == 7
    assert _keys(log) == [(2, b"c"), (3, b"d"), (4, b"a"), (5, b"b"), (6, b"e"), (7, b"f"),
                          (8, b"x")]
    assert first.buffer_utilization == 1.0
    second = _clean(log, _map_of(5), first_dirty=first.end_offset)
    assert second is not None and second.end_offset == 8
    # unbounded, as before: one pass over the whole range
    whole = _log(tmp_path / "u-0", [[b"a", b"b", b"c", b"d"], [b"a", b"b", b"e", b"f"],
                                    [b"x"]])
    stats = _clean(whole, CleanerConfig(), first_dirty=0)
    assert stats is not None and stats.end_offset == 8


def test_a_segment_larger_than_the_map_is_cleaned_in_part(tmp_path: Path) -> None:
    """Kafka maps the segment until the map is full (checked before every key, even one it
    holds) and cleans below the last offset mapped: the cleaner checkpoint lands inside the
    segment, and the next pass maps from there."""
    log = _log(tmp_path / "t-0", [[b"a", b"b", b"a", b"b", b"c", b"d"], [b"x"]])
    stats = _clean(log, _map_of(3), first_dirty=0)
    assert stats is not None and stats.end_offset == 5
    assert _keys(log) == [(2, b"a"), (3, b"b"), (4, b"c"), (5, b"d"), (6, b"x")]
    again = _clean(log, _map_of(3), first_dirty=5)
    assert again is not None and again.end_offset == 6


def test_every_read_and_write_is_counted_against_the_throttle(tmp_path: Path) -> None:
    keys = [b"k%d" % i for i in range(4)]
    log = _log(tmp_path / "t-0", [keys, keys, [b"x"]])
    segments = {s.base_offset: s.size for s in log.segment_stats()}
    spent: list[int] = []
    stats = _clean(log, CleanerConfig(io_buffer_size=4 * 1024 * 1024), 0, spent)
    assert stats is not None and stats.bytes_read == segments[0] + segments[4]
    # the offset map reads both dirty segments, the cleaning reads and writes them
    assert sum(spent) == 2 * stats.bytes_read + stats.bytes_written
    assert stats.bytes_written == segments[4]  # the first segment is emptied
