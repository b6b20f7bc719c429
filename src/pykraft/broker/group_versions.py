"""The group APIs' requests of any version in the one shape the group shards speak, and
their answers back. Kafka's generated classes are one class for every version, and so are
pykraft's (:mod:`pykraft.messages.kafka`); what is left here is what Kafka's request and
response classes do per version:

* the versions before batching carry their one entry in fields of their own
  (:func:`to_latest`): OffsetFetch v1-7 (one group) as v8+ ``groups[]``, LeaveGroup v0-2 (one
  ``member_id``) as v3+ ``members[]``, FindCoordinator v0-3 (one ``key``) as v4+
  ``coordinator_keys``; answers go back the same way (:func:`to_version`), with JoinGroup's
  null protocol name written "" before v7;
* batched requests are split by the ``__consumer_offsets`` partition of each group
  (:func:`split`) and the partitions' answers merged in request order (:func:`merge`);
* :func:`error_response` is Kafka's ``getErrorResponse`` for these APIs: the error on every
  group, member or partition the request names.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Protocol, TypeVar, overload

from pykraft.group.messages import GroupRequest, GroupResponse, ShardRequest, ShardResponse
from pykraft.messages import rpc
from pykraft.messages.kafka.consumer_group_heartbeat_request import (
    ConsumerGroupHeartbeatRequest,
)
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.find_coordinator_response import (
    Coordinator,
    FindCoordinatorResponse,
)
from pykraft.messages.kafka.heartbeat_request import HeartbeatRequest
from pykraft.messages.kafka.join_group_request import JoinGroupRequest
from pykraft.messages.kafka.join_group_response import JoinGroupResponse
from pykraft.messages.kafka.leave_group_request import LeaveGroupRequest, MemberIdentity
from pykraft.messages.kafka.leave_group_response import LeaveGroupResponse, MemberResponse
from pykraft.messages.kafka.list_groups_request import ListGroupsRequest
from pykraft.messages.kafka.list_groups_response import ListGroupsResponse
from pykraft.messages.kafka.offset_commit_request import OffsetCommitRequest
from pykraft.messages.kafka.offset_commit_response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from pykraft.messages.kafka.offset_delete_request import OffsetDeleteRequest
from pykraft.messages.kafka.offset_delete_response import (
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from pykraft.messages.kafka.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from pykraft.messages.kafka.offset_fetch_response import (
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from pykraft.messages.kafka.sync_group_request import SyncGroupRequest
from pykraft.messages.kafka.txn_offset_commit_request import TxnOffsetCommitRequest
from pykraft.messages.kafka.txn_offset_commit_response import (
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from pykraft.messages.replace import replaced
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode

#: The APIs a group shard answers (FindCoordinator is the runtime's own).
SHARD_APIS = frozenset({
    ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
    ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE, ApiKey.CONSUMER_GROUP_HEARTBEAT,
    ApiKey.CONSUMER_GROUP_DESCRIBE, ApiKey.TXN_OFFSET_COMMIT,
})
GROUP_APIS = SHARD_APIS | {ApiKey.FIND_COORDINATOR}
#: Per batched API: the request field listing group ids, the response field listing one
#: answer per group, and that answer's group id field.
BATCHED: Mapping[int, tuple[str, str, str]] = {
    ApiKey.OFFSET_FETCH: ("groups", "groups", "group_id"),
    ApiKey.DESCRIBE_GROUPS: ("groups", "groups", "group_id"),
    ApiKey.DELETE_GROUPS: ("groups_names", "results", "group_id"),
    ApiKey.CONSUMER_GROUP_DESCRIBE: ("group_ids", "groups", "group_id"),
}
#: The batched APIs that refuse the empty group id with INVALID_GROUP_ID before any shard
#: sees it (Kafka's ``GroupCoordinatorService``; DescribeGroups, OffsetFetch and DeleteGroups
#: take it, for backwards compatibility).
_EMPTY_ID_REFUSED = frozenset({ApiKey.CONSUMER_GROUP_DESCRIBE})
_FIRST_BATCHED: Mapping[int, int] = {
    ApiKey.OFFSET_FETCH: 8, ApiKey.LEAVE_GROUP: 3, ApiKey.FIND_COORDINATOR: 4}
_FIRST_TOP_LEVEL_OFFSET_FETCH_ERROR = 2
#: TxnOffsetCommit answers COORDINATOR_LOAD_IN_PROGRESS from v2.
_FIRST_LOAD_ERROR_TXN_COMMIT = 2
#: JoinGroup's protocol name is nullable from v7 (Kafka writes "" before).
_FIRST_NULL_PROTOCOL_NAME = 7
_UNLISTED = (ErrorCode.NONE, ErrorCode.NOT_COORDINATOR)
#: Kafka's message for COORDINATOR_NOT_AVAILABLE, which FindCoordinator v0-3 carry (v4+
#: entries carry none: a million keys would repeat it a million times).
COORDINATOR_NOT_AVAILABLE = "The coordinator is not available."
#: Kafka's ``Errors.message()`` of the codes a coordinator lookup answers, the v0-3
#: top-level message (``FindCoordinatorResponse.prepareOldResponse``; "NONE" on success);
#: v4+ coordinators carry none (``handleFindCoordinatorRequestV4AndAbove`` leaves it empty).
_LOOKUP_MESSAGES: Mapping[int, str] = {
    ErrorCode.NONE: "NONE", ErrorCode.COORDINATOR_NOT_AVAILABLE: COORDINATOR_NOT_AVAILABLE}
_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")
_Req = TypeVar("_Req", bound=GroupRequest)
_Resp = TypeVar("_Resp", bound=GroupResponse)
_Leave = TypeVar("_Leave", bound=LeaveGroupResponse)
_Found = TypeVar("_Found", bound=FindCoordinatorResponse)
_Fetched = TypeVar("_Fetched", bound=OffsetFetchResponse)
_Txn = TypeVar("_Txn", bound=TxnOffsetCommitResponse)
#: The requests naming one group in their ``group_id``.
_ONE_GROUP = (OffsetCommitRequest, JoinGroupRequest, HeartbeatRequest, LeaveGroupRequest,
              SyncGroupRequest, OffsetDeleteRequest, ConsumerGroupHeartbeatRequest,
              TxnOffsetCommitRequest)


class Partition(Protocol):
    @property
    def partition_index(self) -> int: ...


class Topic(Protocol):
    """A topic of OffsetCommit's, TxnOffsetCommit's or OffsetDelete's request (one class
    each: what they share)."""

    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[Partition]: ...


class FetchTopic(Protocol):
    """A topic of an OffsetFetch group's request."""

    @property
    def name(self) -> str: ...
    @property
    def partition_indexes(self) -> Sequence[int]: ...


