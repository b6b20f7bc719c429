"""Issue 17's client matrix over SASL_SSL with SCRAM-SHA-512, on a ``cluster up --secure``
cluster of 1 controller + 3 brokers with the StandardAuthorizer (:mod:`secure_harness`).

For confluent-kafka, kafka-python, aiokafka, kcat and the Java client (kafka-clients 3.9):
- as ``admin`` (a super user, bootstrapped by ``storage format --add-scram``): create a topic
  (the client's admin API; kcat lists it after ``pykraft topics --create``), produce, read it
  back by assignment and in a group that commits; every message exactly once, in order per
  partition, and the group's committed offsets are the partitions' ends;
- with a wrong password: the client's own authentication error, nothing written or read, and
  the broker logs the failed authentication;
- as ``alice`` (a credential made by AlterUserScramCredentials, no ACLs): Kafka's
  authorization errors for a produce, a read, a topic creation, an ACL creation and, once
  ``pykraft acls --producer`` lets her write, a group join; after ``pykraft acls --consumer``
  she reads what she wrote, alone and in her group.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from broker_harness import wait_for
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from java_admin import PROBE_SOURCE
from secure_clients import CLIENTS, DEADLINE_S, Client, Java, Placed, Record, RefusedError, values
from secure_harness import SaslSsl, sasl_ssl_cluster
from security_harness import failed_authentications, log_lines, unhandled
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.errors import PyKraftError
from pykraft.tools.admin_client import AdminClient as PykraftAdmin
from pykraft.tools.admin_client import admin_settings
from pykraft.tools.secure_cluster import ADMIN

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
COUNT = 30
PARTITIONS = 3
REPLICAS = 3
ALICE, ALICE_PASSWORD = "alice", "alice-secret"
GENERIC = ("Authentication failed during authentication due to invalid credentials with "
           "SASL mechanism SCRAM-SHA-512")
#: how each client names a refused login (besides the broker's message)
OWN_WORDS = {"confluent-kafka": "_AUTHENTICATION", "kafka-python": "SaslAuthenticationFailedError",
             "aiokafka": "SaslAuthenticationFailed", "kcat": "SASL authentication error",
             "java": "SaslAuthenticationException"}
SECURE_PROBE = PROBE_SOURCE.parent / "SecureProbe.java"
OpenClient = Callable[[str, str, str], Client]


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslSsl]:
    with sasl_ssl_cluster(tmp_path_factory.mktemp("secure-matrix") / "cluster") as made:
        admin = AdminClient(made.admin_librdkafka)
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            ALICE, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
            ALICE_PASSWORD.encode())])[ALICE].result(DEADLINE_S)
        wait_for("alice logs in on every broker", lambda: True if all(
            _metadata(made, ALICE, ALICE_PASSWORD, broker, []) is not None
            for broker in made.bootstrap.split(",")) else None, timeout_s=DEADLINE_S)
        yield made
        assert {n: unhandled(f.log) for n, f in made.cluster.nodes.items()} == {
            n: [] for n in made.cluster.nodes}


@pytest.fixture(scope="module")
def java_probe(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """SecureProbe compiled against the pinned kafka-clients jar."""
    classes = tmp_path_factory.mktemp("secure-probe")
    subprocess.run(["javac", "-d", str(classes), "-cp", java_classpath, str(SECURE_PROBE)],
                   check=True, timeout=300)
    Java.probe = ["java", "-cp", f"{classes}:{java_classpath}", "SecureProbe"]


@pytest.fixture
def open_client(secure: SaslSsl, request: pytest.FixtureRequest) -> Iterator[OpenClient]:
    """Opens a client as a user (the Java ones are closed after the test)."""
    opened: list[Java] = []

    def open_(name: str, user: str, password: str) -> Client:
        if name == "java":
            request.getfixturevalue("java_probe")
            java = Java(secure, user, password)
            opened.append(java)
            return java
        client: Client = CLIENTS[name](secure, user, password)
        return client

    yield open_
    for java in opened:
        java.close()


# -- what the admin sees -----------------------------------------------------------------------


def _metadata(secure: SaslSsl, user: str, password: str, broker: str,
              topics: list[str]) -> dict[str, int] | None:
    """Topic -> partitions with a leader, as ``broker`` answers Metadata (None: no answer)."""
    settings = admin_settings(broker, secure.properties_file(user, password))

    async def run() -> dict[str, int]:
        async with PykraftAdmin(settings) as admin:
            found = await admin.metadata(topics)
            return {name: sum(p.leader is not None for p in topic.partitions)
                    for name, topic in found.topics.items()}
    try:
        return asyncio.run(asyncio.wait_for(run(), 10))
    except (PyKraftError, OSError, TimeoutError):  # not up yet: the caller polls
        return None


def create_topic_with_tool(secure: SaslSsl, topic: str) -> None:
    """``pykraft topics --create`` as admin, over SASL_SSL (``--command-config``)."""
    created = CliRunner().invoke(app, [
        "topics", "--bootstrap-server", secure.bootstrap, "--command-config",
        str(secure.admin_properties), "--create", "--topic", topic,
        "--partitions", str(PARTITIONS), "--replication-factor", str(REPLICAS)])
    assert created.exit_code == 0, (created.stdout, created.stderr)


def wait_for_topic(secure: SaslSsl, topic: str) -> None:
    """Every broker names a leader for each of the topic's partitions."""
    wait_for(f"{topic}'s leaders on every broker", lambda: True if all(
        (_metadata(secure, ADMIN, secure.admin_password, broker, [topic]) or {}).get(topic)
        == PARTITIONS for broker in secure.bootstrap.split(",")) else None,
        timeout_s=DEADLINE_S)


