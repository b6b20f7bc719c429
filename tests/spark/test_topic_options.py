"""``format("pykraft")``'s options and offsets without Spark or a cluster: Spark's Kafka
option checks and its ``maxOffsetsPerTrigger`` spread."""

from __future__ import annotations

import pytest

from pykraft.errors import ConfigError
from pykraft.ids import TopicPartition as Tp
from pykraft.spark.segment_plan import EARLIEST, LATEST
from pykraft.spark.topic_options import (
    from_json,
    rate_limit,
    read_options,
    to_json,
    write_options,
)

BOOTSTRAP = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_reads_spark_kafka_options_case_insensitively() -> None:
    parsed = read_options({**BOOTSTRAP, "ASSIGN": '{"b":[1],"a":[0,2]}',
                           "kafka.security.protocol": "SASL_SSL",
                           "startingOffsets": '{"a":{"0":5,"2":-2},"b":{"1":-1}}',
                           "maxOffsetsPerTrigger": "100", "failOnDataLoss": "false",
                           "includeHeaders": "TRUE"}, streaming=True)
    assert sorted(parsed.topics.assign) == [Tp("a", 0), Tp("a", 2), Tp("b", 1)]
    assert parsed.client == {"bootstrap.servers": "127.0.0.1:9092",
                             "security.protocol": "SASL_SSL"}
    assert parsed.starting == {Tp("a", 0): 5, Tp("a", 2): EARLIEST, Tp("b", 1): LATEST}
    assert (parsed.max_offsets_per_trigger, parsed.fail_on_data_loss,
            parsed.include_headers) == (100, False, True)
    assert read_options({**BOOTSTRAP, "subscribe": "a"}, streaming=True).starting == LATEST
    batch = read_options({**BOOTSTRAP, "subscribe": "a, b"}, streaming=False)
    assert (batch.starting, batch.ending) == (EARLIEST, LATEST)
    assert batch.topics.keeps("b", 3) and not batch.topics.keeps("c", 0)


@pytest.mark.parametrize(("options", "streaming", "message"), [
    ({"subscribe": "a", "endingOffsets": "latest"}, True, "not valid in streaming"),
    ({"subscribe": "a", "startingOffsets": "latest"}, False, "startingOffsets must be"),
    ({"subscribe": "a", "startingOffsets": '{"a":{"0":-1}}'}, False, "-1 is not allowed"),
    ({"subscribe": "a", "endingOffsets": "earliest"}, False, "endingOffsets must be"),
    ({"subscribe": "a", "maxOffsetsPerTrigger": "0"}, True, "must be positive"),
    ({"subscribe": "a", "startingOffsets": '{"a":[0]}'}, True, "must be"),
    ({"assign": '{"a":"x"}'}, True, "option assign must be JSON like"),
    ({"subscribe": "a", "assign": '{"a":[0]}'}, True, "Only one of"),
    ({}, True, "One of the following options"),
    ({"subscribe": "a", "kafka.enable.auto.commit": "true"}, True, "sets them itself"),
    ({"subscribe": "a", "minPartitions": "4"}, True, "unsupported option"),
])
def test_refuses_what_spark_refuses(options: dict[str, str], streaming: bool,
                                    message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        read_options({**BOOTSTRAP, **options}, streaming=streaming)


def test_writer_options() -> None:
    assert write_options({**BOOTSTRAP, "topic": "t"}).topic == "t"
    with pytest.raises(ConfigError, match="unsupported option"):
        write_options({**BOOTSTRAP, "subscribe": "t"})
    with pytest.raises(ConfigError, match=r"kafka\.acks"):
        write_options({**BOOTSTRAP, "kafka.acks": "1"})


def test_checkpointed_offsets_round_trip() -> None:
    offsets = {Tp("t", 10): 3, Tp("t", 2): 7, Tp("a", 0): 1}
    assert to_json(offsets) == {"a": {"0": 1}, "t": {"2": 7, "10": 3}}
    assert from_json(to_json(offsets)) == offsets


def test_rate_limit_spreads_by_backlog_as_spark() -> None:
    start = {Tp("t", 0): 0, Tp("t", 1): 100, Tp("t", 2): 5}
    end = {Tp("t", 0): 300, Tp("t", 1): 200, Tp("t", 2): 5}
    # backlogs 300 and 100 of 400: 75 % and 25 % of 40; an empty partition stays put
    assert rate_limit(40, start, end) == {Tp("t", 0): 30, Tp("t", 1): 110, Tp("t", 2): 5}
    # a share below one record still takes one (Spark: not starving small partitions)
    tiny = rate_limit(10, {Tp("a", 0): 0, Tp("b", 0): 0}, {Tp("a", 0): 1000, Tp("b", 0): 1})
    assert tiny == {Tp("a", 0): 9, Tp("b", 0): 1}
    assert rate_limit(10 ** 6, start, end) == end
