"""Group API requests reshaped to the latest version and answers back, splitting batched
requests by partition, and error answers naming every part."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import pytest

from pykraft.broker.group_versions import (
    GROUP_APIS,
    error_response,
    merge,
    pieces,
    split,
    to_latest,
    to_version,
)
from pykraft.messages.kafka.consumer_group_describe_request import ConsumerGroupDescribeRequest
from pykraft.messages.kafka.consumer_group_describe_response import (
    ConsumerGroupDescribeResponse,
)
from pykraft.messages.kafka.describe_groups_request import DescribeGroupsRequest
from pykraft.messages.kafka.describe_groups_response import DescribeGroupsResponse
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.join_group_response import JoinGroupResponse
from pykraft.messages.kafka.leave_group_request import LeaveGroupRequest, MemberIdentity
from pykraft.messages.kafka.leave_group_response import LeaveGroupResponse
from pykraft.messages.kafka.list_groups_response import ListGroupsResponse
from pykraft.messages.kafka.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
)
from pykraft.messages.kafka.offset_fetch_response import OffsetFetchResponse
from pykraft.messages.schema import schema_of
from pykraft.protocol.apis import API_SPECS, ApiKey
from pykraft.protocol.codec import decode_response, encode_response, request_type
from pykraft.protocol.errors import ErrorCode

_T = TypeVar("_T")


def of(cls: type[_T], message: object) -> _T:
    """``message``, checked to be the ``cls`` an API-keyed helper answered."""
    assert isinstance(message, cls)
    return message


def empty_request(api_key: int, version: int) -> Any:
    return request_type(api_key, version)()


PAIRS = [(key, v) for key in sorted(GROUP_APIS) for v in API_SPECS[key].versions]


@pytest.mark.parametrize(("api_key", "version"), PAIRS,
                         ids=[f"{ApiKey(k).name}-v{v}" for k, v in PAIRS])
def test_every_version_gets_an_encodable_error_answer(api_key: int, version: int) -> None:
    latest = to_latest(api_key, version, empty_request(api_key, version))
    answer = to_version(api_key, version, error_response(
        api_key, latest, ErrorCode.COORDINATOR_NOT_AVAILABLE), latest)
    body = decode_response(api_key, version, encode_response(1, api_key, version, answer)).body
    if has_top_level_code(api_key, version, body):
        assert body.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    else:
        assert {part.error_code for value in vars_of(body) if isinstance(value, tuple)
                for part in value} <= {ErrorCode.COORDINATOR_NOT_AVAILABLE}


def has_top_level_code(api_key: int, version: int, body: Any) -> bool:
    """Whether ``body`` carries a top-level error code at ``version`` (a generated class
    has the fields of every version)."""
    return any(spec.attr == "error_code" and version in spec.versions
               for spec in schema_of(type(body)).fields)


def vars_of(body: Any) -> list[Any]:
    return [getattr(body, f.name) for f in dataclasses.fields(body)]


def test_offset_fetch_v5_is_one_group_and_its_answer_comes_back_single() -> None:
    request = OffsetFetchRequest(group_id="g", topics=None)
    latest = to_latest(ApiKey.OFFSET_FETCH, 5, request)
    assert [g.group_id for g in latest.groups] == ["g"] and latest.groups[0].topics is None
    answer = to_version(ApiKey.OFFSET_FETCH, 5, of(OffsetFetchResponse, error_response(
        ApiKey.OFFSET_FETCH, latest, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)), latest)
    assert answer.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and answer.topics == ()


def test_offset_fetch_v1_has_the_group_error_on_every_asked_partition() -> None:
    request = OffsetFetchRequest(group_id="g", topics=(
        OffsetFetchRequestTopic(name="t", partition_indexes=(0, 2)),))
    latest = to_latest(ApiKey.OFFSET_FETCH, 1, request)
    answer = to_version(ApiKey.OFFSET_FETCH, 1, of(OffsetFetchResponse, error_response(
        ApiKey.OFFSET_FETCH, latest, ErrorCode.NOT_COORDINATOR)), latest)
    assert [(p.partition_index, p.committed_offset, p.error_code)
            for p in answer.topics[0].partitions] == [
        (0, -1, ErrorCode.NOT_COORDINATOR), (2, -1, ErrorCode.NOT_COORDINATOR)]


def test_leave_group_v1_takes_the_member_error_when_the_top_level_is_none() -> None:
    latest = to_latest(ApiKey.LEAVE_GROUP, 1, LeaveGroupRequest(group_id="g", member_id="m-1"))
    assert [m.member_id for m in latest.members] == ["m-1"]
    refused = of(LeaveGroupResponse, error_response(ApiKey.LEAVE_GROUP, latest,
                                                    ErrorCode.UNKNOWN_MEMBER_ID))
    per_member = dataclasses.replace(refused, error_code=ErrorCode.NONE)
    answer = to_version(ApiKey.LEAVE_GROUP, 1, per_member, latest)
    assert (answer.error_code, answer.members) == (ErrorCode.UNKNOWN_MEMBER_ID, ())


@pytest.mark.parametrize(("version", "written"), [(6, ""), (7, None)])
def test_join_group_has_no_null_protocol_name_before_v7(version: int,
                                                        written: str | None) -> None:
    """Kafka's JoinGroupResponse writes "" for a null protocol name before v7."""
    answer = to_version(ApiKey.JOIN_GROUP, version, JoinGroupResponse(
        error_code=ErrorCode.UNKNOWN_MEMBER_ID, protocol_name=None), None)
    body = decode_response(ApiKey.JOIN_GROUP, version,
                           encode_response(1, ApiKey.JOIN_GROUP, version, answer)).body
    assert body.protocol_name == written


