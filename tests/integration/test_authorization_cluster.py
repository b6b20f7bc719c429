"""Authorization on real processes: 1 controller + 1 broker running the StandardAuthorizer,
SASL_PLAINTEXT with PLAIN users admin (a super user: the broker's own identity towards the
controller too) and alice. Without ACLs alice is refused producing, consuming, joining a
group and creating ACLs, each with Kafka's error; once admin grants her the producer and
consumer roles with ``pykraft acls``, she produces and consumes through a group. carol is a
super user on the controller alone: the broker forwards her CreateTopics inside an
Envelope unchecked, as Kafka's does, and the controller, seeing carol, creates the topic."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from process_harness import wait_for
from typer.testing import CliRunner

from pykraft.config.authorizer import STANDARD_AUTHORIZER
from pykraft.security.jaas import PLAIN_LOGIN_MODULE
from pykraft.tools.local_cluster import HOST, LocalCluster

sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import PROPERTIES, add_broker_listener, wait_for_brokers

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "secured"
GROUP = "alice-group"
COUNT = 5
DEADLINE_S = 60.0
USERS = 'user_admin="admin-secret" user_alice="alice-secret" user_carol="carol-secret"'
SECURED_PROPERTIES = {
    **PROPERTIES,
    "authorizer.class.name": STANDARD_AUTHORIZER,
    "super.users": "User:admin",
    "listener.security.protocol.map":
        "CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config":
        f'{PLAIN_LOGIN_MODULE} required username="admin" password="admin-secret" {USERS};',
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        f"{PLAIN_LOGIN_MODULE} required {USERS};",
}


class Secured:
    def __init__(self, cluster: LocalCluster, port: int, admin_config: Path) -> None:
        self.cluster = cluster
        self.bootstrap = f"{HOST}:{port}"
        self.admin_config = admin_config

    def client(self, user: str, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "PLAIN", "sasl.username": user,
                "sasl.password": f"{user}-secret", **extra}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    base = tmp_path_factory.mktemp("authz")
    cluster = LocalCluster.create(base / "cluster", 1, SECURED_PROPERTIES, brokers=1)
    (broker_id,) = cluster.brokers
    port = add_broker_listener(cluster, broker_id, "SASL_PLAINTEXT")
    for controller_id in set(cluster.nodes) - set(cluster.brokers):
        config = cluster.nodes[controller_id].config
        config.write_text(config.read_text().replace(
            "super.users=User:admin", "super.users=User:admin;User:carol"))
    admin_config = base / "admin.properties"
    admin_config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        f'sasl.jaas.config={PLAIN_LOGIN_MODULE} required username="admin" '
        'password="admin-secret";\n')
    cluster.start_all()
    try:
        wait_for_brokers(cluster, 1)
        yield Secured(cluster, port, admin_config)
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


def produce_errors(secured: Secured, user: str) -> list[int | None]:
    """Each message's delivery error code (None: delivered)."""
    import confluent_kafka

    outcomes: list[int | None] = []

    def delivered(error: Any, _message: Any) -> None:
        outcomes.append(None if error is None else error.code())

    producer = confluent_kafka.Producer(secured.client(user, **{
        "message.timeout.ms": 15000, "linger.ms": 5}))
    for i in range(COUNT):
        producer.produce(TOPIC, value=f"{user}-{i}".encode(), on_delivery=delivered)
    assert producer.flush(30) == 0
    return outcomes


def consumer_error(secured: Secured, user: str) -> int | None:
    """The first error polling gives a consumer subscribed in :data:`GROUP`; None when it
    read a message first."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer(secured.client(user, **{
        "group.id": GROUP, "auto.offset.reset": "earliest", "enable.auto.commit": False}))
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            error = message.error()
            return None if error is None else int(error.code())
        raise AssertionError("the consumer saw neither a message nor an error")
    finally:
        consumer.close()


def create_acl_error(secured: Secured, user: str) -> int:
    import confluent_kafka
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(secured.client(user))
    binding = AclBinding(ResourceType.TOPIC, TOPIC, ResourcePatternType.LITERAL, "User:bob",
                         "*", AclOperation.READ, AclPermissionType.ALLOW)
    (future,) = admin.create_acls([binding]).values()
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        future.result(timeout=30)
    return int(refused.value.args[0].code())


def pykraft_acls(secured: Secured, *args: str) -> None:
    from pykraft.cli.main import app

    result = CliRunner().invoke(app, [
        "acls", "--bootstrap-server", secured.bootstrap, "--command-config",
        str(secured.admin_config), *args])
    assert result.exit_code == 0, (result.stdout, result.stderr)


def test_alice_is_refused_until_admin_grants_her_roles(secured: Secured) -> None:
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(secured.client("admin"))
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=30)
    assert produce_errors(secured, "admin") == [None] * COUNT  # a super user

    assert produce_errors(secured, "alice") == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * COUNT
    assert consumer_error(secured, "alice") == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert create_acl_error(secured, "alice") == KafkaError.CLUSTER_AUTHORIZATION_FAILED

    pykraft_acls(secured, "--add", "--allow-principal", "User:alice", "--operation", "Read",
                 "--group", GROUP)  # her group, not yet the topic
    wait_for("alice joins her group, then is refused the topic", lambda: True if (
        consumer_error(secured, "alice") == KafkaError.TOPIC_AUTHORIZATION_FAILED) else None,
             timeout_s=DEADLINE_S)

    pykraft_acls(secured, "--add", "--allow-principal", "User:alice", "--producer",
                 "--topic", TOPIC)
    pykraft_acls(secured, "--add", "--allow-principal", "User:alice", "--consumer",
                 "--topic", TOPIC, "--group", GROUP)
    wait_for("alice may produce", lambda: True if all(
        e is None for e in produce_errors(secured, "alice")) else None, timeout_s=DEADLINE_S)
    assert consumer_error(secured, "alice") is None  # joined and read
    assert create_acl_error(secured, "alice") == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_the_controller_authorizes_a_forwarded_request_as_its_client(secured: Secured) -> None:
    """The broker's rules would refuse carol (no ACL, not its super user); the controller's
    make her a super user, and it sees her, not the broker, inside the Envelope."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(secured.client("carol"))
    admin.create_topics([NewTopic("carols", 1, 1)])["carols"].result(timeout=30)
