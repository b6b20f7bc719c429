"""``pykraft log-dirs --describe``: Kafka's ``kafka-log-dirs.sh`` (LogDirsCommand).

Interface (the CLI in :mod:`pykraft.cli.log_dirs` is a thin shell over it)::

    async with BrokerClients(admin_settings(bootstrap)) as brokers:
        lines = await describe(brokers, broker_list="1,2", topic_list="t1,t2")

Output as Kafka prints it: ``Querying brokers for log directories information``,
``Received log directory information from brokers 1,2``, then one JSON line
``{"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t1-0","size":0,
"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/data"}]}],"version":1}``.
LogDirsCommand builds that JSON from Java ``HashMap``s, so keys, brokers, directories and
partitions come in hash-bucket order; :func:`java_hash_order` reproduces it. A
``--broker-list`` id not in the cluster fails with Kafka's ``ERROR: The given brokers do not
exist from --broker-list: ...`` message. A directory's ``error`` is the Java exception class
of its error code, else null.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pykraft.errors import UsageError
from pykraft.java import java_hash_order, java_string_hash
from pykraft.messages.kafka.describe_log_dirs_request import DescribeLogDirsRequest
from pykraft.messages.kafka.describe_log_dirs_response import (
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import raise_for
from pykraft.tools.broker_clients import Brokers, java_exception


def partition_hash(tp: tuple[str, int]) -> int:
    """``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``."""
    return 31 * (31 + tp[1]) + java_string_hash(tp[0])


def _ordered_object(pairs: dict[str, Any]) -> dict[str, Any]:
    """A JSON object as Jackson writes a ``HashMap`` of these keys."""
    return {key: pairs[key] for key in java_hash_order(list(pairs), java_string_hash)}


def _int_set(values: Iterable[int]) -> list[int]:
    """A Java ``HashSet<Integer>``'s iteration order (``Integer.hashCode`` is the value)."""
    return java_hash_order(sorted(set(values)), lambda v: v)


def parse_list(text: str) -> list[str]:
    """``--topic-list``/``--broker-list``: comma-separated, empty entries dropped."""
    return [part for part in text.split(",") if part]


def _partitions(result: DescribeLogDirsResult, topics: set[str]) -> list[dict[str, Any]]:
    replicas = [((t.name, p.partition_index), p) for t in result.topics
                for p in t.partitions if not topics or t.name in topics]
    by_tp = dict(replicas)
    return [_ordered_object({"partition": f"{tp[0]}-{tp[1]}",
                             "size": by_tp[tp].partition_size,
                             "offsetLag": by_tp[tp].offset_lag,
                             "isFuture": by_tp[tp].is_future_key})
            for tp in java_hash_order(list(by_tp), partition_hash)]


def _log_dirs(answer: DescribeLogDirsResponse, topics: set[str]) -> list[dict[str, Any]]:
    raise_for(answer.error_code)
    results = {r.log_dir: r for r in answer.results}
    return [_ordered_object({
        "logDir": log_dir,
        "error": (None if results[log_dir].error_code == ErrorCode.NONE
                  else java_exception(results[log_dir].error_code)),
        "partitions": _partitions(results[log_dir], topics),
    }) for log_dir in java_hash_order(list(results), java_string_hash)]


async def describe(brokers: Brokers, broker_list: str = "", topic_list: str = "") -> list[str]:
    """The lines ``kafka-log-dirs.sh --describe`` prints."""
    asked = {_broker_id(b) for b in parse_list(broker_list)}
    topics = set(parse_list(topic_list))
    cluster = set((await brokers.metadata([])).brokers)
    missing = asked - cluster
    if missing:
        raise UsageError(
            "ERROR: The given brokers do not exist from --broker-list: "
            f"{_joined(missing)}. Current existent brokers: {_joined(cluster)}")
    queried = asked or cluster
    # Kafka's admin asks for every topic (topics null) and filters the answer itself
    request = DescribeLogDirsRequest(topics=None)
    answers = {broker: await brokers.request_to(broker, request) for broker in _int_set(queried)}
    document = _ordered_object({"version": 1, "brokers": [
        _ordered_object({"broker": broker, "logDirs": _log_dirs(answers[broker], topics)})
        for broker in _int_set(answers)]})
    return ["Querying brokers for log directories information",
            f"Received log directory information from brokers {_joined(queried)}",
            json.dumps(document, separators=(",", ":"))]


def _broker_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UsageError(f'For input string: "{text}"') from None


def _joined(ids: Iterable[int]) -> str:
    return ",".join(map(str, _int_set(ids)))
