"""``delete.topic.enable=false`` on Kafka 4.4 and on pykraft, side by side: DeleteTopics at
every version Kafka serves gets the same answer from both (TOPIC_DELETION_DISABLED from v3,
INVALID_REQUEST before, on every topic, without a message), and the topics stay."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from oracle_cluster import KAFKA, PYKRAFT, ClusterSpec, KafkaInstall, OracleCluster, call, running
from oracle_kafka import skip_module_off_ci

from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode

skip_module_off_ci()

TOPIC = "kept"
DELETE_VERSIONS = range(1, 7)  # Kafka 4 removed v0
#: DeleteTopics v6 names topics by name or by id
BY_NAME_AND_ID = 6


@pytest.fixture(scope="module")
def clusters(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory,
             ) -> Iterator[dict[str, OracleCluster]]:
    """Each kind's cluster of one controller and one broker, deletion disabled, with TOPIC."""
    specs = [ClusterSpec(controllers=(kind,), brokers=(kind,),
                         properties={"delete.topic.enable": "false"})
             for kind in (KAFKA, PYKRAFT)]
    with running(tmp_path_factory.mktemp("deletion"), kafka, *specs) as (theirs, ours):
        for cluster in (theirs, ours):
            created = call(cluster.bootstrap_servers, ApiKey.CREATE_TOPICS, 7,
                           CreateTopicsRequest(topics=(CreatableTopic(
                               name=TOPIC, num_partitions=1, replication_factor=1),),
                               timeout_ms=30_000))
            assert [t.error_code for t in created.topics] == [ErrorCode.NONE]
        yield {KAFKA: theirs, PYKRAFT: ours}


def topic_id(cluster: OracleCluster) -> uuid.UUID:
    answer = call(cluster.bootstrap_servers, ApiKey.METADATA, 12, MetadataRequest(
        topics=(MetadataRequestTopic(name=TOPIC),)))
    [topic] = answer.topics
    assert topic.error_code == ErrorCode.NONE
    return topic.topic_id  # type: ignore[no-any-return]


def delete(cluster: OracleCluster, version: int, *, by_id: bool = False,
           ) -> list[tuple[object, ...]]:
    """DeleteTopics of TOPIC and of a topic that does not exist, as ``version`` names them."""
    if version < BY_NAME_AND_ID:
        body = DeleteTopicsRequest(topic_names=(TOPIC, "absent"), timeout_ms=30_000)
    else:
        first = (DeleteTopicState(topic_id=topic_id(cluster)) if by_id
                 else DeleteTopicState(name=TOPIC))
        body = DeleteTopicsRequest(topics=(first, DeleteTopicState(name="absent")),
                                   timeout_ms=30_000)
    answer = call(cluster.bootstrap_servers, ApiKey.DELETE_TOPICS, version, body)
    return [(t.name, t.topic_id if not by_id else "<id>", t.error_code, t.error_message)
            for t in answer.responses]


@pytest.mark.parametrize("version", DELETE_VERSIONS)
def test_delete_topics_refused_as_kafka(clusters: dict[str, OracleCluster],
                                        version: int) -> None:
    answers = {kind: delete(cluster, version) for kind, cluster in clusters.items()}
    code = ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST
    assert answers[KAFKA] == [(TOPIC, uuid.UUID(int=0), code, None),
                              ("absent", uuid.UUID(int=0), code, None)]
    assert answers[PYKRAFT] == answers[KAFKA]
    assert all(topic_id(cluster) for cluster in clusters.values())  # still there


def test_delete_by_id_refused_as_kafka(clusters: dict[str, OracleCluster]) -> None:
    answers = {kind: delete(cluster, BY_NAME_AND_ID, by_id=True)
               for kind, cluster in clusters.items()}
    assert answers[PYKRAFT] == answers[KAFKA]
    assert [row[2] for row in answers[KAFKA]] == [ErrorCode.TOPIC_DELETION_DISABLED] * 2
