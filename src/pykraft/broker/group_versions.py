"""The group APIs' requests at any version in the one shape the group shards speak, and
their answers back: Kafka's generated messages are one class for every version, kio's are
one per version, so the runtime does here what Kafka's request classes do per version.

* Every request becomes its latest version (:func:`to_latest`), but OffsetCommit v2-4 stay
  as received (the shard reads their ``retention_time``, which v5+ dropped); the few whose
  shape changed are reshaped: OffsetFetch v1-7 (one group) as v8+ ``groups[]``, LeaveGroup v0-2
  (one ``member_id``) as v3+ ``members[]``, FindCoordinator v0-3 (one ``key``) as v4+
  ``coordinator_keys``. Answers go back the same way (:func:`to_version`).
* Batched requests are split by the ``__consumer_offsets`` partition of each group
  (:func:`split`) and the partitions' answers merged in request order (:func:`merge`).
* :func:`error_response` is Kafka's ``getErrorResponse`` for these APIs: the error on every
  group, member or partition the request names.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from pykraft.messages.kafka.leave_group_request import MemberIdentity
from pykraft.messages.kafka.list_groups_request import ListGroupsRequest
from pykraft.protocol.apis import API_SPECS, GENERATED_APIS, ApiKey
from pykraft.protocol.codec import request_type, response_type
from pykraft.protocol.convert import convert, default_value, entity_in
from pykraft.protocol.errors import ErrorCode

#: The APIs a group shard answers (FindCoordinator is the runtime's own).
SHARD_APIS = frozenset({
    ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
    ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE, ApiKey.CONSUMER_GROUP_HEARTBEAT,
    ApiKey.CONSUMER_GROUP_DESCRIBE,
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
_FIRST_BATCHED: Mapping[int, int] = {
    ApiKey.OFFSET_FETCH: 8, ApiKey.LEAVE_GROUP: 3, ApiKey.FIND_COORDINATOR: 4}
_FIRST_TOP_LEVEL_OFFSET_FETCH_ERROR = 2
#: JoinGroup's protocol name is nullable from v7 (Kafka writes "" before).
_FIRST_NULL_PROTOCOL_NAME = 7
LAST_RETENTION_COMMIT_VERSION = 4
_UNLISTED = (ErrorCode.none, ErrorCode.not_coordinator)
#: Kafka's message for COORDINATOR_NOT_AVAILABLE, which FindCoordinator v0-3 carry (v4+
#: entries carry none: a million keys would repeat it a million times).
COORDINATOR_NOT_AVAILABLE = "The coordinator is not available."
#: Kafka's ``Errors.message()`` of the codes a coordinator lookup answers, the v0-3
#: top-level message (``FindCoordinatorResponse.prepareOldResponse``; "NONE" on success);
#: v4+ coordinators carry none (``handleFindCoordinatorRequestV4AndAbove`` leaves it empty).
_LOOKUP_MESSAGES: Mapping[int, str] = {
    ErrorCode.none: "NONE", ErrorCode.coordinator_not_available: COORDINATOR_NOT_AVAILABLE}
_K = TypeVar("_K", bound=Hashable)


#: The shards' latest version where the broker's is newer: OffsetCommit and OffsetFetch v10
#: name topics by id, resolved to names at the broker's edge (:mod:`offset_topic_ids`).
_SHARD_LATEST: Mapping[int, int] = {ApiKey.OFFSET_COMMIT: 9, ApiKey.OFFSET_FETCH: 9}


def latest_version(api_key: int) -> int:
    """The newest version a group shard speaks (its requests' and answers' one shape)."""
    return _SHARD_LATEST.get(api_key, API_SPECS[api_key].max_version)


def latest_request(api_key: int) -> type[Any]:
    return request_type(api_key, latest_version(api_key))


def latest_response(api_key: int) -> type[Any]:
    return response_type(api_key, latest_version(api_key))


def nested(cls: type[Any], name: str) -> type[Any]:
    """The struct class of ``cls``'s field ``name`` (a kio entity or a generated struct)."""
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


