"""SCRAM credentials and ACLs over snapshots and restarts, on real processes: one controller
and one broker with a SCRAM SASL_PLAINTEXT listener, the StandardAuthorizer, snapshots every
kilobyte of metadata and small metadata segments, so the log before a snapshot is deleted.

Credentials and ACLs created at runtime land in both nodes' snapshots; a broker restarted
from its snapshot, then the whole cluster restarted with the records gone from the logs,
still logs the user in and lists and enforces the same ACLs. A credential deleted at runtime
is refused at the next login and at the next re-authentication of a connection already
logged in (``connections.max.reauth.ms``), and the broker logs both refusals."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pykraft.config.authorizer import STANDARD_AUTHORIZER
from pykraft.errors import PyKraftError
from pykraft.image import MetadataImage, load_snapshot
from pykraft.image.scram import ScramMechanism
from pykraft.records.batch import iter_batches
from pykraft.records.metadata import decode_metadata_record
from pykraft.storage.bootstrap import METADATA_LOG_DIR_NAME
from pykraft.storage.metadata_log import MetadataLog
from pykraft.storage.snapshot_files import list_snapshots
from pykraft.tools.local_cluster import (
    BROKER,
    CONTROLLER,
    HOST,
    LocalCluster,
    NodeFiles,
    free_ports,
)

sys.path.insert(0, str(Path(__file__).parent))
from process_harness import wait_for
from security_harness import failed_authentications, formatted_cluster, log_lines, write_node

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
BROKER_ID = 1000
TIMEOUT_S = 60.0
REAUTH_MS = 2000
TOPIC = "ledger"
SCRAM_256, SCRAM_512 = "SCRAM-SHA-256", "SCRAM-SHA-512"
#: The metadata records a snapshot must carry once the log before it is gone.
SECURITY_RECORDS = ("UserScramCredentialRecord", "AccessControlEntryRecord")


@dataclass(frozen=True)
class Secured:
    cluster: LocalCluster
    sasl: str
    plain: str

    def log(self, node_id: int) -> Path:
        return self.cluster.nodes[node_id].log


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    base = tmp_path_factory.mktemp("durable")
    controller_port, plain_port, sasl_port = free_ports(3)
    common = {"controller.listener.names": "CONTROLLER",
              "controller.quorum.voters": f"1@{HOST}:{controller_port}",
              "pykraft.shutdown.timeout.ms": "3000", "offsets.topic.replication.factor": "1",
              "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS",
              "allow.everyone.if.no.acl.found": "true",
              "metadata.log.max.record.bytes.between.snapshots": "1024",
              "internal.metadata.log.segment.bytes": "2048", "metadata.max.retention.bytes": "1"}
    controller = NodeFiles(1, controller_port, base / "node-1", CONTROLLER)
    broker = NodeFiles(BROKER_ID, plain_port, base / f"node-{BROKER_ID}", BROKER)
    write_node(controller, {**common, "process.roles": "controller", "node.id": "1",
                            "listeners": f"CONTROLLER://{controller.address}",
                            "log.dirs": str(controller.data)})
    write_node(broker, {**common, "process.roles": "broker", "node.id": str(BROKER_ID),
                        "listeners": f"PLAINTEXT://{broker.address},SASL://{HOST}:{sasl_port}",
                        "listener.security.protocol.map":
                            "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                        "listener.name.sasl.sasl.enabled.mechanisms": f"{SCRAM_256},{SCRAM_512}",
                        "listener.name.sasl.connections.max.reauth.ms": str(REAUTH_MS),
                        "inter.broker.listener.name": "PLAINTEXT", "log.dirs": str(broker.data)})
    cluster = formatted_cluster(base, [controller, broker])
    cluster.start_all()
    try:
        made = Secured(cluster, f"{HOST}:{sasl_port}", broker.address)
        wait_for("the broker answers", lambda: _listed_acls(made))
        yield made
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


def _admin(secured: Secured) -> Any:
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": secured.plain})


def _login(secured: Secured, user: str, password: str, mechanism: str) -> list[str] | None:
    """The topics ``user`` lists after logging in over SCRAM (None when refused)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": secured.sasl, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": mechanism, "sasl.username": user,
                         "sasl.password": password, "socket.timeout.ms": 3000})
    try:
        return list(admin.list_topics(timeout=3).topics)
    except KafkaException:
        return None


