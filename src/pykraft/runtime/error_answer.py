"""The response a request gets when it cannot be served, for any API (Kafka's
``AbstractRequest.getErrorResponse``): a failed handler answers UNKNOWN_SERVER_ERROR, a
forward with no controller NOT_CONTROLLER, instead of a silently closed connection.

Requests with parts (topics, resources) get the error on every part, as the controller's
own refusals do; the others get it in their top-level error code.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from pykraft.controller.responses import error_response
from pykraft.ids import ZERO_UUID
from pykraft.messages.kafka import alter_replica_log_dirs_response as arld
from pykraft.messages.kafka import describe_producers_response as dp
from pykraft.messages.kafka import describe_topic_partitions_response as dtp
from pykraft.messages.kafka import metadata_response as md
from pykraft.messages.kafka import write_txn_markers_response as wtm
from pykraft.messages.kafka.alter_replica_log_dirs_request import AlterReplicaLogDirsRequest
from pykraft.messages.kafka.describe_producers_request import DescribeProducersRequest
from pykraft.messages.kafka.describe_topic_partitions_request import (
    DescribeTopicPartitionsRequest,
)
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.messages.kafka.write_txn_markers_request import WriteTxnMarkersRequest
from pykraft.protocol.apis import API_SPECS
from pykraft.protocol.codec import response_type
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.controller_service import CONTROLLER_REQUESTS


def error_answer(api_key: int, request: Any, code: ErrorCode,
                 message: str | None = None) -> Any:
    """The response of ``api_key`` refusing ``request`` (one class for every version)."""
    if api_key in CONTROLLER_REQUESTS:
        return error_response(request, code, message)
    if isinstance(request, MetadataRequest):
        return _metadata(request, code)
    if isinstance(request, WriteTxnMarkersRequest):
        return _markers(request, code)
    if isinstance(request, DescribeProducersRequest):
        return _producers(request, code, message)
    if isinstance(request, DescribeTopicPartitionsRequest):
        return topic_partitions_error(request, code)
    if isinstance(request, AlterReplicaLogDirsRequest):
        return _alter_log_dirs(request, code)
    body = response_type(api_key, API_SPECS[api_key].max_version)()
    fields = {"error_code": code, "error_message": message}
    return dataclasses.replace(body, **{k: v for k, v in fields.items() if hasattr(body, k)})


def _alter_log_dirs(request: AlterReplicaLogDirsRequest,
                    code: int) -> arld.AlterReplicaLogDirsResponse:
    """Every partition as named gets the error, each directory's topics apart (Kafka's
    ``AlterReplicaLogDirsRequest.getErrorResponse``)."""
    return arld.AlterReplicaLogDirsResponse(results=tuple(
        arld.AlterReplicaLogDirTopicResult(topic_name=topic.name, partitions=tuple(
            arld.AlterReplicaLogDirPartitionResult(partition_index=index, error_code=code)
            for index in topic.partitions))
        for directory in request.dirs for topic in directory.topics))


def _metadata(request: MetadataRequest, code: int) -> md.MetadataResponse:
    """Every named topic with the error and no partitions; "all topics" gets none."""
    topics = tuple(topic_error(t.name, t.topic_id, code) for t in request.topics or ())
    return md.MetadataResponse(topics=topics, error_code=code)


def _markers(request: WriteTxnMarkersRequest, code: int) -> wtm.WriteTxnMarkersResponse:
    """Every partition of every marker gets the error (Kafka's ``getErrorResponse``)."""
    return wtm.WriteTxnMarkersResponse(markers=tuple(
        wtm.WritableTxnMarkerResult(producer_id=marker.producer_id, topics=tuple(
            wtm.WritableTxnMarkerTopicResult(name=topic.name, partitions=tuple(
                wtm.WritableTxnMarkerPartitionResult(partition_index=index, error_code=code)
                for index in topic.partition_indexes))
            for topic in marker.topics))
        for marker in request.markers))


def _producers(request: DescribeProducersRequest, code: int,
               message: str | None) -> dp.DescribeProducersResponse:
    return dp.DescribeProducersResponse(topics=tuple(
        dp.TopicResponse(name=topic.name, partitions=tuple(
            dp.PartitionResponse(partition_index=index, error_code=code,
                                 error_message=message)
            for index in topic.partition_indexes))
        for topic in request.topics))


def topic_partitions_error(request: DescribeTopicPartitionsRequest,
                           code: int) -> dtp.DescribeTopicPartitionsResponse:
    """Every topic named, in the request's order (a name given twice answered twice), with
    the error and no partitions; "all topics" (none named) gets none (Kafka's
    ``DescribeTopicPartitionsRequest.getErrorResponse``)."""
    return dtp.DescribeTopicPartitionsResponse(topics=tuple(
        dtp.DescribeTopicPartitionsResponseTopic(error_code=code, name=topic.name,
                                                 is_internal=False, partitions=())
        for topic in request.topics))


def topic_error(name: str | None, topic_id: uuid.UUID | None,
                code: int) -> md.MetadataResponseTopic:
    """A Metadata topic answered with an error only (unknown, or the request failed)."""
    return md.MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id or ZERO_UUID)
