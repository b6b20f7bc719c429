"""segment.jitter.ms: each segment's ``segment.ms`` roll is brought forward by its own draw
(Kafka's ``randomSegmentJitter``), from an injected source."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.broker.topic_settings import topic_settings
from pykraft.records.batch import encode_batch
from pykraft.storage.log_config import LogConfig, no_jitter
from pykraft.storage.partition_log import PartitionLog


def _batch(offset: int, timestamp: int) -> bytes:
    return encode_batch(offset, [(None, b"v")], partition_leader_epoch=0, timestamp=timestamp)


def _bases(log: PartitionLog) -> list[int]:
    return [segment.base_offset for segment in log.segment_stats()]


def test_the_draw_is_bounded_by_the_smaller_of_jitter_and_segment_ms() -> None:
    bounds: list[int] = []

    def draw(bound: int) -> int:
        bounds.append(bound)
        return bound - 1

    assert LogConfig(segment_ms=100, segment_jitter_ms=30).roll_jitter_ms(draw) == 29
    assert LogConfig(segment_ms=100, segment_jitter_ms=500).roll_jitter_ms(draw) == 99
    assert LogConfig(segment_ms=100).roll_jitter_ms(draw) == 0  # jitter off: no draw
    assert bounds == [30, 100]


def test_a_negative_jitter_is_refused() -> None:
    with pytest.raises(ValueError, match=r"segment\.jitter\.ms must be non-negative"):
        LogConfig(segment_jitter_ms=-1)


def test_each_segment_rolls_at_segment_ms_less_its_own_jitter(tmp_path: Path) -> None:
    draws = iter([40, 10, 0])  # one draw per segment, in the order they open
    config = LogConfig(segment_ms=100, segment_jitter_ms=50)
    with PartitionLog.open(tmp_path / "t-0", config, now_ms=0,
                           jitter=lambda _bound: next(draws)) as log:
        log.append(_batch(0, timestamp=1000), now_ms=0)
        log.append(_batch(1, timestamp=1060), now_ms=0)  # waited 60 = 100 - 40: no roll
        assert _bases(log) == [0]
        log.append(_batch(2, timestamp=1061), now_ms=0)  # waited 61 > 60: roll
        assert _bases(log) == [0, 2]
        log.append(_batch(3, timestamp=1151), now_ms=0)  # waited 90 = 100 - 10: no roll
        log.append(_batch(4, timestamp=1152), now_ms=0)
        assert _bases(log) == [0, 2, 4]


def test_without_a_source_there_is_no_jitter(tmp_path: Path) -> None:
    config = LogConfig(segment_ms=100, segment_jitter_ms=50)
    assert config.roll_jitter_ms(no_jitter) == 0
    with PartitionLog.open(tmp_path / "t-0", config, now_ms=0) as log:
        log.append(_batch(0, timestamp=1000), now_ms=0)
        log.append(_batch(1, timestamp=1100), now_ms=0)
        assert _bases(log) == [0]


def test_the_topic_setting_wins_over_the_broker_synonyms_in_hours() -> None:
    assert topic_settings({}, {}).log.segment_jitter_ms == 0
    assert topic_settings({}, {"log.roll.jitter.hours": "2"}).log.segment_jitter_ms == 7_200_000
    assert topic_settings({}, {"log.roll.jitter.ms": "5", "log.roll.jitter.hours": "2"}
                          ).log.segment_jitter_ms == 5
    assert topic_settings({"segment.jitter.ms": "7"}, {"log.roll.jitter.ms": "5"}
                          ).log.segment_jitter_ms == 7