def test_find_coordinator_v2_key_round_trip() -> None:
    latest = to_latest(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key="g"))
    assert latest.coordinator_keys == ("g",)
    answer = to_version(ApiKey.FIND_COORDINATOR, 2, error_response(
        ApiKey.FIND_COORDINATOR, latest, ErrorCode.COORDINATOR_NOT_AVAILABLE, "none"), latest)
    assert (answer.error_code, answer.error_message, answer.node_id) == (
        ErrorCode.COORDINATOR_NOT_AVAILABLE, "none", -1)


def test_batched_requests_split_by_partition_and_merge_in_request_order() -> None:
    request = DescribeGroupsRequest(groups=tuple("abca"))
    partition = {"a": 1, "b": 2, "c": 1}
    parts = split(ApiKey.DESCRIBE_GROUPS, request, partition.__getitem__)
    assert {p: of(DescribeGroupsRequest, r).groups for p, r in parts.items()} == {
        1: ("a", "c", "a"), 2: ("b",)}
    codes = {1: ErrorCode.NONE, 2: ErrorCode.NOT_COORDINATOR}
    answers = {p: error_response(ApiKey.DESCRIBE_GROUPS, r, codes[p]) for p, r in parts.items()}
    merged = of(DescribeGroupsResponse, merge(ApiKey.DESCRIBE_GROUPS, request, answers))
    assert [(g.group_id, g.error_code) for g in merged.groups] == [
        ("a", ErrorCode.NONE), ("b", ErrorCode.NOT_COORDINATOR), ("c", ErrorCode.NONE),
        ("a", ErrorCode.NONE)]


def test_pieces_name_each_group_once_and_at_most_so_many_a_piece() -> None:
    """A group named again is handed once (merge answers every naming of it), a partition's
    groups a few at a time; a request naming a group a million times makes one entry."""
    request = DescribeGroupsRequest(groups=tuple("abcadeaf"))
    partition = {"a": 1, "b": 2, "c": 1, "d": 1, "e": 2, "f": 1}
    found = pieces(ApiKey.DESCRIBE_GROUPS, request, partition.__getitem__, 2)
    assert [(p, of(DescribeGroupsRequest, r).groups) for p, r in found] == [
        (1, ("a", "c")), (1, ("d", "f")), (2, ("b", "e"))]
    answers = {i: error_response(ApiKey.DESCRIBE_GROUPS, r, ErrorCode.NONE)
               for i, (_, r) in enumerate(found)}
    merged = of(DescribeGroupsResponse, merge(ApiKey.DESCRIBE_GROUPS, request, answers))
    assert [g.group_id for g in merged.groups] == list("abcadeaf")
    assert merged.groups[0] is merged.groups[3] is merged.groups[6]
    many = DescribeGroupsRequest(groups=("g",) * 1_000_000)
    ((_, one),) = pieces(ApiKey.DESCRIBE_GROUPS, many, lambda group: 0, 500)
    assert of(DescribeGroupsRequest, one).groups == ("g",)
    refused = of(DescribeGroupsResponse, error_response(ApiKey.DESCRIBE_GROUPS, many,
                                                        ErrorCode.NOT_COORDINATOR))
    assert len(refused.groups) == 1_000_000 and len({id(g) for g in refused.groups}) == 1


