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
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from kio.schema.types import GroupId

from pykraft.protocol.apis import API_SPECS, ApiKey
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
LAST_RETENTION_COMMIT_VERSION = 4
_UNLISTED = (ErrorCode.none, ErrorCode.not_coordinator)


def latest_version(api_key: int) -> int:
    return API_SPECS[api_key].max_version


def latest_request(api_key: int) -> type[Any]:
    return request_type(api_key, latest_version(api_key))


def latest_response(api_key: int) -> type[Any]:
    return response_type(api_key, latest_version(api_key))


def _nested(cls: type[Any], name: str) -> type[Any]:
    found = entity_in(typing.get_type_hints(cls)[name])
    assert found is not None, f"{cls.__name__}.{name} holds no entity"
    return found


# ---------------------------------------------------------------------- versions


def to_latest(api_key: int, version: int, request: Any) -> Any:
    """``request`` (of ``version``) as the API's latest version."""
    if api_key == ApiKey.OFFSET_COMMIT and version <= LAST_RETENTION_COMMIT_VERSION:
        return request  # the shard reads its retention_time (v5+ have none)
    target = latest_request(api_key)
    body: Any = convert(request, target)
    if version >= _FIRST_BATCHED.get(api_key, 0):
        return body
    if api_key == ApiKey.OFFSET_FETCH:
        group_cls = _nested(target, "groups")
        topics = None if request.topics is None else tuple(
            convert(t, _nested(group_cls, "topics")) for t in request.topics)
        group = group_cls(group_id=request.group_id, member_id=None,
                          topics=topics)
        return dataclasses.replace(body, groups=(group,))
    if api_key == ApiKey.LEAVE_GROUP:
        member = _nested(target, "members")(member_id=request.member_id, group_instance_id=None,
                                            reason=None)
        return dataclasses.replace(body, members=(member,))
    assert api_key == ApiKey.FIND_COORDINATOR
    return dataclasses.replace(body, coordinator_keys=(request.key,))


def to_version(api_key: int, version: int, response: Any, request: Any) -> Any:
    """The latest-version ``response`` to ``request`` (latest version too) as ``version``."""
    target = response_type(api_key, version)
    if version < _FIRST_BATCHED.get(api_key, 0):
        response = _unbatched(api_key, version, response, request)
    return _fill_nulls(convert(response, target))


def _unbatched(api_key: int, version: int, response: Any, request: Any) -> Any:
    """A batched answer as the single-entry fields of the versions before batching, still
    in the latest class (its extra fields drop in the conversion)."""
    target = response_type(api_key, version)
    if api_key == ApiKey.FIND_COORDINATOR:
        found = response.coordinators[0]
        return _build(target, throttle_time=response.throttle_time, error_code=found.error_code,
                      error_message=found.error_message, node_id=found.node_id,
                      host=found.host, port=found.port)
    if api_key == ApiKey.LEAVE_GROUP:
        code = response.error_code
        if code == ErrorCode.none and response.members:  # Kafka's LeaveGroupResponse
            code = response.members[0].error_code
        return _build(target, throttle_time=response.throttle_time, error_code=code)
    assert api_key == ApiKey.OFFSET_FETCH
    group = response.groups[0]
    topics = group.topics
    if version < _FIRST_TOP_LEVEL_OFFSET_FETCH_ERROR and group.error_code != ErrorCode.none:
        topics = _offset_fetch_errors(group.error_code, request.groups[0].topics or (),
                                      _nested(type(group), "topics"))
    return _build(target, throttle_time=response.throttle_time, error_code=group.error_code,
                  topics=tuple(convert(t, _nested(target, "topics")) for t in topics))


def _build(target: type[Any], **fields: Any) -> Any:
    """``target`` from those of ``fields`` its version has."""
    return target(**{f.name: fields[f.name] for f in dataclasses.fields(target)})


def _offset_fetch_errors(code: ErrorCode, topics: tuple[Any, ...],
                         topic_cls: type[Any]) -> tuple[Any, ...]:
    """OffsetFetch v0-1 have no group error: every asked partition carries it."""
    partition_cls = _nested(topic_cls, "partitions")
    return tuple(topic_cls(name=t.name, partitions=tuple(
        partition_cls(partition_index=p, committed_offset=-1, metadata="", error_code=code)
        for p in t.partition_indexes)) for t in topics)


