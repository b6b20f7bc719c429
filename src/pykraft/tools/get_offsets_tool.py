"""``pykraft get-offsets``: Kafka's ``kafka-get-offsets.sh`` (GetOffsetShell).

Interface (the CLI in :mod:`pykraft.cli.get_offsets` is a thin shell over it)::

    spec = parse_time("earliest")                        # ListOffsets timestamp, or UsageError
    wanted = partition_filter(topic="t.*", partitions="0,2")  # or pattern_filter("t:0-3,u")
    async with BrokerClients(admin_settings(bootstrap)) as brokers:
        offsets = await get_offsets(brokers, wanted, spec, exclude_internal=False, warn=print)
    for line in offset_lines(offsets): print(line)      # topic:partition:offset

Kafka's behaviour kept: ``--time`` is -1/latest, -2/earliest, -3/max-timestamp,
-4/earliest-local, -5/latest-tiered or a timestamp; ``--topic`` is a whole-name regex; lines
are sorted by the ``topic-partition`` string (so ``t-10`` before ``t-2``); a partition whose
answer is an error is skipped with a line on stderr, one with no offset (-1) is left out;
nothing matched is ``Could not match any topic-partitions with the specified filters``.
Errors print as ``Error occurred: <message>`` with status 1.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pykraft.errors import UsageError
from pykraft.ids import TopicPartition
from pykraft.messages.kafka.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import ApiError
from pykraft.tools.broker_clients import Brokers, by_leader, java_exception, tp_name
from pykraft.tools.topics_tool import is_internal

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
_NAMED_TIMES = {"latest": LATEST, "earliest": EARLIEST, "max-timestamp": MAX_TIMESTAMP,
                "earliest-local": EARLIEST_LOCAL, "latest-tiered": LATEST_TIERED}
_RULE = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")
_INT_MAX = 2**31 - 1
UNKNOWN_OFFSET = -1
_CONSUMER = -1
_TIMEOUT_MS = 30_000



@dataclass(frozen=True, slots=True)
class Rule:
    """One ``--topic-partitions`` rule: a whole-name topic regex and a partition range
    ``[low, high)``."""

    topic: re.Pattern[str]
    low: int = 0
    high: int = _INT_MAX

    def allows_topic(self, name: str) -> bool:
        return self.topic.fullmatch(name) is not None

    def allows(self, name: str, partition: int) -> bool:
        return self.allows_topic(name) and self.low <= partition < self.high


@dataclass(frozen=True, slots=True)
class PartitionFilter:
    """Rules of which any one must allow a partition; ``partitions`` (when not empty) is the
    ``--partitions`` set, applied on top."""

    rules: tuple[Rule, ...]
    partitions: frozenset[int] = frozenset()

    def allows_topic(self, name: str) -> bool:
        return any(rule.allows_topic(name) for rule in self.rules)

    def allows(self, name: str, partition: int) -> bool:
        return (not self.partitions or partition in self.partitions) and any(
            rule.allows(name, partition) for rule in self.rules)


def parse_time(text: str) -> int:
    """``--time`` as ListOffsets' timestamp (GetOffsetShell.parseOffsetSpec)."""
    if text in _NAMED_TIMES:
        return _NAMED_TIMES[text]
    try:
        return int(text)
    except ValueError:
        raise UsageError(
            f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / -3 or "
            "max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long "
            "format timestamp") from None


def _regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise UsageError(f"{exc} near index {exc.pos}\n{text}") from None


def partition_filter(topic: str | None, partitions: str | None) -> PartitionFilter:
    """``--topic`` (regex, default every topic) and ``--partitions`` (comma-separated ids)."""
    ids: frozenset[int] = frozenset()
    if partitions:
        try:
            ids = frozenset(int(p) for p in partitions.split(","))
        except ValueError:
            raise UsageError("--partitions expects a comma separated list of numeric partition "
                             f"ids, but received: {partitions}") from None
    return PartitionFilter((Rule(_regex(topic if topic is not None else ".*")),), ids)