def latest_response(api_key: int) -> type:
    """The response class of a group API (one for every version)."""
    return rpc.response_class(api_key)


def nested(cls: type, name: str) -> type:
    """The struct class of ``cls``'s field ``name`` (found by reflection on the generated
    class: which struct a field holds is known from its name only at run time)."""
    found = _struct_in(typing.get_type_hints(cls)[name])
    assert found is not None, f"{cls.__name__}.{name} holds no struct"
    return found


def _struct_in(annotation: object) -> type | None:
    """The dataclass inside ``S``, ``S | None``, ``tuple[S, ...]`` or ``tuple[S, ...] | None``."""
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation
    return next((found for arg in typing.get_args(annotation)
                 if (found := _struct_in(arg)) is not None), None)


# ---------------------------------------------------------------------- versions


def to_latest(api_key: int, version: int, request: _Req) -> _Req:
    """``request`` (of ``version``) with a version before batching's single entry in the
    batched field the shards read (the one class has both)."""
    if version >= _FIRST_BATCHED.get(api_key, 0):
        return request
    if isinstance(request, FindCoordinatorRequest):
        return dataclasses.replace(request, coordinator_keys=(request.key,))
    if isinstance(request, LeaveGroupRequest):
        return dataclasses.replace(request, members=(MemberIdentity(member_id=request.member_id),))
    assert isinstance(request, OffsetFetchRequest)
    return dataclasses.replace(request, groups=(_one_group(request),))


def _one_group(request: OffsetFetchRequest) -> OffsetFetchRequestGroup:
    """OffsetFetch v1-7's group and topics (null: all) as its one ``groups`` entry."""
    topics = None if request.topics is None else tuple(
        OffsetFetchRequestTopics(name=t.name, partition_indexes=t.partition_indexes)
        for t in request.topics)
    return OffsetFetchRequestGroup(group_id=request.group_id, topics=topics)


