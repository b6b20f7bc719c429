"""Authorization both listeners apply before a request is handled (ControllerApis' rules).

A request refused as a whole (a cluster operation) gets CLUSTER_AUTHORIZATION_FAILED in its
API's error response. The controller's admin requests with parts (CreateTopics,
DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs)
are split: the refused parts are answered with their error and only the rest is handled;
the two answers are merged into one. A broker applies the same split to the requests it
forwards, since the forwarded request carries the broker's principal, not the client's.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from pykraft.controller.responses import error_response
from pykraft.image.acls import AclOperation, ResourceType
from pykraft.image.topics import TopicImage
from pykraft.messages.kafka import alter_configs_request as alter
from pykraft.messages.kafka import incremental_alter_configs_request as incremental
from pykraft.messages.kafka.alter_configs_response import AlterConfigsResponse
from pykraft.messages.kafka.create_partitions_request import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from pykraft.messages.kafka.create_partitions_response import CreatePartitionsResponse
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from pykraft.messages.kafka.delete_topics_response import DeleteTopicsResponse
from pykraft.messages.kafka.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from pykraft.messages.kafka.describe_configs_response import DescribeConfigsResponse
from pykraft.messages.kafka.incremental_alter_configs_response import (
    IncrementalAlterConfigsResponse,
)
from pykraft.messages.replace import replaced
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.error_answer import error_answer
from pykraft.security.api_rules import Access, ApiRule, Scope, config_resource

#: API -> (the request's list of parts, the response's list of answers).
PARTS: dict[int, tuple[str, str]] = {
    ApiKey.CREATE_TOPICS: ("topics", "topics"),
    ApiKey.DELETE_TOPICS: ("topics", "responses"),
    ApiKey.CREATE_PARTITIONS: ("topics", "results"),
    ApiKey.DESCRIBE_CONFIGS: ("resources", "results"),
    ApiKey.ALTER_CONFIGS: ("resources", "responses"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ("resources", "responses"),
}
_TOPIC_REFUSED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
#: A part of a request of :data:`PARTS`.
Part = (CreatableTopic | DeleteTopicState | CreatePartitionsTopic | DescribeConfigsResource
        | alter.AlterConfigsResource | incremental.AlterConfigsResource)
#: A request of :data:`PARTS`, and its answer.
PartsRequest = (CreateTopicsRequest | DeleteTopicsRequest | CreatePartitionsRequest
                | DescribeConfigsRequest | alter.AlterConfigsRequest
                | incremental.IncrementalAlterConfigsRequest)
PartsResponse = (CreateTopicsResponse | DeleteTopicsResponse | CreatePartitionsResponse
                 | DescribeConfigsResponse | AlterConfigsResponse
                 | IncrementalAlterConfigsResponse)
PARTS_REQUESTS = (CreateTopicsRequest, DeleteTopicsRequest, CreatePartitionsRequest,
                  DescribeConfigsRequest, alter.AlterConfigsRequest,
                  incremental.IncrementalAlterConfigsRequest)
PARTS_RESPONSES = (CreateTopicsResponse, DeleteTopicsResponse, CreatePartitionsResponse,
                   DescribeConfigsResponse, AlterConfigsResponse,
                   IncrementalAlterConfigsResponse)


def cluster_refusal(rules: Mapping[int, ApiRule], api_key: int, body: object,
                    access: Access) -> object | None:
    """The latest-version answer refusing a request whose rule is a cluster operation
    the session lacks; None when it may go on."""
    rule = rules[api_key]
    if rule.scope is not Scope.CLUSTER or rule.operation is None:
        return None
    if access.allows(rule.operation, ResourceType.CLUSTER):
        return None
    refusal: object = error_answer(api_key, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                   "Cluster authorization failed.")
    return refusal


@dataclass(frozen=True, slots=True)
class PartSplit:
    """A request with parts, split: ``allowed`` (None when no part is) and the answer to
    the refused parts (None when none is)."""

    allowed: PartsRequest | None
    refused: PartsResponse | None
    describable: frozenset[str] = frozenset()  # CreateTopics: whose configs it may see


def split_parts(api_key: int, request: PartsRequest, access: Access,
                topics_by_id: Mapping[uuid.UUID, TopicImage]) -> PartSplit:
    """``request`` (the controller's latest version of an API in :data:`PARTS`) split by
    what ``access`` allows of each part."""
    field = PARTS[api_key][0]
    refused: dict[ErrorCode, list[Part]] = {}
    allowed: list[Part] = []
    parts: tuple[Part, ...] = getattr(request, field)
    for part in parts:
        code = _refusal(part, access, topics_by_id)
        if code is None:
            allowed.append(part)
        else:
            refused.setdefault(code, []).append(part)
    answers = [_refused(replaced(request, **{field: tuple(these)}), code)
               for code, these in refused.items()]
    describable: frozenset[str] = frozenset()
    if api_key == ApiKey.CREATE_TOPICS:
        describable = access.allowed(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, (
            t.name for t in allowed if isinstance(t, CreatableTopic)))
    return PartSplit(
        allowed=replaced(request, **{field: tuple(allowed)}) if allowed else None,
        refused=_concat(api_key, answers) if answers else None, describable=describable)


def merge_parts(api_key: int, split: PartSplit, answer: object | None) -> PartsResponse:
    """One answer from the handled part's ``answer`` (the API's response) and the
    refused parts' answer."""
    assert answer is None or isinstance(answer, PARTS_RESPONSES)
    if isinstance(answer, CreateTopicsResponse) and split.allowed is not None:
        answer = dataclasses.replace(answer, topics=tuple(
            t if str(t.name) in split.describable or t.error_code != ErrorCode.NONE
            else dataclasses.replace(t, topic_config_error_code=_TOPIC_REFUSED, configs=())
            for t in answer.topics))
    found = [a for a in (answer, split.refused) if a is not None]
    return _concat(api_key, found)


