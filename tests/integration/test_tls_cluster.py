"""TLS on real processes: one controller whose listener is SSL with required client
certificates (the brokers reach it with their own certificates), and two brokers with an
SSL listener beside their PLAINTEXT one, replicating over SSL (inter.broker.listener.name).
Kafka's clients produce and consume over SSL, each listener's Metadata names its own
endpoints, the tools connect with --command-config, and a refused handshake (a client
trusting another CA, garbage bytes) closes only its connection and is logged by the
broker."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.config.server import ServerConfig
from pykraft.errors import PyKraftError
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.runtime.kafka_client import open_with_timeout
from pykraft.runtime.tls import client_context
from pykraft.tools.admin_client import AdminClient, ClusterMetadata, admin_settings
from pykraft.tools.local_cluster import (
    BROKER,
    CONTROLLER,
    HOST,
    LocalCluster,
    NodeFiles,
    free_ports,
)
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "runtime"))
from process_harness import wait_for
from tls_fixtures import pem_files, pki, trust_only

pytestmark = pytest.mark.timeout(180)
BROKER_ID, OTHER_BROKER = 1000, 1001
TOPIC = "secure"


@dataclass(frozen=True)
class Secure:
    cluster: LocalCluster
    plain_port: int
    ssl_port: int
    client_config: Path
    ca_file: Path
    base: Path

    @property
    def broker_log(self) -> Path:
        return self.cluster.nodes[BROKER_ID].log


def _write(node: NodeFiles, props: dict[str, str]) -> None:
    node.directory.mkdir(parents=True, exist_ok=True)
    node.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    base = tmp_path_factory.mktemp("tls-cluster")
    keys = pki()
    controller_port, plain_port, ssl_port, other_plain, other_ssl = free_ports(5)
    tls = {**pem_files(base, keys.server, keys.ca, "node"),
           "listener.name.controller.ssl.client.auth": "required"}
    common = {"controller.listener.names": "CONTROLLER",
              "controller.quorum.voters": f"1@{HOST}:{controller_port}",
              "pykraft.shutdown.timeout.ms": "3000", "offsets.topic.replication.factor": "1",
              **tls}
    controller = NodeFiles(1, controller_port, base / "node-1", CONTROLLER)
    brokers = [NodeFiles(BROKER_ID, plain_port, base / f"node-{BROKER_ID}", BROKER),
               NodeFiles(OTHER_BROKER, other_plain, base / f"node-{OTHER_BROKER}", BROKER)]
    _write(controller, {**common, "process.roles": "controller", "node.id": "1",
                        "listeners": f"CONTROLLER://{HOST}:{controller_port}",
                        "listener.security.protocol.map": "CONTROLLER:SSL",
                        "log.dirs": str(controller.data)})
    for broker, port in zip(brokers, (ssl_port, other_ssl), strict=True):
        _write(broker, {**common, "process.roles": "broker", "node.id": str(broker.node_id),
                        "listeners": f"PLAINTEXT://{broker.address},SSL://{HOST}:{port}",
                        "listener.security.protocol.map":
                            "PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:SSL",
                        "inter.broker.listener.name": "SSL", "log.dirs": str(broker.data)})
    cluster_id = uuid_to_str(random_uuid())
    for node in (controller, *brokers):
        format_storage(FormatRequest(config=ServerConfig.load(node.config),
                                     cluster_id=cluster_id, mode=QuorumMode.STATIC))
    client_config = base / "client.properties"
    client_config.write_text("security.protocol=SSL\n" + "".join(
        f"{k}={v}\n" for k, v in trust_only(base, keys.ca, "client").items()))
    cluster = LocalCluster(base, cluster_id, [controller, *brokers])
    cluster.start_all()
    try:
        made = Secure(cluster, plain_port, ssl_port, client_config,
                      base / "client-truststore.pem", base)
        # registered over the SSL controller listener with the broker's certificate
        wait_for("both brokers serving on both listeners", lambda: True if (
            _brokers(made, made.ssl_port) == {BROKER_ID: (HOST, ssl_port),
                                              OTHER_BROKER: (HOST, other_ssl)}) else None)
        yield made
    finally:
        cluster.stop_all()


def _metadata(secure: Secure, port: int, topics: list[str]) -> ClusterMetadata | None:
    """Metadata through broker 1000's ``port`` (None while it does not answer)."""
    over_ssl = port == secure.ssl_port
    settings = admin_settings(f"{HOST}:{port}", secure.client_config if over_ssl else None)

    async def run() -> ClusterMetadata:
        async with AdminClient(settings) as admin:
            return await admin.metadata(topics)
    try:
        return asyncio.run(asyncio.wait_for(run(), 5))
    except (PyKraftError, OSError, TimeoutError):  # not up yet: the caller polls
        return None


def _brokers(secure: Secure, port: int) -> dict[int, tuple[str, int]]:
    """Metadata's brokers through ``port`` ({} while the broker does not answer)."""
    metadata = _metadata(secure, port, [])
    return {} if metadata is None else metadata.brokers