@pytest.mark.parametrize("named", [("", "a", "", "b"), ("",) * 3])
def test_consumer_group_describe_refuses_the_empty_id_before_any_shard(
        named: tuple[str, ...]) -> None:
    """As Kafka's coordinator service: INVALID_GROUP_ID without a message, whatever the
    shards' state (no shard sees the empty id)."""
    request = ConsumerGroupDescribeRequest(group_ids=named)
    found = pieces(ApiKey.CONSUMER_GROUP_DESCRIBE, request, lambda group: 0, 500)
    assert [of(ConsumerGroupDescribeRequest, r).group_ids for _, r in found] == (
        [("a", "b")] if "a" in named else [])
    answers = {i: error_response(ApiKey.CONSUMER_GROUP_DESCRIBE, r, ErrorCode.NOT_COORDINATOR)
               for i, (_, r) in enumerate(found)}
    merged = of(ConsumerGroupDescribeResponse,
                merge(ApiKey.CONSUMER_GROUP_DESCRIBE, request, answers))
    assert [(g.group_id, g.error_code, g.error_message) for g in merged.groups] == [
        (group, ErrorCode.NOT_COORDINATOR if group else ErrorCode.INVALID_GROUP_ID, None)
        for group in named]


def test_a_leave_group_goes_in_pieces_of_members_and_comes_back_whole() -> None:
    members = tuple(MemberIdentity(member_id=f"m{i}") for i in range(5))
    request = LeaveGroupRequest(group_id="g", members=members)
    found = pieces(ApiKey.LEAVE_GROUP, request, lambda group: 3, 2)
    assert [(p, [m.member_id for m in of(LeaveGroupRequest, r).members])
            for p, r in found] == [
        (3, ["m0", "m1"]), (3, ["m2", "m3"]), (3, ["m4"])]
    codes = [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.NONE]
    answers = {i: error_response(ApiKey.LEAVE_GROUP, r, code)
               for i, ((_, r), code) in enumerate(zip(found, codes, strict=True))}
    merged = of(LeaveGroupResponse, merge(ApiKey.LEAVE_GROUP, request, answers))
    assert merged.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert [(m.member_id, m.error_code) for m in merged.members] == [
        ("m0", ErrorCode.NONE), ("m1", ErrorCode.NONE), ("m2", ErrorCode.UNKNOWN_MEMBER_ID),
        ("m3", ErrorCode.UNKNOWN_MEMBER_ID), ("m4", ErrorCode.NONE)]
    empty = dataclasses.replace(request, members=())
    assert [of(LeaveGroupRequest, r).members
            for _, r in pieces(ApiKey.LEAVE_GROUP, empty, lambda g: 3, 2)] == [()]


def test_list_groups_concatenates_and_keeps_the_first_error_but_not_coordinator() -> None:
    request = empty_request(ApiKey.LIST_GROUPS, 5)
    ok = error_response(ApiKey.LIST_GROUPS, request, ErrorCode.NONE)
    loading = error_response(ApiKey.LIST_GROUPS, request, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    moved = error_response(ApiKey.LIST_GROUPS, request, ErrorCode.NOT_COORDINATOR)
    merged = of(ListGroupsResponse, merge(ApiKey.LIST_GROUPS, request, {0: ok, 2: moved}))
    assert merged.error_code == ErrorCode.NONE
    merged = of(ListGroupsResponse, merge(ApiKey.LIST_GROUPS, request,
                                          {0: ok, 2: moved, 3: loading}))
    assert merged.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