def _refused(request: PartsRequest, code: ErrorCode) -> PartsResponse:
    """``request``'s answer with ``code`` on every part."""
    answer = error_response(request, code)
    assert isinstance(answer, PARTS_RESPONSES)
    return answer


def _concat(api_key: int, answers: list[PartsResponse]) -> PartsResponse:
    field = PARTS[api_key][1]
    return replaced(answers[0], **{field: tuple(
        entry for answer in answers for entry in getattr(answer, field))})


def _refusal(part: Part, access: Access,
             topics_by_id: Mapping[uuid.UUID, TopicImage]) -> ErrorCode | None:
    """The error refusing one part, None when it is allowed."""
    topic, op = ResourceType.TOPIC, AclOperation
    if isinstance(part, CreatableTopic):
        if access.allows(op.CREATE, ResourceType.CLUSTER):
            return None
        return None if access.allows(op.CREATE, topic, part.name) else _TOPIC_REFUSED
    if isinstance(part, DeleteTopicState):
        if access.allows(op.DELETE, ResourceType.CLUSTER):
            return None  # ControllerApis: DELETE on the cluster covers every topic
        if part.name is None:  # named by id: an unknown id is the controller's to answer
            found = topics_by_id.get(part.topic_id)
            if found is None:
                return None
            name = found.name
            if not access.allows(op.DESCRIBE, topic, name):
                return _TOPIC_REFUSED
        else:
            name = part.name
        return None if access.allows(op.DELETE, topic, name) else _TOPIC_REFUSED
    if isinstance(part, CreatePartitionsTopic):
        return None if access.allows(op.ALTER, topic, part.name) else _TOPIC_REFUSED
    acl_type, name, code = config_resource(part.resource_type, part.resource_name)
    operation = (op.DESCRIBE_CONFIGS if isinstance(part, DescribeConfigsResource)
                 else op.ALTER_CONFIGS)
    return None if access.allows(operation, acl_type, name) else code