def to_latest(api_key: int, version: int, request: Any) -> Any:
    """``request`` (of ``version``) as the API's latest version."""
    if api_key in GENERATED_APIS:
        return _batched(api_key, version, request)
    if api_key == ApiKey.OFFSET_COMMIT and version <= LAST_RETENTION_COMMIT_VERSION:
        return request  # the shard reads its retention_time (v5+ have none)
    target = latest_request(api_key)
    body: Any = convert(request, target)
    if version >= _FIRST_BATCHED.get(api_key, 0):
        return body
    assert api_key == ApiKey.OFFSET_FETCH
    group_cls = nested(target, "groups")
    topics = None if request.topics is None else tuple(
        convert(t, nested(group_cls, "topics")) for t in request.topics)
    group = group_cls(group_id=request.group_id, member_id=None, topics=topics)
    return dataclasses.replace(body, groups=(group,))


def _batched(api_key: int, version: int, request: Any) -> Any:
    """A generated request of a version before batching with its single entry in the
    batched field the shards read (the one class has both; Kafka's handlers read each
    version's own)."""
    if version >= _FIRST_BATCHED.get(api_key, 0):
        return request
    if api_key == ApiKey.FIND_COORDINATOR:
        return dataclasses.replace(request, coordinator_keys=(request.key,))
    assert api_key == ApiKey.LEAVE_GROUP
    return dataclasses.replace(request, members=(MemberIdentity(member_id=request.member_id),))


def _unbatched_generated(api_key: int, version: int, response: Any) -> Any:
    """A generated answer with what ``version`` cannot carry in the fields it has (Kafka's
    response classes per version): JoinGroup's protocol name is "" before v7, LeaveGroup
    v0-2 answer the one member's error at the top."""
    if (api_key == ApiKey.JOIN_GROUP and version < _FIRST_NULL_PROTOCOL_NAME
            and response.protocol_name is None):
        return dataclasses.replace(response, protocol_name="")
    if api_key == ApiKey.LEAVE_GROUP and version < _FIRST_BATCHED[api_key]:
        return dataclasses.replace(response, error_code=_leave_code(response), members=())
    if api_key == ApiKey.FIND_COORDINATOR and version < _FIRST_BATCHED[api_key]:
        found = response.coordinators[0]
        message = found.error_message or _LOOKUP_MESSAGES.get(found.error_code,
                                                              found.error_message)
        return dataclasses.replace(
            response, error_code=found.error_code, error_message=message,
            node_id=found.node_id, host=found.host, port=found.port, coordinators=())
    return response


def _leave_code(response: Any) -> int:
    """LeaveGroup's error before v3: the top one, else the one member's (Kafka's
    ``LeaveGroupResponse``)."""
    code: int = response.error_code
    if code == ErrorCode.none and response.members:
        code = response.members[0].error_code
    return code


def to_version(api_key: int, version: int, response: Any, request: Any) -> Any:
    """The latest-version ``response`` to ``request`` (latest version too) as ``version``."""
    if api_key in GENERATED_APIS:
        return _unbatched_generated(api_key, version, response)
    target = response_type(api_key, version)
    source: type | None = type(response)
    if version < _FIRST_BATCHED.get(api_key, 0):  # one entry, of mixed classes: walked
        response, source = _unbatched(api_key, version, response, request), None
    return _fill_nulls(convert(response, target), source)


def _unbatched(api_key: int, version: int, response: Any, request: Any) -> Any:
    """A batched answer as the single-entry fields of the versions before batching, still
    in the latest class (its extra fields drop in the conversion)."""
    target = response_type(api_key, version)
    assert api_key == ApiKey.OFFSET_FETCH
    group = response.groups[0]
    topics = group.topics
    if version < _FIRST_TOP_LEVEL_OFFSET_FETCH_ERROR and group.error_code != ErrorCode.none:
        topics = _offset_fetch_errors(group.error_code, request.groups[0].topics or (),
                                      nested(type(group), "topics"))
    return _build(target, throttle_time=response.throttle_time, error_code=group.error_code,
                  topics=tuple(convert(t, nested(target, "topics")) for t in topics))


