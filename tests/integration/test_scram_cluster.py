"""SCRAM logins on real processes: a broker with a SASL_PLAINTEXT listener enabling
SCRAM-SHA-256 and SCRAM-SHA-512, formatted with ``--add-scram`` credentials. Kafka's clients
log in with the bootstrapped credential, a wrong password or unknown user is refused with
Kafka's message and logged by the broker with the peer's address, and a credential created
afterwards through AlterUserScramCredentials logs in at once (the broker reads its current
image)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pykraft.config.server import ServerConfig
from pykraft.ids import random_uuid, uuid_to_str
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
from process_harness import wait_for

pytestmark = pytest.mark.timeout(180)
BROKER_ID = 1000
TIMEOUT_S = 20
GENERIC = ("Authentication failed during authentication due to invalid credentials with "
           "SASL mechanism SCRAM-SHA-512")


@dataclass(frozen=True)
class ScramCluster:
    cluster: LocalCluster
    sasl_address: str

    @property
    def broker_log(self) -> Path:
        return self.cluster.nodes[BROKER_ID].log


def _write(node: NodeFiles, props: dict[str, str]) -> None:
    node.directory.mkdir(parents=True, exist_ok=True)
    node.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


@pytest.fixture(scope="module")
def scram(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScramCluster]:
    base = tmp_path_factory.mktemp("scram-cluster")
    controller_port, plain_port, sasl_port = free_ports(3)
    common = {"controller.listener.names": "CONTROLLER",
              "controller.quorum.voters": f"1@{HOST}:{controller_port}",
              "pykraft.shutdown.timeout.ms": "3000", "offsets.topic.replication.factor": "1"}
    controller = NodeFiles(1, controller_port, base / "node-1", CONTROLLER)
    broker = NodeFiles(BROKER_ID, plain_port, base / f"node-{BROKER_ID}", BROKER)
    _write(controller, {**common, "process.roles": "controller", "node.id": "1",
                        "listeners": f"CONTROLLER://{HOST}:{controller_port}",
                        "log.dirs": str(controller.data)})
    _write(broker, {**common, "process.roles": "broker", "node.id": str(BROKER_ID),
                    "listeners": f"PLAINTEXT://{broker.address},SASL://{HOST}:{sasl_port}",
                    "listener.security.protocol.map":
                        "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "listener.name.sasl.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
                    "inter.broker.listener.name": "PLAINTEXT", "log.dirs": str(broker.data)})
    cluster_id = uuid_to_str(random_uuid())
    for node in (controller, broker):
        format_storage(FormatRequest(
            config=ServerConfig.load(node.config), cluster_id=cluster_id,
            mode=QuorumMode.STATIC,
            scram=("SCRAM-SHA-512=[name=admin,password=admin-secret]",)))
    cluster = LocalCluster(base, cluster_id, [controller, broker])
    cluster.start_all()
    try:
        made = ScramCluster(cluster, f"{HOST}:{sasl_port}")
        wait_for("the bootstrapped admin logs in", lambda: _topics(made, "admin", "admin-secret"))
        yield made
    finally:
        cluster.stop_all()


def _confluent(scram: ScramCluster, user: str, password: str,
               mechanism: str = "SCRAM-SHA-512") -> dict[str, Any]:
    return {"bootstrap.servers": scram.sasl_address, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def _topics(scram: ScramCluster, user: str, password: str,
            mechanism: str = "SCRAM-SHA-512") -> list[str] | None:
    """The topics librdkafka lists after logging in (None when it could not)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({**_confluent(scram, user, password, mechanism),
                         "socket.timeout.ms": 3000})
    try:
        return list(admin.list_topics(timeout=3).topics)
    except KafkaException:
        return None


def _refusals(scram: ScramCluster) -> list[str]:
    return [line for line in scram.broker_log.read_text(errors="replace").splitlines()
            if "event=failed_authentication peer=/127.0.0.1" in line]


def test_bootstrapped_credential_logs_in_and_others_are_refused(scram: ScramCluster) -> None:
    from confluent_kafka import KafkaError, Producer
    assert _topics(scram, "admin", "admin-secret") is not None
    before = len(_refusals(scram))
    errors: list[Any] = []
    producer = Producer({**_confluent(scram, "admin", "wrong"),
                         "error_cb": errors.append})


    def reported() -> list[Any] | None:
        producer.poll(0.2)  # error callbacks run inside poll
        return errors or None

    wait_for("librdkafka reports the refused login", reported, timeout_s=TIMEOUT_S)
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert GENERIC in errors[0].str()
    assert _topics(scram, "nobody", "admin-secret") is None
    refusals = wait_for("the broker logs both refusals", lambda: (
        _refusals(scram)[before:] if len(_refusals(scram)) >= before + 2 else None),
        timeout_s=TIMEOUT_S)
    assert all(GENERIC in line for line in refusals)


def test_a_credential_altered_at_runtime_logs_in(scram: ScramCluster) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )
    admin = AdminClient(_confluent(scram, "admin", "admin-secret"))
    futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-secret")])
    futures["carol"].result(TIMEOUT_S)
    wait_for("carol logs in with SCRAM-SHA-256", lambda: _topics(
        scram, "carol", "carol-secret", "SCRAM-SHA-256"), timeout_s=TIMEOUT_S)
    assert _topics(scram, "carol", "carol-secret", "SCRAM-SHA-512") is None


def test_kafka_python_logs_in_with_scram(scram: ScramCluster) -> None:
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=scram.sasl_address,
                             security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="admin",
                             sasl_plain_password="admin-secret",
                             request_timeout_ms=TIMEOUT_S * 1000)
    try:
        described = admin.describe_user_scram_credentials(["admin"])
        assert [(int(i["mechanism"]), i["iterations"])
                for i in described["admin"]["credential_infos"]] == [(2, 4096)]
    finally:
        admin.close()