def _listed_acls(secured: Secured) -> list[dict[str, str]] | None:
    """``pykraft acls --list --json`` (None while the broker does not answer)."""
    from pykraft.cli.main import app
    result = CliRunner().invoke(app, ["acls", "--bootstrap-server", secured.plain, "--list",
                                      "--json"])
    return None if result.exit_code != 0 else list(json.loads(result.stdout))


def _upsert(secured: Secured, user: str, password: str, mechanism: str) -> None:
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        UserScramCredentialUpsertion,
    )
    from confluent_kafka.admin import (
        ScramMechanism as Mechanism,
    )
    kind = Mechanism.SCRAM_SHA_256 if mechanism == SCRAM_256 else Mechanism.SCRAM_SHA_512
    admin = _admin(secured)
    futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        user, ScramCredentialInfo(kind, 4096), password.encode())])
    futures[user].result(TIMEOUT_S)
    wait_for(f"{user} logs in", lambda: _login(secured, user, password, mechanism),
             timeout_s=TIMEOUT_S)


def _snapshot(secured: Secured, node_id: int) -> tuple[int, MetadataImage] | None:
    directory = secured.cluster.nodes[node_id].data / METADATA_LOG_DIR_NAME
    real = [sid for sid in list_snapshots(directory) if sid.end_offset > 0]
    if not real:
        return None
    try:
        return real[-1].end_offset, load_snapshot(directory / real[-1].file_name)
    except (PyKraftError, OSError):  # retention removed it while we read
        return None


def _records_on_disk(secured: Secured, node_id: int) -> tuple[int, set[str]]:
    """A stopped node's metadata log start offset and the record types still in its log."""
    with MetadataLog.open(secured.cluster.nodes[node_id].data / METADATA_LOG_DIR_NAME) as log:
        start = log.log_start_offset
        data = log.read(start, 1 << 30)
    return start, {type(decode_metadata_record(record.value)).__name__
                   for batch in iter_batches(data) if not batch.is_control
                   for record in batch.records() if record.value}


def _loaded(secured: Secured, node_id: int) -> list[str]:
    lines: list[str] = log_lines(secured.log(node_id), "event=snapshot_loaded")
    return lines


def _produce(secured: Secured, user: str, password: str, value: bytes) -> str | None:
    """Produce one record to the ledger as ``user``; the error's name, None when written."""
    from confluent_kafka import KafkaException, Producer
    producer = Producer({"bootstrap.servers": secured.sasl, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": SCRAM_512, "sasl.username": user,
                         "sasl.password": password, "message.timeout.ms": 10_000})
    outcome: list[str | None] = []
    producer.produce(TOPIC, value, on_delivery=lambda err, _: outcome.append(
        None if err is None else err.name()))
    producer.flush(15)
    if not outcome:
        raise KafkaException(f"no delivery report for {value!r}")
    return outcome[0]