def _fill_nulls(entity: Any) -> Any:
    """Nulls the target version cannot carry as its zero (JoinGroup's protocol_name is
    nullable from v7 only: Kafka writes "" before)."""
    changes: dict[str, Any] = {}
    not_nullable = _not_nullable(type(entity))
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if value is None and field.name in not_nullable:
            changes[field.name] = default_value(field)
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            changes[field.name] = tuple(_fill_nulls(item) for item in value)
        elif dataclasses.is_dataclass(value):
            changes[field.name] = _fill_nulls(value)
    return dataclasses.replace(entity, **changes) if changes else entity


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
    if api_key in BATCHED:
        entries = getattr(request, BATCHED[api_key][0])
        return tuple(str(getattr(e, "group_id", e)) for e in entries)
    if api_key == ApiKey.LIST_GROUPS:
        return ()
    return (str(request.group_id),)


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


def merge(api_key: int, request: Any, answers: Mapping[int, Any]) -> Any:
    """The partitions' answers (latest version) to :func:`split`'s parts as one answer to
    ``request``, its groups in request order; ListGroups concatenates them (a partition
    whose leadership just moved lists nothing, as in Kafka, rather than failing the list)."""
    if not answers:
        return error_response(api_key, request, ErrorCode.none)
    if api_key == ApiKey.LIST_GROUPS:
        first = next(iter(answers.values()))
        code = next((a.error_code for a in answers.values() if a.error_code not in _UNLISTED),
                    ErrorCode.none)
        return dataclasses.replace(first, error_code=code, groups=tuple(
            g for answer in answers.values() for g in answer.groups))
    if api_key not in BATCHED:
        (answer,) = answers.values()
        return answer
    _, field, key = BATCHED[api_key]
    by_group = {str(getattr(e, key)): e for a in answers.values() for e in getattr(a, field)}
    first = next(iter(answers.values()))
    return dataclasses.replace(first, **{field: tuple(
        by_group[group] for group in group_ids(api_key, request))})


# ---------------------------------------------------------------------- errors


def error_response(api_key: int, request: Any, code: ErrorCode,
                   message: str | None = None) -> Any:
    """The latest-version answer refusing the latest-version ``request`` with ``code`` on
    every group, member or partition it names (Kafka's ``getErrorResponse``)."""
    cls = latest_response(api_key)
    body = cls(**{f.name: default_value(f) for f in dataclasses.fields(cls)})
    if hasattr(body, "error_code"):
        body = dataclasses.replace(body, error_code=code)
        if hasattr(body, "error_message"):
            body = dataclasses.replace(body, error_message=message)
    if api_key == ApiKey.FIND_COORDINATOR:
        entry = _nested(cls, "coordinators")
        return dataclasses.replace(body, coordinators=tuple(
            entry(key=key, node_id=-1, host="", port=-1, error_code=code, error_message=message)
            for key in request.coordinator_keys))
    if api_key == ApiKey.OFFSET_COMMIT:
        return dataclasses.replace(body, topics=_partition_errors(
            request.topics, _nested(cls, "topics"), code))
    if api_key == ApiKey.LEAVE_GROUP:
        member = _nested(cls, "members")
        return dataclasses.replace(body, members=tuple(
            member(member_id=m.member_id, group_instance_id=m.group_instance_id,
                   error_code=code) for m in request.members))
    if api_key in BATCHED:
        _, field, _ = BATCHED[api_key]
        entry = _nested(cls, field)
        return dataclasses.replace(body, **{field: tuple(
            _group_error(entry, GroupId(group), code, message)
            for group in group_ids(api_key, request))})
    return body


def _group_error(entry: type[Any], group: GroupId, code: ErrorCode,
                 message: str | None) -> Any:
    fields = {f.name: default_value(f) for f in dataclasses.fields(entry)}
    fields.update(group_id=group, error_code=code)
    if "error_message" in fields:
        fields["error_message"] = message
    return entry(**fields)


def partition_errors(api_key: int, topics: tuple[Any, ...], code: ErrorCode) -> tuple[Any, ...]:
    """Each partition of a latest-version request's ``topics`` refused with ``code``, in
    the answer's shape: OffsetCommit's and OffsetDelete's topics, OffsetFetch's group's."""
    cls = latest_response(api_key)
    if api_key == ApiKey.OFFSET_FETCH:
        return _offset_fetch_errors(code, topics, _nested(_nested(cls, "groups"), "topics"))
    return _partition_errors(topics, _nested(cls, "topics"), code)


def _partition_errors(topics: tuple[Any, ...], topic_cls: type[Any],
                      code: ErrorCode) -> tuple[Any, ...]:
    partition_cls = _nested(topic_cls, "partitions")
    return tuple(topic_cls(name=t.name, partitions=tuple(
        partition_cls(partition_index=p.partition_index, error_code=code)
        for p in t.partitions)) for t in topics)
