"""The options and offsets of ``format("pykraft")``, free of any Kafka client.

Options are Spark's Kafka source's (case-insensitive, strings): ``kafka.bootstrap.servers``
and other ``kafka.*`` client properties, one of ``subscribe`` / ``subscribePattern`` /
``assign``, ``startingOffsets`` / ``endingOffsets``, ``maxOffsetsPerTrigger``,
``failOnDataLoss``, ``includeHeaders``, ``kafkaConsumer.pollTimeoutMs``; the writer takes
``kafka.*`` and ``topic``. Anything else is refused: a misspelt option silently ignored
reads the wrong data (issue 28 found ``startingOffsets`` ignored by ``kafka-segments``).

Offsets are Spark's Kafka source's JSON, ``{"topic": {"0": 23, "1": -2}}`` (-2 earliest,
-1 latest); a resolved offset is the next offset to read. The micro-batch offsets Spark
checkpoints are the same JSON, so a checkpoint of this source reads like one of Spark's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from pykraft.errors import ConfigError
from pykraft.ids import TopicPartition
from pykraft.spark.segment_plan import (
    EARLIEST,
    LATEST,
    TopicFilter,
    parse_assign,
    parse_offsets,
)
from pykraft.spark.source import flag_option, int_option

SOURCE_NAME = "pykraft"
KAFKA_PREFIX = "kafka."
BOOTSTRAP = "kafka.bootstrap.servers"
#: Spark's default of ``kafkaConsumer.pollTimeoutMs`` (``spark.network.timeout``)
DEFAULT_POLL_TIMEOUT_MS = 120_000

#: ``earliest``/``latest`` (EARLIEST, LATEST) or an offset per partition (-2/-1 allowed)
OffsetSpec = Mapping[TopicPartition, int] | int
#: what Spark checkpoints: topic -> partition (a string: a JSON object key) -> offset
OffsetsJson = dict[str, dict[str, int]]

READ_OPTIONS = frozenset({
    "subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets",
    "maxoffsetspertrigger", "failondataloss", "includeheaders", "kafkaconsumer.polltimeoutms"})
WRITE_OPTIONS = frozenset({"topic"})
#: what Spark itself adds to a source's options (``load(path)``, ``writeStream``'s query)
ENGINE_OPTIONS = frozenset({"path", "checkpointlocation"})
#: client properties the source sets itself: a user value would break offsets or delivery
RESERVED_CLIENT = frozenset({"group.id", "enable.auto.commit", "auto.offset.reset",
                             "enable.partition.eof", "enable.idempotence", "acks"})


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """The parsed reader options; plain data so readers pickle to executors."""

    client: dict[str, str]
    topics: TopicFilter
    starting: OffsetSpec
    ending: OffsetSpec
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS


@dataclass(frozen=True, slots=True)
class WriteOptions:
    client: dict[str, str]
    topic: str | None = None


def read_options(given: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Spark's Kafka source's checks: one subscription kind, no ``endingOffsets`` in a
    stream, no ``latest`` start or ``earliest`` end in a batch."""
    options = _lowered(given)
    client = _client(options, READ_OPTIONS)
    if streaming and "endingoffsets" in options:
        raise ConfigError("Ending offset not valid in streaming queries")
    starting = parse_offsets(options.get("startingoffsets"), "startingOffsets",
                             LATEST if streaming else EARLIEST,
                             ("earliest", "latest") if streaming else ("earliest",))
    ending = parse_offsets(options.get("endingoffsets"), "endingOffsets", LATEST, ("latest",))
    limit = int_option(options, "maxoffsetspertrigger")
    if limit is not None and limit < 1:
        raise ConfigError(f"option maxOffsetsPerTrigger must be positive, not {limit}")
    return ReadOptions(client, _topics(options), starting, ending, limit,
                       flag_option(options, "failondataloss", default=True),
                       flag_option(options, "includeheaders"),
                       int_option(options, "kafkaconsumer.polltimeoutms")
                       or DEFAULT_POLL_TIMEOUT_MS)


def write_options(given: Mapping[str, str]) -> WriteOptions:
    options = _lowered(given)
    return WriteOptions(_client(options, WRITE_OPTIONS), options.get("topic") or None)


def _client(options: Mapping[str, str], known: frozenset[str]) -> dict[str, str]:
    """The ``kafka.*`` options without their prefix, after refusing any other unknown one
    and any property the source owns."""
    unknown = sorted(key for key in options if not key.startswith(KAFKA_PREFIX)
                     and key not in known and key not in ENGINE_OPTIONS)
    if unknown:
        raise ConfigError(f"{SOURCE_NAME}: unknown or unsupported option(s) "
                          f"{', '.join(unknown)}; supported: kafka.*, {', '.join(sorted(known))}")
    if not options.get(BOOTSTRAP):
        raise ConfigError(f"Option '{BOOTSTRAP}' must be specified for configuring Kafka "
                          f"consumer and producer (format('{SOURCE_NAME}'))")
    client = {key[len(KAFKA_PREFIX):]: str(value) for key, value in options.items()
              if key.startswith(KAFKA_PREFIX)}
    owned = sorted(RESERVED_CLIENT.intersection(client))
    if owned:
        raise ConfigError(f"Kafka option(s) {', '.join('kafka.' + k for k in owned)} are not "
                          f"supported: {SOURCE_NAME} sets them itself")
    return client


def _topics(options: Mapping[str, str]) -> TopicFilter:
    given = [k for k in ("assign", "subscribe", "subscribepattern") if options.get(k)]
    if len(given) != 1:
        which = "One" if not given else "Only one"
        raise ConfigError(f"{which} of the following options must be specified for Kafka "
                          "source: subscribe, subscribePattern, assign")
    if given[0] == "assign":
        return TopicFilter(assign=parse_assign(options["assign"]))
    if given[0] == "subscribe":
        return TopicFilter(tuple(t.strip() for t in options["subscribe"].split(",")
                                 if t.strip()))
    return TopicFilter(pattern=options["subscribepattern"])


def to_json(offsets: Mapping[TopicPartition, int]) -> OffsetsJson:
    """The checkpointed form, sorted."""
    nested: OffsetsJson = {}
    for (topic, partition), offset in sorted(offsets.items()):
        nested.setdefault(topic, {})[str(partition)] = offset
    return nested


def from_json(offsets: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {TopicPartition(t, int(p)): int(o) for t, parts in offsets.items()
            for p, o in parts.items()}


def rate_limit(limit: int, start: Mapping[TopicPartition, int],
               end: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Spark's ``KafkaMicroBatchStream.rateLimit``: ``limit`` records spread over the
    partitions in proportion to their backlog (``start`` must hold every partition of
    ``end``), at least one each so a small partition is not starved."""
    sizes = {tp: stop - start[tp] for tp, stop in end.items() if stop - start[tp] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(end)
    limited = dict(end)
    for tp, size in sizes.items():
        share = limit * (size / total)
        share_int = math.ceil(share) if share < 1 else math.floor(share)
        limited[tp] = min(end[tp], start[tp] + share_int)
    return limited


def _lowered(options: Mapping[str, str]) -> dict[str, str]:
    """Spark's option names are case-insensitive (PySpark lowercases them already)."""
    return {key.lower(): str(value) for key, value in options.items()}