def to_version(api_key: int, version: int, response: _Resp,
               request: GroupRequest | None) -> _Resp:
    """The ``response`` to ``request`` (both as :func:`to_latest` has them) with what
    ``version`` carries in fields of its own there."""
    if isinstance(response, TxnOffsetCommitResponse) and version < _FIRST_LOAD_ERROR_TXN_COMMIT:
        return _load_error_as_unavailable(response)
    if isinstance(response, JoinGroupResponse) and version < _FIRST_NULL_PROTOCOL_NAME:
        if response.protocol_name is None:
            return dataclasses.replace(response, protocol_name="")
        return response
    if version >= _FIRST_BATCHED.get(api_key, 0):
        return response
    if isinstance(response, LeaveGroupResponse):
        return _one_member(response)
    if isinstance(response, FindCoordinatorResponse):
        return _one_coordinator(response)
    assert isinstance(response, OffsetFetchResponse)
    assert isinstance(request, OffsetFetchRequest)
    return _one_group_answer(version, response, request)


def _load_error_as_unavailable(response: _Txn) -> _Txn:
    """TxnOffsetCommit v0-1: COORDINATOR_LOAD_IN_PROGRESS as COORDINATOR_NOT_AVAILABLE
    (producers before 2.0 could crash on it, KAFKA-7296; Kafka's ``sendResponse``)."""
    loading = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    unavailable = ErrorCode.COORDINATOR_NOT_AVAILABLE
    return dataclasses.replace(response, topics=tuple(
        dataclasses.replace(t, partitions=tuple(
            dataclasses.replace(p, error_code=unavailable) if p.error_code == loading else p
            for p in t.partitions)) for t in response.topics))


def _one_member(response: _Leave) -> _Leave:
    """LeaveGroup v0-2: the top-level error, else the one member's (Kafka's
    ``LeaveGroupResponse``)."""
    code = response.error_code
    if code == ErrorCode.NONE and response.members:
        code = response.members[0].error_code
    return dataclasses.replace(response, error_code=code, members=())


def _one_coordinator(response: _Found) -> _Found:
    """FindCoordinator v0-3: the one key's coordinator at the top, with Kafka's message."""
    found = response.coordinators[0]
    message = found.error_message or _LOOKUP_MESSAGES.get(found.error_code, found.error_message)
    return dataclasses.replace(
        response, error_code=found.error_code, error_message=message, node_id=found.node_id,
        host=found.host, port=found.port, coordinators=())


def _one_group_answer(version: int, response: _Fetched,
                      request: OffsetFetchRequest) -> _Fetched:
    """OffsetFetch v1-7: the one group's topics and error at the top; v1 has no group
    error, so every asked partition carries it."""
    group = response.groups[0]
    if version < _FIRST_TOP_LEVEL_OFFSET_FETCH_ERROR and group.error_code != ErrorCode.NONE:
        topics = tuple(OffsetFetchResponseTopic(name=t.name, partitions=tuple(
            OffsetFetchResponsePartition(partition_index=p, committed_offset=-1, metadata="",
                                         error_code=group.error_code)
            for p in t.partition_indexes)) for t in request.groups[0].topics or ())
    else:
        topics = tuple(OffsetFetchResponseTopic(name=t.name, partitions=tuple(
            OffsetFetchResponsePartition(
                partition_index=p.partition_index, committed_offset=p.committed_offset,
                committed_leader_epoch=p.committed_leader_epoch, metadata=p.metadata,
                error_code=p.error_code) for p in t.partitions)) for t in group.topics)
    return dataclasses.replace(response, error_code=group.error_code, topics=topics, groups=())


# ---------------------------------------------------------------------- routing


def group_ids(api_key: int, request: ShardRequest) -> tuple[str, ...]:
    """The groups a latest-version request names, in order (ListGroups: none)."""
    return tuple(_named(api_key, request))


def _named(api_key: int, request: ShardRequest) -> Iterator[str]:
    """:func:`group_ids` one at a time (a million of them are not held twice)."""
    if api_key in BATCHED:
        entries = getattr(request, BATCHED[api_key][0])
        return (str(getattr(e, "group_id", e)) for e in entries)
    if isinstance(request, ListGroupsRequest):
        return iter(())
    assert isinstance(request, _ONE_GROUP)
    return iter((str(request.group_id),))