def _build(target: type[Any], **fields: Any) -> Any:
    """``target`` from those of ``fields`` its version has."""
    return target(**{f.name: fields[f.name] for f in dataclasses.fields(target)})


def _offset_fetch_errors(code: ErrorCode, topics: tuple[Any, ...],
                         topic_cls: type[Any]) -> tuple[Any, ...]:
    """OffsetFetch v0-1 have no group error: every asked partition carries it."""
    partition_cls = nested(topic_cls, "partitions")
    return tuple(topic_cls(name=t.name, partitions=tuple(
        partition_cls(partition_index=p, committed_offset=-1, metadata="", error_code=code)
        for p in t.partition_indexes)) for t in topics)


def _fill_nulls(entity: Any, source: type | None) -> Any:
    """Nulls the target version cannot carry as its zero (JoinGroup's protocol_name is
    nullable from v7 only: Kafka writes "" before). ``source``: the class ``entity`` was
    converted from (None: any); only what its fields let be null is looked at, so a million
    entries whose classes agree on nulls are not walked."""
    changes: dict[str, Any] = {}
    not_nullable = _not_nullable(type(entity))
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        nested = None if source is None else _nested_source(source, field.name)
        if value is None:
            if field.name in not_nullable:
                changes[field.name] = default_value(field)
            continue
        first = value[0] if isinstance(value, tuple) and value else value
        kind: type = type(first)
        if not dataclasses.is_dataclass(first) or (source is not None and (
                nested is None or not _may_fill(nested, kind))):
            continue
        changes[field.name] = (tuple(_fill_nulls(item, nested) for item in value)
                               if isinstance(value, tuple) else _fill_nulls(value, nested))
    return dataclasses.replace(entity, **changes) if changes else entity


@functools.cache
def _nested_source(source: type, name: str) -> type | None:
    """The entity class of ``source``'s field ``name`` (None: not an entity field)."""
    hints = typing.get_type_hints(source)
    return entity_in(hints[name]) if name in hints else None


@functools.cache
def _may_fill(source: type, target: type) -> bool:
    """Whether an entity of ``target`` converted from ``source`` may hold a null its
    fields cannot carry, here or below."""
    if not dataclasses.is_dataclass(target):
        return False
    if _nullable_fields(source) & _not_nullable(target):
        return True
    return any(_may_fill(nested, inner) for name, annotation in
               typing.get_type_hints(target).items()
               if (inner := entity_in(annotation)) is not None
               and (nested := _nested_source(source, name)) is not None)


@functools.cache
def _nullable_fields(cls: type) -> frozenset[str]:
    return frozenset(name for name, annotation in typing.get_type_hints(cls).items()
                     if _nullable(annotation))


_NOT_NULLABLE: dict[type, frozenset[str]] = {}


def _not_nullable(cls: type) -> frozenset[str]:
    """The fields of ``cls`` that cannot be null (resolving the hints is slow: once per
    class, not per answer)."""
    found = _NOT_NULLABLE.get(cls)
    if found is None:
        found = _NOT_NULLABLE[cls] = frozenset(
            name for name, annotation in typing.get_type_hints(cls).items()
            if not _nullable(annotation))
    return found


def _nullable(annotation: object) -> bool:
    return isinstance(annotation, types.UnionType) and type(None) in typing.get_args(annotation)


# ---------------------------------------------------------------------- routing


def group_ids(api_key: int, request: Any) -> tuple[str, ...]:
    """The groups a latest-version request names, in order (ListGroups: none)."""
    return tuple(_named(api_key, request))


