"""``pykraft leader-election``: Kafka's ``kafka-leader-election.sh`` (LeaderElectionCommand).

Interface (the CLI in :mod:`pykraft.cli.leader_election` is a thin shell over it)::

    partitions = parse_election_json(Path("f.json").read_text())  # or {(t, p)} or None
    async with AdminClient(admin_settings(bootstrap)) as admin:
        lines, failed = await elect_leaders(admin, "preferred", partitions)

One ElectLeaders request (a broker forwards it to the active controller) for the given
partitions, or for all of them (None). The answer is printed as Kafka's tool prints it:
``Successfully completed leader election (PREFERRED) for partitions t-0, t-1``, ``Valid
replica already elected for partitions ...`` and one ``Error completing leader election
(PREFERRED) for partition: t-2: <exception>: <message>`` line per failure, after which the
command fails with ``N replica(s) could not be elected``. Kafka lists partitions in hash
order; pykraft sorts them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pykraft.errors import UsageError
from pykraft.ids import TopicPartition
from pykraft.messages.kafka.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from pykraft.messages.kafka.elect_leaders_response import ElectLeadersResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import AdminClient, AdminError, ApiError
from pykraft.tools.broker_clients import java_exception, tp_name

#: ElectLeaders' election types, by the names the tool takes (any case) and prints.
ELECTION_TYPES = {"PREFERRED": 0, "UNCLEAN": 1}
#: LeaderElectionCommand's own timeout, for ``default.api.timeout.ms`` unless set.
TIMEOUT_MS = 30_000


class ElectionFailedError(AdminError):
    """Some partitions could not be elected: ``lines`` are printed before the message."""

    def __init__(self, message: str, lines: list[str]) -> None:
        super().__init__(message)
        self.lines = lines


def election_type(name: str) -> str:
    """The election type's name as Kafka prints it; joptsimple's enum converter takes any
    case."""
    upper = name.upper()
    if upper not in ELECTION_TYPES:
        raise UsageError(f"Cannot parse argument '{name}' of option election-type")
    return upper


def parse_election_json(text: str) -> set[TopicPartition]:
    """The ``--path-to-json-file`` document: ``{"partitions": [{"topic": "foo",
    "partition": 1}]}``, with LeaderElectionCommand's messages."""
    try:
        document: Any = json.loads(text)
    except ValueError:
        raise UsageError("Replica election data is empty") from None
    if not isinstance(document, dict):
        raise UsageError("Replica election data is empty")
    if "partitions" not in document:
        raise UsageError('Replica election data is missing "partitions" field')
    entries = document["partitions"]
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UsageError("Expected `partitions` to be an array of objects")
    partitions = [TopicPartition(_field(e, "topic", str), _field(e, "partition", int))
                  for e in entries]
    duplicates = sorted({tp for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        raise UsageError("Replica election data contains duplicate partitions: "
                         f"[{', '.join(tp_name(tp) for tp in duplicates)}]")
    return set(partitions)


def _field(entry: dict[str, Any], name: str, kind: type) -> Any:
    if name not in entry:
        raise UsageError(f"No such field exists: `{name}`")
    value = entry[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise UsageError(f"Expected `{name}` to be {'an integer' if kind is int else 'a string'}"
                         f", got {json.dumps(value)}")
    return value


def election_request(kind: str, partitions: Iterable[TopicPartition] | None
                     ) -> ElectLeadersRequest:
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions or ()):
        topics.setdefault(topic, []).append(partition)
    return ElectLeadersRequest(
        election_type=ELECTION_TYPES[kind], timeout_ms=TIMEOUT_MS,
        topic_partitions=None if partitions is None else tuple(
            TopicPartitions(topic=t, partitions=tuple(ps)) for t, ps in topics.items()))


async def elect_leaders(admin: AdminClient, kind: str,
                        partitions: Iterable[TopicPartition] | None) -> list[str]:
    """Every line kafka-leader-election.sh prints; raises :class:`ElectionFailedError`
    (after the lines, in its ``lines``) when some partition could not be elected."""
    answer = await admin.request(election_request(kind, partitions))
    assert isinstance(answer, ElectLeadersResponse)
    if answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        raise AdminError("Not authorized to perform leader election")
    if answer.error_code != ErrorCode.NONE:
        raise ApiError(ErrorCode(answer.error_code), None)
    succeeded: list[TopicPartition] = []
    noop: list[TopicPartition] = []
    failed: list[tuple[TopicPartition, int, str | None]] = []
    for topic in answer.replica_election_results:
        for result in topic.partition_result:
            tp = TopicPartition(topic.topic, result.partition_id)
            if result.error_code == ErrorCode.NONE:
                succeeded.append(tp)
            elif result.error_code == ErrorCode.ELECTION_NOT_NEEDED:
                noop.append(tp)
            else:
                failed.append((tp, result.error_code, result.error_message))
    lines = []
    if succeeded:
        lines.append(f"Successfully completed leader election ({kind}) for partitions "
                     + ", ".join(tp_name(tp) for tp in sorted(succeeded)))
    if noop:
        lines.append("Valid replica already elected for partitions "
                     + ", ".join(tp_name(tp) for tp in sorted(noop)))
    lines += [f"Error completing leader election ({kind}) for partition: {tp_name(tp)}: "
              f"{java_exception(code)}: {ApiError(ErrorCode(code), message)}"
              for tp, code, message in sorted(failed)]
    if failed:
        raise ElectionFailedError(f"{len(failed)} replica(s) could not be elected", lines)
    return lines
