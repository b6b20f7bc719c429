"""SASL end to end: 1 controller + 1 broker whose controller listener and second broker
listener are SASL_PLAINTEXT. The broker registers and heartbeats through PLAIN (re-authenticating
every few seconds: ``connections.max.reauth.ms`` on the controller listener); real clients
produce and consume with PLAIN and SCRAM-SHA-512; wrong credentials and requests before
authentication close only their own connection."""

from __future__ import annotations

import socket
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from process_harness import wait_for
from security_harness import request_frame as frame
from typer.testing import CliRunner

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.security.jaas import PLAIN_LOGIN_MODULE
from pykraft.security.plain import plain_client_token
from pykraft.tools.local_cluster import HOST, LocalCluster

sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import PROPERTIES, add_broker_listener, wait_for_brokers

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "sasl-topic"
COUNT = 20
DEADLINE_S = 60.0
REAUTH_MS = 2000
USERS = 'user_admin="admin-secret" user_alice="alice-secret"'
SASL_PROPERTIES = {
    **PROPERTIES,
    "listener.security.protocol.map":
        "CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config":
        f'{PLAIN_LOGIN_MODULE} required username="admin" password="admin-secret" {USERS};',
    "listener.name.controller.plain.connections.max.reauth.ms": str(REAUTH_MS),
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        f"{PLAIN_LOGIN_MODULE} required {USERS};",
}


class Sasl:
    """The running cluster and the broker's SASL endpoint."""

    def __init__(self, cluster: LocalCluster, port: int) -> None:
        self.cluster = cluster
        self.address = (HOST, port)
        self.bootstrap = f"{HOST}:{port}"
        self.started = time.monotonic()

    def log(self, node_id: int) -> str:
        return self.cluster.nodes[node_id].log.read_text(errors="replace")


@pytest.fixture(scope="module")
def sasl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sasl]:
    cluster = LocalCluster.create(tmp_path_factory.mktemp("sasl") / "cluster", 1,
                                  SASL_PROPERTIES, brokers=1)
    (broker_id,) = cluster.brokers
    port = add_broker_listener(cluster, broker_id, "SASL_PLAINTEXT")
    cluster.start_all()
    try:
        wait_for_brokers(cluster, 1)
        yield Sasl(cluster, port)
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


def kafka_python_config(user: str, password: str, mechanism: str = "PLAIN") -> dict[str, Any]:
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
            "sasl_plain_username": user, "sasl_plain_password": password}


def produce_and_consume_kafka_python(sasl: Sasl, topic: str, **auth: Any) -> list[bytes]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=sasl.bootstrap, linger_ms=5, **auth)
    try:
        for i in range(COUNT):
            producer.send(topic, value=f"m-{i}".encode())
        producer.flush(30)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(bootstrap_servers=sasl.bootstrap, group_id=None,
                             enable_auto_commit=False, fetch_max_wait_ms=100, **auth)
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < COUNT and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                got += [r.value for r in records]
    finally:
        consumer.close()
    return got


def create_topic(sasl: Sasl, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=sasl.bootstrap,
                             **kafka_python_config("admin", "admin-secret"))
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        admin.close()


def test_kafka_python_with_plain(sasl: Sasl) -> None:
    create_topic(sasl, TOPIC)
    got = produce_and_consume_kafka_python(
        sasl, TOPIC, **kafka_python_config("alice", "alice-secret"))
    assert got == [f"m-{i}".encode() for i in range(COUNT)]