def pattern_filter(text: str) -> PartitionFilter:
    """``--topic-partitions``: ``topic-regex(:N | :N-M | :N- | :-M)?`` rules, comma-separated,
    ranges upper-exclusive."""
    rules = []
    for spec in text.split(","):
        match = _RULE.fullmatch(spec)
        if match is None:
            raise UsageError(f"Invalid rule specification: {spec}")
        topic, single, low, high = (group or None for group in match.groups())
        pattern = _regex(topic or ".*")
        if single is not None:
            rules.append(Rule(pattern, int(single), int(single) + 1))
        else:
            rules.append(Rule(pattern, int(low) if low else 0, int(high) if high else _INT_MAX))
    return PartitionFilter(tuple(rules))


def check_options(topic_partitions: str | None, topic: str | None,
                  partitions: str | None) -> PartitionFilter:
    """The filter the options select, with GetOffsetShell's exclusion rule."""
    if topic_partitions is not None:
        if topic is not None or partitions is not None:
            raise UsageError("--topic-partitions cannot be used with --topic or --partitions")
        return pattern_filter(topic_partitions)
    return partition_filter(topic, partitions)


async def get_offsets(brokers: Brokers, wanted: PartitionFilter, timestamp: int, *,
                      exclude_internal: bool = False,
                      warn: Callable[[str], None] = print) -> dict[TopicPartition, int]:
    """The offset of each matching partition at ``timestamp``, from each leader."""
    cluster = await brokers.metadata()
    selected = [TopicPartition(name, p.partition) for name, meta in cluster.topics.items()
                if wanted.allows_topic(name) and not (exclude_internal and is_internal(name))
                for p in meta.partitions if wanted.allows(name, p.partition)]
    if not selected:
        raise UsageError("Could not match any topic-partitions with the specified filters")
    leaders, leaderless = by_leader(cluster, selected)
    offsets: dict[TopicPartition, int] = {}
    for tp in leaderless:
        warn(_skip(tp, ApiError(ErrorCode.LEADER_NOT_AVAILABLE, None)))
    for leader, tps in sorted(leaders.items()):
        answer = await brokers.request_to(leader, list_offsets_request(tps, timestamp))
        for topic in answer.topics:
            for part in topic.partitions:
                tp = TopicPartition(topic.name, part.partition_index)
                if part.error_code != ErrorCode.NONE:
                    warn(_skip(tp, ApiError(ErrorCode(part.error_code), None)))
                elif part.offset != UNKNOWN_OFFSET:
                    offsets[tp] = part.offset
    return offsets


def list_offsets_request(tps: list[TopicPartition], timestamp: int) -> ListOffsetsRequest:
    """A consumer's ListOffsets (read uncommitted) for ``tps`` at ``timestamp``."""
    topics: dict[str, list[int]] = {}
    for topic, partition in tps:
        topics.setdefault(topic, []).append(partition)
    return ListOffsetsRequest(
        replica_id=_CONSUMER, isolation_level=0, timeout_ms=_TIMEOUT_MS,
        topics=tuple(ListOffsetsTopic(name=name, partitions=tuple(
            ListOffsetsPartition(partition_index=p, timestamp=timestamp)
            for p in parts)) for name, parts in topics.items()))


def _skip(tp: TopicPartition, error: ApiError) -> str:
    return (f"Skip getting offsets for topic-partition {tp_name(tp)} due to error: "
            f"{java_exception(error.error)}: {error}")


def offset_lines(offsets: Mapping[TopicPartition, int]) -> list[str]:
    """``topic:partition:offset`` lines in Kafka's order (by the ``topic-partition``
    string)."""
    return [f"{tp[0]}:{tp[1]}:{offsets[tp]}" for tp in sorted(offsets, key=tp_name)]