def split(api_key: int, request: ShardRequest,
          partition_of: Callable[[str], int]) -> dict[int, ShardRequest]:
    """The latest-version ``request`` as one request per partition holding its groups."""
    if api_key not in BATCHED:
        return {partition_of(group): request for group in group_ids(api_key, request)}
    field = BATCHED[api_key][0]
    parts: dict[int, list[object]] = {}
    for entry in getattr(request, field):
        parts.setdefault(partition_of(str(getattr(entry, "group_id", entry))), []).append(entry)
    return {p: replaced(request, **{field: tuple(entries)})
            for p, entries in parts.items()}


def pieces(api_key: int, request: ShardRequest, partition_of: Callable[[str], int],
           most: int) -> list[tuple[int, ShardRequest]]:
    """:func:`split`, each group once (:func:`merge` gives a group named again the same
    answer) and at most ``most`` groups (or LeaveGroup members) a piece, each piece with its
    partition: the runtime hands a shard one piece per loop turn."""
    if isinstance(request, LeaveGroupRequest):  # one group: its members in pieces, in order
        members = request.members
        return [(partition_of(str(request.group_id)),
                 dataclasses.replace(request, members=members[at:at + most]))
                for at in range(0, max(len(members), 1), most)]
    if api_key not in BATCHED:
        return list(split(api_key, request, partition_of).items())
    field = BATCHED[api_key][0]
    partitions: dict[str, int] = {}
    parts: dict[int, dict[str, object]] = {}
    refuses_empty = api_key in _EMPTY_ID_REFUSED
    for entry in getattr(request, field):
        group = str(getattr(entry, "group_id", entry))
        if refuses_empty and not group:
            continue  # :func:`merge` answers it
        known = partitions.get(group)
        if known is None:
            known = partitions[group] = partition_of(group)
        parts.setdefault(known, {})[group] = entry
    found: list[tuple[int, ShardRequest]] = []
    for partition, by_group in parts.items():
        entries = tuple(by_group.values())
        found += [(partition, replaced(request, **{field: entries[at:at + most]}))
                  for at in range(0, len(entries), most)]
    return found


def merge(api_key: int, request: ShardRequest,
          answers: Mapping[int, ShardResponse]) -> ShardResponse:
    """The partitions' answers (latest version) to :func:`split`'s parts (or
    :func:`pieces`', in order) as one answer to ``request``, its groups in request order;
    ListGroups concatenates them (a partition whose leadership just moved lists nothing, as
    in Kafka, rather than failing the list), and LeaveGroup its members' answers."""
    if not answers and api_key not in _EMPTY_ID_REFUSED:
        return error_response(api_key, request, ErrorCode.NONE)
    if api_key == ApiKey.LIST_GROUPS:
        lists = [a for a in answers.values() if isinstance(a, ListGroupsResponse)]
        code = next((a.error_code for a in lists if a.error_code not in _UNLISTED),
                    ErrorCode.NONE)
        return dataclasses.replace(lists[0], error_code=code, groups=tuple(
            g for answer in lists for g in answer.groups))
    if api_key == ApiKey.LEAVE_GROUP:  # :func:`pieces`' members, in order
        leaves = [a for a in answers.values() if isinstance(a, LeaveGroupResponse)]
        code = next((a.error_code for a in leaves if a.error_code != ErrorCode.NONE),
                    ErrorCode.NONE)
        return dataclasses.replace(leaves[0], error_code=code, members=tuple(
            m for answer in leaves for m in answer.members))
    if api_key not in BATCHED:
        (answer,) = answers.values()
        return answer
    _, field, key = BATCHED[api_key]
    by_group = {str(getattr(e, key)): e for a in answers.values() for e in getattr(a, field)}
    first = next(iter(answers.values()), None) or latest_response(api_key)()
    if api_key in _EMPTY_ID_REFUSED:  # no message: Kafka sets none
        by_group[""] = nested(type(first), field)(
            group_id="", error_code=ErrorCode.INVALID_GROUP_ID)
    return replaced(first, **{field: tuple(
        by_group[group] for group in _named(api_key, request))})


# ---------------------------------------------------------------------- errors


def distinct_filters(request: ListGroupsRequest) -> ListGroupsRequest:
    """ListGroups with each filter once: every shard reads them all."""
    return dataclasses.replace(request, states_filter=tuple(dict.fromkeys(
        request.states_filter)), types_filter=tuple(dict.fromkeys(request.types_filter)))