def test_confluent_kafka_with_plain(sasl: Sasl) -> None:
    import confluent_kafka

    topic = "sasl-confluent"
    create_topic(sasl, topic)
    auth = {"bootstrap.servers": sasl.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": "alice",
            "sasl.password": "alice-secret"}
    producer = confluent_kafka.Producer({**auth, "linger.ms": 5})
    for i in range(COUNT):
        producer.produce(topic, value=f"c-{i}".encode())
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer({**auth, "group.id": "unused-with-assign",
                                         "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < COUNT and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            value = message.value()
            assert value is not None
            got.append(value)
    finally:
        consumer.close()
    assert got == [f"c-{i}".encode() for i in range(COUNT)]


def read_frame(sock: socket.socket) -> bytes | None:
    """The next response frame; None when the server closed the connection."""
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data[4:]


def failed_authentications(sasl: Sasl, broker_id: int, reason: str) -> int:
    return sum(1 for line in sasl.log(broker_id).splitlines()
               if "event=failed_authentication" in line and reason in line)


def test_wrong_password_is_refused_logged_and_others_still_served(sasl: Sasl) -> None:
    (broker_id,) = sasl.cluster.brokers
    reason = "Authentication failed: Invalid username or password"
    before = failed_authentications(sasl, broker_id, reason)
    with socket.create_connection(sasl.address, timeout=10) as sock:
        sock.sendall(frame(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN"))
        handshake = read_frame(sock)
        assert handshake is not None
        assert decode_response(ApiKey.SASL_HANDSHAKE, 1, handshake).body.error_code == (
            ErrorCode.NONE)
        sock.sendall(frame(ApiKey.SASL_AUTHENTICATE, 2,
                           auth_bytes=plain_client_token("alice", "wrong")))
        answer = read_frame(sock)
        assert answer is not None
        body = decode_response(ApiKey.SASL_AUTHENTICATE, 2, answer).body
        assert (body.error_code, body.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED, reason)
        assert read_frame(sock) is None  # closed after the answer
    wait_for("the refusal in the broker's log",
             lambda: failed_authentications(sasl, broker_id, reason) > before or None)
    assert "peer=/127.0.0.1" in next(line for line in sasl.log(broker_id).splitlines()
                                      if reason in line)
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    with pytest.raises(KafkaError):
        KafkaAdminClient(bootstrap_servers=sasl.bootstrap, request_timeout_ms=5000,
                         **kafka_python_config("alice", "wrong"))
    admin = KafkaAdminClient(bootstrap_servers=sasl.bootstrap,
                             **kafka_python_config("alice", "alice-secret"))
    try:
        assert TOPIC in admin.list_topics()
    finally:
        admin.close()


def test_the_topics_tool_authenticates_with_its_command_config(sasl: Sasl, tmp_path: Path
                                                              ) -> None:
    from pykraft.cli.main import app

    def topics(password: str) -> Any:
        config = tmp_path / f"{password}.properties"
        config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                          f"sasl.jaas.config={PLAIN_LOGIN_MODULE} required username=alice "
                          f'password="{password}";\n')
        return CliRunner().invoke(app, ["topics", "--bootstrap-server", sasl.bootstrap,
                                        "--command-config", str(config), "--list"])

    create_topic(sasl, "sasl-tool")
    listed = topics("alice-secret")
    assert listed.exit_code == 0, (listed.stdout, listed.stderr)
    assert "sasl-tool" in listed.stdout.split()
    refused = topics("wrong")
    assert refused.exit_code != 0
    assert "Authentication failed: Invalid username or password" in (
        refused.stdout + refused.stderr)


def test_a_request_before_authentication_closes_the_connection(sasl: Sasl) -> None:
    (broker_id,) = sasl.cluster.brokers
    with socket.create_connection(sasl.address, timeout=10) as sock:
        sock.sendall(frame(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False))
        assert read_frame(sock) is None
    wait_for("the refusal in the broker's log", lambda: failed_authentications(
        sasl, broker_id, "Unexpected Kafka request of type METADATA during SASL handshake.")
        or None)


def _add_scram_user(sasl: Sasl, user: str, password: bytes) -> None:
    """``user``'s SCRAM-SHA-512 credential, through confluent-kafka's admin client, once the
    broker's image has it. Its own frame: the admin client must not outlive it (a traceback
    kept by a later expected error would hold it, reconnecting after the cluster stopped)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    (broker_id,) = sasl.cluster.brokers
    admin = AdminClient({"bootstrap.servers": sasl.cluster.nodes[broker_id].address})
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password)
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)

    def described() -> bool | None:
        try:  # RESOURCE_NOT_FOUND until the broker's image has it
            futures = admin.describe_user_scram_credentials([user])
            assert isinstance(futures, dict)
            futures[user].result(30)
        except KafkaException:
            return None
        return True
    wait_for(f"{user}'s credential in the broker's image", described)


def test_kafka_python_with_scram_sha_512(sasl: Sasl) -> None:
    (broker_id,) = sasl.cluster.brokers
    _add_scram_user(sasl, "carol", b"carol-secret")
    topic = "sasl-scram"
    create_topic(sasl, topic)
    got = produce_and_consume_kafka_python(
        sasl, topic, **kafka_python_config("carol", "carol-secret", "SCRAM-SHA-512"))
    assert got == [f"m-{i}".encode() for i in range(COUNT)]
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    reason = ("Authentication failed during authentication due to invalid credentials with "
              "SASL mechanism SCRAM-SHA-512")
    with pytest.raises(KafkaError):
        KafkaAdminClient(bootstrap_servers=sasl.bootstrap, request_timeout_ms=5000,
                         **kafka_python_config("carol", "wrong", "SCRAM-SHA-512"))
    assert failed_authentications(sasl, broker_id, reason) > 0


def test_the_broker_reauthenticates_with_the_controller(sasl: Sasl) -> None:
    """The controller channel outlives several session lifetimes without being dropped."""
    (controller_id,), (broker_id,) = sasl.cluster.controllers, sasl.cluster.brokers
    wait_for("two re-authentication lifetimes", lambda: time.monotonic() - sasl.started
             > 2 * REAUTH_MS / 1000 or None)
    wait_for_brokers(sasl.cluster, 1)
    assert "expired" not in sasl.log(controller_id)
    assert "event=failed_authentication" not in sasl.log(controller_id)
    assert "SASL authentication failed" not in sasl.log(broker_id)