def _named(api_key: int, request: Any) -> Iterator[str]:
    """:func:`group_ids` one at a time (a million of them are not held twice)."""
    if api_key in BATCHED:
        entries = getattr(request, BATCHED[api_key][0])
        return (str(getattr(e, "group_id", e)) for e in entries)
    return iter(() if api_key == ApiKey.LIST_GROUPS else (str(request.group_id),))


def split(api_key: int, request: Any, partition_of: Callable[[str], int]) -> dict[int, Any]:
    """The latest-version ``request`` as one request per partition holding its groups."""
    if api_key not in BATCHED:
        return {partition_of(group): request for group in group_ids(api_key, request)}
    field = BATCHED[api_key][0]
    parts: dict[int, list[Any]] = {}
    for entry in getattr(request, field):
        parts.setdefault(partition_of(str(getattr(entry, "group_id", entry))), []).append(entry)
    return {p: dataclasses.replace(request, **{field: tuple(entries)})
            for p, entries in parts.items()}


def pieces(api_key: int, request: Any, partition_of: Callable[[str], int],
           most: int) -> list[tuple[int, Any]]:
    """:func:`split`, each group once (:func:`merge` gives a group named again the same
    answer) and at most ``most`` groups (or LeaveGroup members) a piece, each piece with its
    partition: the runtime hands a shard one piece per loop turn."""
    if api_key == ApiKey.LEAVE_GROUP:  # one group: its members in pieces, in order
        members = request.members
        return [(partition_of(str(request.group_id)),
                 dataclasses.replace(request, members=members[at:at + most]))
                for at in range(0, max(len(members), 1), most)]
    if api_key not in BATCHED:
        return list(split(api_key, request, partition_of).items())
    field = BATCHED[api_key][0]
    partitions: dict[str, int] = {}
    parts: dict[int, dict[str, Any]] = {}
    for entry in getattr(request, field):
        group = str(getattr(entry, "group_id", entry))
        known = partitions.get(group)
        if known is None:
            known = partitions[group] = partition_of(group)
        parts.setdefault(known, {})[group] = entry
    found = []
    for partition, by_group in parts.items():
        entries = tuple(by_group.values())
        found += [(partition, dataclasses.replace(request, **{field: entries[at:at + most]}))
                  for at in range(0, len(entries), most)]
    return found


def merge(api_key: int, request: Any, answers: Mapping[int, Any]) -> Any:
    """The partitions' answers (latest version) to :func:`split`'s parts (or
    :func:`pieces`', in order) as one answer to ``request``, its groups in request order;
    ListGroups concatenates them (a partition whose leadership just moved lists nothing, as
    in Kafka, rather than failing the list), and LeaveGroup its members' answers."""
    if not answers:
        return error_response(api_key, request, ErrorCode.none)
    if api_key == ApiKey.LIST_GROUPS:
        first = next(iter(answers.values()))
        code = next((a.error_code for a in answers.values() if a.error_code not in _UNLISTED),
                    ErrorCode.none)
        return dataclasses.replace(first, error_code=code, groups=tuple(
            g for answer in answers.values() for g in answer.groups))
    if api_key == ApiKey.LEAVE_GROUP:  # :func:`pieces`' members, in order
        first = next(iter(answers.values()))
        code = next((a.error_code for a in answers.values() if a.error_code != ErrorCode.none),
                    ErrorCode.none)
        return dataclasses.replace(first, error_code=code, members=tuple(
            m for answer in answers.values() for m in answer.members))
    if api_key not in BATCHED:
        (answer,) = answers.values()
        return answer
    _, field, key = BATCHED[api_key]
    by_group = {str(getattr(e, key)): e for a in answers.values() for e in getattr(a, field)}
    first = next(iter(answers.values()))
    return dataclasses.replace(first, **{field: tuple(
        by_group[group] for group in _named(api_key, request))})


# ---------------------------------------------------------------------- errors


def distinct_filters(request: ListGroupsRequest) -> ListGroupsRequest:
    """ListGroups with each filter once: every shard reads them all."""
    return dataclasses.replace(request, states_filter=tuple(dict.fromkeys(
        request.states_filter)), types_filter=tuple(dict.fromkeys(request.types_filter)))


