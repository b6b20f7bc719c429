"""``pykraft delete-records``: Kafka's ``kafka-delete-records.sh`` (DeleteRecordsCommand).

Interface (the CLI in :mod:`pykraft.cli.delete_records` is a thin shell over it)::

    offsets = parse_offset_json(Path("offsets.json").read_text())  # {(topic, p): offset}
    async with BrokerClients(admin_settings(bootstrap)) as brokers:
        for line in await delete_records(brokers, offsets): print(line)

The file is Kafka's ``{"partitions": [{"topic": "foo", "partition": 1, "offset": 1}],
"version": 1}`` (version 1 when absent; offset -1 means up to the high watermark). Each
partition's DeleteRecords goes to its leader; the answer is printed as Kafka does, after
``Executing records delete operation`` and ``Records delete operation completed:``:
``partition: foo-1\\tlow_watermark: 1`` or ``partition: foo-1\\terror: <exception>: <message>``.
A malformed file or a partition listed twice fails before any request (:class:`UsageError`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pykraft.errors import UsageError
from pykraft.ids import TopicPartition
from pykraft.messages.kafka.delete_records_request import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import ApiError
from pykraft.tools.broker_clients import Brokers, by_leader, java_exception, tp_name

EARLIEST_VERSION = 1
#: The Admin client's default ``timeout.ms`` for DeleteRecords.
_TIMEOUT_MS = 30_000



def _field(entry: Mapping[str, Any], name: str, kind: type) -> Any:
    if name not in entry:
        raise UsageError(f"No such field exists: `{name}`")
    value = entry[name]
    if kind is int and (not isinstance(value, int) or isinstance(value, bool)):
        raise UsageError(f"Expected `{name}` to be an integer, got {json.dumps(value)}")
    if kind is str and not isinstance(value, str):
        raise UsageError(f"Expected `{name}` to be a string, got {json.dumps(value)}")
    return value


def parse_offset_json(text: str) -> dict[TopicPartition, int]:
    """DeleteRecordsCommand's offset file, with its messages; duplicates are refused."""
    try:
        document = json.loads(text)
    except ValueError:
        raise UsageError("The input string is not a valid JSON") from None
    if not isinstance(document, dict):
        raise UsageError("The input string is not a valid JSON object")
    version = _field(document, "version", int) if "version" in document else EARLIEST_VERSION
    if version != EARLIEST_VERSION:
        raise UsageError(f"Not supported version field value {version}")
    if "partitions" not in document:
        raise UsageError("Missing partitions field")
    entries = document["partitions"]
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UsageError("Expected `partitions` to be an array of objects")
    seen: dict[TopicPartition, list[int]] = {}
    for entry in entries:
        tp = TopicPartition(_field(entry, "topic", str), _field(entry, "partition", int))
        seen.setdefault(tp, []).append(_field(entry, "offset", int))
    duplicates = [tp_name(tp) for tp, offsets in seen.items() if len(offsets) > 1]
    if duplicates:
        raise UsageError("Offset json file contains duplicate topic partitions: "
                         + ",".join(duplicates))
    return {tp: offsets[0] for tp, offsets in seen.items()}


async def delete_records(brokers: Brokers, offsets: Mapping[TopicPartition, int]) -> list[str]:
    """Every line kafka-delete-records.sh prints for ``offsets``, in the file's order."""
    cluster = await brokers.metadata(sorted({topic for topic, _ in offsets}))
    leaders, leaderless = by_leader(cluster, offsets)
    results: dict[TopicPartition, str] = {}
    for tp in leaderless:
        known = tp[0] in cluster.topics
        results[tp] = _error(ErrorCode.LEADER_NOT_AVAILABLE if known
                             else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    for leader, tps in sorted(leaders.items()):
        answer = await brokers.request_to(leader, delete_records_request(
            {tp: offsets[tp] for tp in tps}))
        for topic in answer.topics:
            for part in topic.partitions:
                tp = TopicPartition(topic.name, part.partition_index)
                results[tp] = (f"low_watermark: {part.low_watermark}"
                               if part.error_code == ErrorCode.NONE
                               else _error(ErrorCode(part.error_code)))
    return ["Executing records delete operation", "Records delete operation completed:",
            *(f"partition: {tp_name(tp)}\t{results.get(tp, _error(ErrorCode.UNKNOWN_SERVER_ERROR))}"
              for tp in offsets)]


def delete_records_request(offsets: Mapping[TopicPartition, int]) -> DeleteRecordsRequest:
    topics: dict[str, list[DeleteRecordsPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            DeleteRecordsPartition(partition_index=partition, offset=offset))
    return DeleteRecordsRequest(timeout_ms=_TIMEOUT_MS, topics=tuple(
        DeleteRecordsTopic(name=name, partitions=tuple(parts))
        for name, parts in topics.items()))


def _error(code: ErrorCode) -> str:
    return f"error: {java_exception(code)}: {ApiError(code, None)}"