def test_credentials_and_acls_survive_snapshots_and_restarts(secured: Secured) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        NewTopic,
        ResourcePatternType,
        ResourceType,
    )
    cluster = secured.cluster
    admin = _admin(secured)  # kept: the futures die with their client
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(TIMEOUT_S)
    _upsert(secured, "dora", "dora-secret", SCRAM_512)
    _upsert(secured, "frank", "frank-secret", SCRAM_512)
    bindings = [AclBinding(ResourceType.TOPIC, TOPIC, ResourcePatternType.LITERAL, "User:dora",
                           "*", operation, AclPermissionType.ALLOW)
                for operation in (AclOperation.WRITE, AclOperation.DESCRIBE)]
    bindings.append(AclBinding(ResourceType.GROUP, "ledger-", ResourcePatternType.PREFIXED,
                               "User:dora", "*", AclOperation.READ, AclPermissionType.ALLOW))
    for future in admin.create_acls(bindings).values():
        assert future.result(timeout=TIMEOUT_S) is None
    acls = wait_for("the ACLs listed", lambda: (
        found if (found := _listed_acls(secured)) and len(found) == 3 else None))
    assert _produce(secured, "dora", "dora-secret", b"before") is None
    assert _produce(secured, "frank", "frank-secret", b"refused") == "TOPIC_AUTHORIZATION_FAILED"

    def in_snapshot(node_id: int) -> int | None:
        newest = _snapshot(secured, node_id)
        if newest is None:
            return None
        offset, image = newest
        held = (image.scram.get("dora", ScramMechanism.SCRAM_SHA_512) is not None
                and len(image.acls.acls) == 3)
        return offset if held else None
    for node_id in cluster.nodes:
        wait_for(f"a snapshot of node {node_id} holding dora and the ACLs",
                 lambda n=node_id: in_snapshot(n), timeout_s=TIMEOUT_S)

    # (a) the broker alone, restarted from its snapshot
    before = len(_loaded(secured, BROKER_ID))
    assert cluster.stop(BROKER_ID) == 0
    cluster.start(BROKER_ID)
    wait_for("the broker loads its snapshot", lambda: _loaded(secured, BROKER_ID)[before:] or None)
    wait_for("dora logs in after the broker's restart",
             lambda: _login(secured, "dora", "dora-secret", SCRAM_512))
    assert _listed_acls(secured) == acls

    # (b) the whole cluster, its logs holding none of the records any more
    counts = {n: len(_loaded(secured, n)) for n in cluster.nodes}
    for node_id in (BROKER_ID, *cluster.controllers):
        assert cluster.stop(node_id) == 0
    for node_id in cluster.nodes:
        start, kinds = _records_on_disk(secured, node_id)
        assert start > 0 and not kinds & set(SECURITY_RECORDS), (node_id, start, kinds)
    cluster.start_all()
    for node_id, count in counts.items():
        wait_for(f"node {node_id} loads its snapshot",
                 lambda n=node_id, c=count: _loaded(secured, n)[c:] or None)
    wait_for("dora logs in after a full restart",
             lambda: _login(secured, "dora", "dora-secret", SCRAM_512), timeout_s=TIMEOUT_S)
    assert _login(secured, "dora", "wrong", SCRAM_512) is None
    assert _listed_acls(secured) == acls
    assert _produce(secured, "dora", "dora-secret", b"after") is None
    assert _produce(secured, "frank", "frank-secret", b"refused") == "TOPIC_AUTHORIZATION_FAILED"


def test_a_deleted_credential_is_refused_at_login_and_at_reauthentication(
        secured: Secured) -> None:
    from confluent_kafka import KafkaError, Producer
    from confluent_kafka.admin import ScramMechanism as Mechanism
    from confluent_kafka.admin import UserScramCredentialDeletion
    broker_log = secured.log(BROKER_ID)
    from confluent_kafka.admin import NewTopic
    admin = _admin(secured)  # kept: the futures die with their client
    admin.create_topics([NewTopic("erin-topic", 1, 1)])["erin-topic"].result(TIMEOUT_S)
    _upsert(secured, "erin", "erin-secret", SCRAM_256)
    errors: list[Any] = []
    delivered: list[Any] = []
    producer = Producer({"bootstrap.servers": secured.sasl, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": SCRAM_256, "sasl.username": "erin",
                         "sasl.password": "erin-secret", "error_cb": errors.append,
                         "message.timeout.ms": 5000})
    producer.produce("erin-topic", b"while-valid", on_delivery=lambda e, _: delivered.append(e))
    assert producer.flush(30) == 0 and delivered == [None], (delivered, errors)

    futures = admin.alter_user_scram_credentials([UserScramCredentialDeletion(
        "erin", Mechanism.SCRAM_SHA_256)])
    futures["erin"].result(TIMEOUT_S)
    wait_for("erin's next login refused", lambda: (
        True if _login(secured, "erin", "erin-secret", SCRAM_256) is None else None))
    assert failed_authentications(broker_log, "during authentication", SCRAM_256)

    # the producer's connection, authenticated before the deletion, re-authenticates
    # within its session lifetime and is refused
    def refused_on_reauthentication() -> list[str] | None:
        producer.poll(0.2)
        return failed_authentications(broker_log, "during re-authentication",
                                      SCRAM_256) or None
    lines = wait_for("the re-authentication refused", refused_on_reauthentication,
                     timeout_s=TIMEOUT_S)
    assert "peer=/127.0.0.1" in lines[0]
    def told() -> bool | None:
        producer.poll(0.2)
        return True if any(e.code() == KafkaError._AUTHENTICATION for e in errors) else None
    wait_for("the client told of it", told)