def error_response(api_key: int, request: Any, code: ErrorCode,
                   message: str | None = None) -> Any:
    """The latest-version answer refusing the latest-version ``request`` with ``code`` on
    every group, member or partition it names (Kafka's ``getErrorResponse``)."""
    cls = latest_response(api_key)
    body = cls(**{f.name: default_value(f) for f in dataclasses.fields(cls)})
    if api_key == ApiKey.FIND_COORDINATOR:  # v0-3's top level is the one key's entry
        entry = nested(cls, "coordinators")
        return dataclasses.replace(body, coordinators=_each_once(
            request.coordinator_keys, lambda key: entry(
                key=key, node_id=-1, host="", port=-1, error_code=code,
                error_message=message)))
    if hasattr(body, "error_code"):
        body = dataclasses.replace(body, error_code=code)
        if hasattr(body, "error_message"):
            body = dataclasses.replace(body, error_message=message)
    if api_key == ApiKey.OFFSET_COMMIT:
        return dataclasses.replace(body, topics=_partition_errors(
            request.topics, nested(cls, "topics"), code))
    if api_key == ApiKey.LEAVE_GROUP:
        member = nested(cls, "members")
        return dataclasses.replace(body, members=_each_once(
            ((m.member_id, m.group_instance_id) for m in request.members),
            lambda ids: member(member_id=ids[0], group_instance_id=ids[1], error_code=code)))
    if api_key in BATCHED:
        _, field, _ = BATCHED[api_key]
        entry = nested(cls, field)
        defaults = _defaults(entry)
        return dataclasses.replace(body, **{field: _each_once(
            _named(api_key, request),
            lambda group: _group_error(entry, defaults, group, code, message))})
    return body


def _each_once(keys: Iterable[_K], make: Callable[[_K], Any]) -> tuple[Any, ...]:
    """``make(key)`` for each of ``keys``, made once per distinct key: a request naming
    one group a million times is answered with one entry a million times (the codec writes
    a repeated entry once, then copies its bytes)."""
    made: dict[_K, Any] = {}
    entries = []
    for key in keys:
        entry = made.get(key)
        if entry is None:
            entry = made[key] = make(key)
        entries.append(entry)
    return tuple(entries)


_DEFAULTS: dict[type, Mapping[str, Any]] = {}


def _defaults(entry: type) -> Mapping[str, Any]:
    """Each field's default in ``entry`` (resolved once per class, not per group)."""
    found = _DEFAULTS.get(entry)
    if found is None:
        found = _DEFAULTS[entry] = types.MappingProxyType(
            {f.name: default_value(f) for f in dataclasses.fields(entry)})
    return found


def _group_error(entry: type[Any], defaults: Mapping[str, Any], group: str,
                 code: ErrorCode, message: str | None) -> Any:
    fields = {**defaults, "group_id": group, "error_code": code}
    if "error_message" in fields:
        fields["error_message"] = message
    return entry(**fields)


def partition_errors(api_key: int, topics: tuple[Any, ...], code: ErrorCode) -> tuple[Any, ...]:
    """Each partition of a latest-version request's ``topics`` refused with ``code``, in
    the answer's shape: OffsetCommit's and OffsetDelete's topics, OffsetFetch's group's."""
    cls = latest_response(api_key)
    if api_key == ApiKey.OFFSET_FETCH:
        return _offset_fetch_errors(code, topics, nested(nested(cls, "groups"), "topics"))
    return _partition_errors(topics, nested(cls, "topics"), code)


def _partition_errors(topics: tuple[Any, ...], topic_cls: type[Any],
                      code: ErrorCode) -> tuple[Any, ...]:
    partition_cls = nested(topic_cls, "partitions")
    return tuple(topic_cls(name=t.name, partitions=tuple(
        partition_cls(partition_index=p.partition_index, error_code=code)
        for p in t.partitions)) for t in topics)