@overload
def error_response(api_key: int, request: FindCoordinatorRequest, code: ErrorCode,
                   message: str | None = None) -> FindCoordinatorResponse: ...
@overload
def error_response(api_key: int, request: ShardRequest, code: ErrorCode,
                   message: str | None = None) -> ShardResponse: ...
@overload
def error_response(api_key: int, request: GroupRequest, code: ErrorCode,
                   message: str | None = None) -> GroupResponse: ...
def error_response(api_key: int, request: GroupRequest, code: ErrorCode,
                   message: str | None = None) -> GroupResponse:
    """The latest-version answer refusing the latest-version ``request`` with ``code`` on
    every group, member or partition it names (Kafka's ``getErrorResponse``)."""
    if isinstance(request, FindCoordinatorRequest):  # v0-3's top level is the key's entry
        return FindCoordinatorResponse(coordinators=_each_once(
            request.coordinator_keys, lambda key: Coordinator(
                key=key, node_id=-1, host="", port=-1, error_code=code,
                error_message=message)))
    if isinstance(request, OffsetCommitRequest):
        return OffsetCommitResponse(topics=offset_commit_errors(request.topics, code))
    if isinstance(request, TxnOffsetCommitRequest):
        return TxnOffsetCommitResponse(topics=txn_offset_commit_errors(request.topics, code))
    if isinstance(request, LeaveGroupRequest):
        return LeaveGroupResponse(error_code=code, members=_each_once(
            ((m.member_id, m.group_instance_id) for m in request.members),
            lambda ids: MemberResponse(member_id=ids[0], group_instance_id=ids[1],
                                       error_code=code)))
    cls = latest_response(api_key)
    body: ShardResponse = cls()
    if hasattr(body, "error_code"):
        body = replaced(body, error_code=code)
        if hasattr(body, "error_message"):
            body = replaced(body, error_message=message)
    if api_key in BATCHED:
        _, field, _ = BATCHED[api_key]
        entry = nested(cls, field)
        return replaced(body, **{field: _each_once(
            _named(api_key, request), lambda group: entry(group_id=group, error_code=code))})
    return body


def _each_once(keys: Iterable[_K], make: Callable[[_K], _V]) -> tuple[_V, ...]:
    """``make(key)`` for each of ``keys``, made once per distinct key: a request naming
    one group a million times is answered with one entry a million times (the codec writes
    a repeated entry once, then copies its bytes)."""
    made: dict[_K, _V] = {}
    entries = []
    for key in keys:
        entry = made.get(key)
        if entry is None:
            entry = made[key] = make(key)
        entries.append(entry)
    return tuple(entries)


def fetch_partition_errors(topics: Iterable[FetchTopic],
                           code: ErrorCode) -> tuple[OffsetFetchResponseTopics, ...]:
    """Each partition of an OffsetFetch group's ``topics`` refused with ``code``, in the
    answer's shape."""
    return tuple(OffsetFetchResponseTopics(name=t.name, partitions=tuple(
        OffsetFetchResponsePartitions(partition_index=p, committed_offset=-1, metadata="",
                                      error_code=code)
        for p in t.partition_indexes)) for t in topics)


def offset_commit_errors(topics: Iterable[Topic],
                         code: ErrorCode) -> tuple[OffsetCommitResponseTopic, ...]:
    """Each partition of OffsetCommit's ``topics`` refused with ``code``, as its answer's."""
    return tuple(OffsetCommitResponseTopic(name=t.name, partitions=tuple(
        OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
        for p in t.partitions)) for t in topics)


def txn_offset_commit_errors(topics: Iterable[Topic],
                             code: ErrorCode) -> tuple[TxnOffsetCommitResponseTopic, ...]:
    """Each partition of TxnOffsetCommit's ``topics`` refused with ``code``."""
    return tuple(TxnOffsetCommitResponseTopic(name=t.name, partitions=tuple(
        TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
        for p in t.partitions)) for t in topics)


def offset_delete_errors(topics: Iterable[Topic],
                         code: ErrorCode) -> tuple[OffsetDeleteResponseTopic, ...]:
    """Each partition of OffsetDelete's ``topics`` refused with ``code``, as its answer's."""
    return tuple(OffsetDeleteResponseTopic(name=t.name, partitions=tuple(
        OffsetDeleteResponsePartition(partition_index=p.partition_index, error_code=code)
        for p in t.partitions)) for t in topics)