def end_offsets(secure: SaslSsl, topic: str) -> dict[int, int]:
    consumer = Consumer({**secure.admin_librdkafka, "group.id": "oracle"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                  timeout=DEADLINE_S)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()


def committed_offsets(secure: SaslSsl, group: str) -> dict[int, int]:
    """The group's committed offsets (OffsetFetch as admin), by partition."""
    admin = AdminClient(secure.admin_librdkafka)
    found: Any = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    return {tp.partition: tp.offset for tp in found[group].result(DEADLINE_S).topic_partitions}


def failed_logins(secure: SaslSsl) -> int:
    """The brokers' log lines for logins refused a wrong password (Kafka's "Failed
    authentication with /127.0.0.1 (...)")."""
    return sum(len(failed_authentications(log, "peer=/127.0.0.1", GENERIC))
               for log in secure.broker_logs())


def check_read(read: list[Record], prefix: str, placed: Placed) -> None:
    """Every value once; per partition, the offsets from 0 up in the order they were sent
    (and where the producer was told, when it was)."""
    assert sorted(value for _, _, value in read) == sorted(values(prefix, COUNT))
    for partition in range(PARTITIONS):
        mine = [(offset, value) for p, offset, value in read if p == partition]
        assert [offset for offset, _ in mine] == list(range(len(mine)))
        sent = [int(value.rsplit("-", 1)[1]) for _, value in mine]
        assert sent == sorted(sent)
    if placed is not None:
        assert {(p, o): v for p, o, v in read} == dict(zip(placed, values(prefix, COUNT),
                                                           strict=True))


def check_committed(secure: SaslSsl, topic: str, group: str) -> None:
    assert committed_offsets(secure, group) == end_offsets(secure, topic)
    assert sum(end_offsets(secure, topic).values()) == COUNT


def refusal(call: Callable[[], object]) -> RefusedError:
    with pytest.raises(RefusedError) as refused:
        call()
    return refused.value


def refusal_or_server_view(secure: SaslSsl, call: Callable[[], object]) -> RefusedError:
    """:func:`refusal`, or, when the client gave up without hearing one (a CI run saw
    kafka-python's consumer time out on "socket disconnected" only), a failure that shows
    what the brokers logged of those connections meanwhile."""
    logs = secure.broker_logs()
    before = {log: len(log_lines(log, "event=")) for log in logs}
    try:
        return refusal(call)
    except Exception as error:
        said = [line for log in logs for line in log_lines(log, "event=")[before[log]:]
                if "event=state_change" not in line]
        raise AssertionError(f"no refusal heard ({error!r}); the brokers logged meanwhile:\n"
                             + "\n".join(said[-40:])) from error


# -- the matrix --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CLIENTS))
def test_admin_produces_and_consumes(secure: SaslSsl, open_client: OpenClient,
                                     name: str) -> None:
    topic, group = f"secure-{name}", f"secure-group-{name}"
    admin = open_client(name, ADMIN, secure.admin_password)
    if admin.creates_topics:
        admin.create_topic(topic, PARTITIONS, REPLICAS)
    else:
        create_topic_with_tool(secure, topic)
    wait_for_topic(secure, topic)
    assert admin.topic_partitions(topic) == PARTITIONS
    placed = admin.produce(topic, name, COUNT)
    check_read(admin.consume(topic, PARTITIONS, COUNT), name, placed)
    check_read(admin.group(topic, group, COUNT), name, placed)
    check_committed(secure, topic, group)


@pytest.fixture(scope="module")
def seeded(secure: SaslSsl) -> str:
    """A topic holding one message: something a refused reader could have read."""
    create_topic_with_tool(secure, "secure-refused")
    wait_for_topic(secure, "secure-refused")
    seeder = CLIENTS["confluent-kafka"](secure, ADMIN, secure.admin_password)
    seeder.produce("secure-refused", "seed", 1)
    return "secure-refused"


@pytest.mark.parametrize("name", list(CLIENTS))
def test_a_wrong_password_is_refused(secure: SaslSsl, open_client: OpenClient, seeded: str,
                                     name: str) -> None:
    before = failed_logins(secure)
    wrong = open_client(name, ADMIN, "wrong-password")
    for attempt in (lambda: wrong.produce(seeded, f"wrong-{name}", 1),
                    lambda: wrong.consume(seeded, PARTITIONS, 1)):
        refused = refusal_or_server_view(secure, attempt)
        assert refused.error == "SASL_AUTHENTICATION_FAILED"
        assert OWN_WORDS[name] in refused.said and GENERIC in refused.said
    assert sum(end_offsets(secure, seeded).values()) == 1  # the seed only
    wait_for("the brokers log both refused logins", lambda: (
        True if failed_logins(secure) >= before + 2 else None), timeout_s=DEADLINE_S)


def acls(secure: SaslSsl, *options: str) -> None:
    """``pykraft acls --add --allow-principal User:alice`` as admin, then until every broker
    lists the added ACLs (brokers learn them from the metadata log)."""
    config = ["--command-config", str(secure.admin_properties)]
    added = CliRunner().invoke(app, ["acls", "--bootstrap-server", secure.bootstrap, *config,
                                     "--add", "--allow-principal", f"User:{ALICE}", *options])
    assert added.exit_code == 0, (added.stdout, added.stderr)
    entries = {line.strip() for line in added.stdout.splitlines() if "principal=" in line}
    assert entries

    def listed(broker: str) -> bool | None:
        found = CliRunner().invoke(app, ["acls", "--bootstrap-server", broker, *config,
                                         "--list", "--principal", f"User:{ALICE}", *options])
        return True if entries <= {line.strip() for line in found.stdout.splitlines()} else None

    for broker in secure.bootstrap.split(","):
        wait_for(f"the ACLs on {broker}", lambda at=broker: listed(at), timeout_s=DEADLINE_S)


@pytest.mark.parametrize("name", list(CLIENTS))
def test_acls_let_alice_in(secure: SaslSsl, open_client: OpenClient, name: str) -> None:
    topic, group = f"alice-{name}", f"alice-group-{name}"
    create_topic_with_tool(secure, topic)
    wait_for_topic(secure, topic)
    alice = open_client(name, ALICE, ALICE_PASSWORD)
    assert refusal(lambda: alice.produce(topic, name, COUNT)).error == (
        "TOPIC_AUTHORIZATION_FAILED")
    assert refusal(lambda: alice.consume(topic, PARTITIONS, 1)).error == (
        "TOPIC_AUTHORIZATION_FAILED")
    if alice.creates_topics:
        assert refusal(lambda: alice.create_topic(f"{topic}-new", 1, 1)).error == (
            "TOPIC_AUTHORIZATION_FAILED")
    if alice.creates_acls:
        assert refusal(lambda: alice.create_acl(topic)).error == "CLUSTER_AUTHORIZATION_FAILED"
    assert end_offsets(secure, topic) == dict.fromkeys(range(PARTITIONS), 0)

    acls(secure, "--producer", "--topic", topic)
    placed = alice.produce(topic, name, COUNT)
    assert refusal(lambda: alice.group(topic, group, COUNT)).error == (
        "GROUP_AUTHORIZATION_FAILED")

    acls(secure, "--consumer", "--topic", topic, "--group", group)
    check_read(alice.consume(topic, PARTITIONS, COUNT), name, placed)
    check_read(alice.group(topic, group, COUNT), name, placed)
    check_committed(secure, topic, group)
