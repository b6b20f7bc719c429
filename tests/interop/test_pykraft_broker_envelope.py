"""A pykraft broker on a Kafka controller forwards a client's admin request inside an
Envelope (issue 26, item 2), and Kafka's controller authorizes the client, not the broker.

The proof needs no SASL: the Envelope carries the client's address. Kafka's controller
(StandardAuthorizer) lets only 127.0.0.2 create topic ``fwd``; the pykraft broker's own
connection comes from 127.0.0.1, so a request forwarded as the broker's would be refused.
A client connected from 127.0.0.2 creates the topic through the broker; one from 127.0.0.1
is refused by the controller. Kafka's controller logs no ERROR about the Envelopes.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Any

import oracle_cluster as oracle
import pytest
from kafka_brokers_harness import logged_errors, wait_until
from oracle_cluster import KafkaInstall, OracleCluster, call

from pykraft.config.authorizer import ALLOW_EVERYONE_IF_NO_ACL_FOUND, STANDARD_AUTHORIZER
from pykraft.image.acls import AclOperation, AclPermissionType, PatternType, ResourceType
from pykraft.messages.kafka.create_acls_request import AclCreation, CreateAclsRequest
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.describe_acls_request import DescribeAclsRequest
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader

pytestmark = pytest.mark.timeout(300)
TOPIC = "fwd"
ALLOWED_HOST = "127.0.0.2"
#: allow.everyone.if.no.acl.found: the cluster's ACLs (CLUSTER_ACTION for the broker and its
#: Envelopes, DESCRIBE to list ACLs) leave CREATE on the cluster to no one; topic ``fwd``'s
#: ACL names the one host that may create it.
SPEC = oracle.ClusterSpec(controllers=(oracle.KAFKA,), brokers=(oracle.PYKRAFT,),
                          release_version=oracle.MIXED_RELEASE_VERSION,
                          properties={"authorizer.class.name": STANDARD_AUTHORIZER,
                                      ALLOW_EVERYONE_IF_NO_ACL_FOUND: "true"})


def _acl(resource_type: ResourceType, name: str, operation: AclOperation,
         host: str) -> AclCreation:
    return AclCreation(resource_type=resource_type, resource_name=name,
                       resource_pattern_type=PatternType.LITERAL,
                       principal="User:ANONYMOUS", host=host, operation=operation,
                       permission_type=AclPermissionType.ALLOW)


@pytest.fixture(scope="module")
def cluster(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[OracleCluster]:
    with oracle.running(tmp_path_factory.mktemp("envelope"), kafka, SPEC) as (made,):
        controller = made.controllers[0].listener(oracle.CONTROLLER)
        created = call(controller, ApiKey.CREATE_ACLS, 3, CreateAclsRequest(creations=(
            _acl(ResourceType.TOPIC, TOPIC, AclOperation.CREATE, ALLOWED_HOST),
            _acl(ResourceType.CLUSTER, "kafka-cluster", AclOperation.CLUSTER_ACTION, "*"),
            _acl(ResourceType.CLUSTER, "kafka-cluster", AclOperation.DESCRIBE, "*"))))
        assert [r.error_code for r in created.results] == [ErrorCode.NONE] * 3
        every = DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None,
                                    pattern_type_filter=1, principal_filter=None,
                                    host_filter=None, operation=1, permission_type=1)
        wait_until("the controller's authorizer holds the ACLs", lambda: sum(
            len(r.acls) for r in call(controller, ApiKey.DESCRIBE_ACLS, 3, every).resources
        ) == len(created.results))
        yield made


def create_topic_from(source_host: str, address: str) -> ErrorCode:
    """CreateTopics v7 for :data:`TOPIC` from a connection bound to ``source_host``."""
    topic = CreatableTopic(name=TOPIC, num_partitions=1,
                           replication_factor=1, assignments=(), configs=())
    payload = encode_request(RequestHeader(ApiKey.CREATE_TOPICS, 7, 7, "envelope-test"),
                             CreateTopicsRequest(topics=(topic,), validate_only=False))
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=60,
                                  source_address=(source_host, 0)) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        with sock.makefile("rb") as stream:
            (size,) = struct.unpack(">i", stream.read(4))
            answer: Any = decode_response(ApiKey.CREATE_TOPICS, 7, stream.read(size)).body
    (result,) = answer.topics
    return ErrorCode(result.error_code)


def test_the_controller_judges_the_client_by_its_address(cluster: OracleCluster) -> None:
    broker = cluster.brokers[0].address
    assert create_topic_from("127.0.0.1", broker) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert create_topic_from(ALLOWED_HOST, broker) == ErrorCode.NONE
    assert logged_errors(cluster.controllers[0]) == []