def _failed_authentications(secure: Secure) -> list[str]:
    return [line for line in secure.broker_log.read_text().splitlines()
            if "event=failed_authentication" in line]


def test_each_listener_answers_metadata_with_its_own_endpoints(secure: Secure) -> None:
    plain = _brokers(secure, secure.plain_port)
    assert plain[BROKER_ID] == (HOST, secure.plain_port)
    assert plain[OTHER_BROKER] == (HOST, secure.cluster.nodes[OTHER_BROKER].port)
    assert _brokers(secure, secure.ssl_port)[BROKER_ID] == (HOST, secure.ssl_port)


def test_followers_replicate_over_the_ssl_inter_broker_listener(secure: Secure) -> None:
    from kafka import KafkaProducer

    from pykraft.cli.main import app

    created = CliRunner().invoke(app, [
        "topics", "--bootstrap-server", f"{HOST}:{secure.plain_port}", "--create", "--topic",
        "replicated", "--partitions", "2", "--replication-factor", "2"])
    assert created.exit_code == 0, (created.stdout, created.stderr)

    wait_for("the topic's leaders", lambda: True if (
        (m := _metadata(secure, secure.plain_port, ["replicated"])) is not None
        and "replicated" in m.topics) else None)
    # acks=all completes once the follower fetched the batch: only over SSL here
    producer = KafkaProducer(bootstrap_servers=f"{HOST}:{secure.plain_port}", acks="all",
                             request_timeout_ms=20_000)
    try:
        for partition in (0, 1):  # one led by each broker, so each one follows over SSL
            producer.send("replicated", b"both", partition=partition).get(timeout=30)
    finally:
        producer.close(timeout=10)


def test_kafka_clients_produce_and_consume_over_ssl(secure: Secure) -> None:
    from confluent_kafka import Producer
    from kafka import KafkaConsumer, KafkaProducer

    from pykraft.cli.main import app

    bootstrap = f"{HOST}:{secure.ssl_port}"
    created = CliRunner().invoke(app, [
        "topics", "--bootstrap-server", bootstrap, "--command-config",
        str(secure.client_config), "--create", "--topic", TOPIC, "--partitions", "1",
        "--replication-factor", "1"])
    assert created.exit_code == 0, (created.stdout, created.stderr)
    producer = KafkaProducer(bootstrap_servers=bootstrap, security_protocol="SSL",
                             ssl_cafile=str(secure.ca_file))
    try:
        for i in range(5):
            producer.send(TOPIC, f"kafka-python-{i}".encode()).get(timeout=30)
    finally:
        producer.close(timeout=10)
    librdkafka = Producer({"bootstrap.servers": bootstrap, "security.protocol": "SSL",
                           "ssl.ca.location": str(secure.ca_file)})
    for i in range(5):
        librdkafka.produce(TOPIC, f"librdkafka-{i}".encode())
    assert librdkafka.flush(30) == 0
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, security_protocol="SSL",
                             ssl_cafile=str(secure.ca_file), auto_offset_reset="earliest",
                             consumer_timeout_ms=20_000)
    try:
        values = []
        for message in consumer:
            values.append(message.value.decode())
            if len(values) == 10:
                break
    finally:
        consumer.close()
    assert values == [f"kafka-python-{i}" for i in range(5)] + [
        f"librdkafka-{i}" for i in range(5)]


def test_a_client_trusting_another_ca_is_refused_and_logged(secure: Secure) -> None:
    keys = pki()
    wrong = client_context(trust_only(secure.base, keys.stranger_ca, "stranger"))
    before = len(_failed_authentications(secure))

    async def attempt() -> None:
        await open_with_timeout(HOST, secure.ssl_port, client_id="wrong-ca", timeout_s=10,
                                ours=listener_ranges(Listener.BROKER), tls=wrong)
    with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(attempt())
    lines = wait_for("the refusal in the broker's log", lambda: (
        _failed_authentications(secure)[before:] or None))
    assert "listener=SSL" in lines[0] and "peer=/127.0.0.1" in lines[0]
    assert "SSL handshake failed" in lines[0]


def test_garbage_on_the_ssl_port_closes_only_that_connection(secure: Secure) -> None:
    before = len(_failed_authentications(secure))
    with socket.create_connection((HOST, secure.ssl_port), timeout=10) as sock:
        sock.sendall(b"\x00\x00\x00\x0chello broker")
        answer = b""
        while chunk := sock.recv(4096):  # an alert at most, then the broker hangs up
            answer += chunk
    assert len(answer) < 64
    lines = wait_for("the garbage in the broker's log", lambda: (
        _failed_authentications(secure)[before:] or None))
    assert "SSL handshake failed" in lines[0]
    assert _brokers(secure, secure.ssl_port)[BROKER_ID] == (HOST, secure.ssl_port)
