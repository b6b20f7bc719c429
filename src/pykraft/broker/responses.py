"""Client answers a broker computes from its metadata image: Metadata and DescribeCluster.

Bodies are the generated classes of every version; fields a version lacks, such as topic ids
before Metadata v10, are ignorable and drop out when written at that version.
Kafka's KRaft rules: only unfenced brokers are listed (plus the answering broker itself, so
a client bootstrapping through a broker still being unfenced sees where it is), and the
"controller id" is a live broker: clients send admin requests there and brokers forward
them, because controllers are not reachable by clients under KIP-590.
"""

from __future__ import annotations

from pykraft.controller.topic_names import topic_name_problem
from pykraft.ids import INTERNAL_TOPICS, ZERO_UUID
from pykraft.image.cluster_image import BrokerRegistration
from pykraft.image.image import MetadataImage
from pykraft.image.topics import NO_LEADER, TopicImage
from pykraft.messages.kafka import describe_cluster_response as dc
from pykraft.messages.kafka import metadata_response as md
from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.protocol.describe_cluster import BROKER_ENDPOINTS, endpoint_type_refusal
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.error_answer import topic_error


def _endpoint(broker: BrokerRegistration, listener: str) -> tuple[str, int] | None:
    found = next((e for e in broker.listeners if e.name == listener), None)
    return None if found is None else (found.host, found.port)


def _visible_brokers(image: MetadataImage, self_id: int, listener: str, *,
                     include_fenced: bool = False) -> list[tuple[BrokerRegistration, str, int]]:
    visible = []
    for broker_id in sorted(image.cluster.brokers):
        broker = image.cluster.brokers[broker_id]
        shown = include_fenced or not broker.fenced or broker_id == self_id
        endpoint = _endpoint(broker, listener)
        if shown and endpoint is not None:
            visible.append((broker, *endpoint))
    return visible


def _partitions(image: MetadataImage,
                topic: TopicImage) -> tuple[md.MetadataResponsePartition, ...]:
    alive = {b for b, reg in image.cluster.brokers.items() if not reg.fenced}
    rows = []
    for index in sorted(topic.partitions):
        part = topic.partitions[index]
        error = ErrorCode.NONE if part.leader != NO_LEADER else ErrorCode.LEADER_NOT_AVAILABLE
        rows.append(md.MetadataResponsePartition(
            error_code=error, partition_index=index, leader_id=part.leader,
            leader_epoch=part.leader_epoch, replica_nodes=tuple(part.replicas),
            isr_nodes=tuple(part.isr),
            offline_replicas=tuple(r for r in part.replicas if r not in alive)))
    return tuple(rows)


def _topic(image: MetadataImage, topic: TopicImage) -> md.MetadataResponseTopic:
    return md.MetadataResponseTopic(
        error_code=ErrorCode.NONE, name=topic.name, topic_id=topic.topic_id,
        is_internal=topic.name in INTERNAL_TOPICS, partitions=_partitions(image, topic))


def missing_topic_error(name: str | None) -> ErrorCode:
    """A named topic the image lacks: INVALID_TOPIC_EXCEPTION when ``Topic.validate``
    refuses its name (fatal for clients), else UNKNOWN_TOPIC_OR_PARTITION (retried)."""
    if name is not None and topic_name_problem(name) is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def metadata_response(image: MetadataImage, request: MetadataRequest, *, version: int,
                      self_id: int, cluster_id: str, listener: str) -> md.MetadataResponse:
    """Metadata for ``request`` at ``version``; None topics (or v0's empty list) = all, a
    topic named twice answered once. Topics are named by id from v10 on, by name only
    before."""
    requested = request.topics
    topics_image = image.topics
    if requested is None or (version == 0 and not requested):
        topics = tuple(_topic(image, topics_image.by_name[name])
                       for name in sorted(topics_image.by_name))
    else:
        answered = []
        seen: set[tuple[object, object]] = set()
        for wanted in requested:
            if (wanted.topic_id, wanted.name) in seen:
                continue  # Kafka answers the set of topics named: each once
            seen.add((wanted.topic_id, wanted.name))
            by_id = (topics_image.by_id.get(wanted.topic_id)
                     if wanted.topic_id not in (None, ZERO_UUID) else None)
            found = by_id or (topics_image.by_name.get(wanted.name)
                              if wanted.name is not None else None)
            answered.append(_topic(image, found) if found is not None
                            else topic_error(wanted.name, wanted.topic_id,
                                              missing_topic_error(wanted.name)))
        topics = tuple(answered)
    brokers = tuple(
        md.MetadataResponseBroker(node_id=b.broker_id, host=host, port=port, rack=b.rack)
        for b, host, port in _visible_brokers(image, self_id, listener))
    return md.MetadataResponse(brokers=brokers, cluster_id=cluster_id, controller_id=self_id,
                               topics=topics, error_code=ErrorCode.NONE)


def describe_cluster_response(image: MetadataImage, request: DescribeClusterRequest, *,
                              version: int, self_id: int, cluster_id: str, listener: str,
                              operations: int) -> dc.DescribeClusterResponse:
    """DescribeCluster on a broker: brokers only (endpoint_type 1), fenced ones on demand;
    ``operations``: the cluster operations the caller may perform, or Kafka's "omitted"."""
    refusal = endpoint_type_refusal(request, version, BROKER_ENDPOINTS)
    if refusal is not None:
        return refusal
    brokers = tuple(
        dc.DescribeClusterBroker(broker_id=b.broker_id, host=host, port=port, rack=b.rack,
                                 is_fenced=b.fenced)
        for b, host, port in _visible_brokers(image, self_id, listener,
                                              include_fenced=request.include_fenced_brokers))
    return dc.DescribeClusterResponse(
        error_code=ErrorCode.NONE, endpoint_type=BROKER_ENDPOINTS, cluster_id=cluster_id,
        controller_id=self_id, brokers=brokers, cluster_authorized_operations=operations)
