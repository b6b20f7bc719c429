"""SCRAM credentials through the admin clients (KIP-554) on a PLAINTEXT 1+1 cluster:
confluent-kafka and kafka-python alter (forwarded to the controller) and describe (from the
broker's image); the keys in the metadata log are the ones the client's password gives."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any, cast

import pytest
from broker_harness import running_cluster, wait_for
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.image.scram import ScramCredential, ScramImage, ScramMechanism
from pykraft.image.snapshot import load_log_directory
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
TIMEOUT_S = 30
SALT = b"confluent-salt-16"
RESOURCE_NOT_FOUND = 91
UNACCEPTABLE_CREDENTIAL = 93


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("scram") / "cluster") as made:
        yield made


def broker_scram(cluster: LocalCluster) -> ScramImage:
    """The credentials in the broker's copy of the metadata log."""
    (broker_id,) = cluster.brokers
    return load_log_directory(cluster.nodes[broker_id].data / "__cluster_metadata-0").scram


def test_confluent_kafka_alters_and_describes(cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )
    from confluent_kafka.admin import ScramMechanism as Mech
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(Mech.SCRAM_SHA_256, 8192),
                                     b"alice-secret", SALT),
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(Mech.SCRAM_SHA_512, 4096),
                                     b"bob-secret"),
    ])
    for future in futures.values():
        future.result(TIMEOUT_S)

    def described() -> dict[str, list[tuple[int, int]]] | None:
        found = cast(dict[str, Future[Any]],
                     admin.describe_user_scram_credentials(["alice", "bob"]))
        try:
            result = {user: [(i.mechanism.value, i.iterations)
                             for i in f.result(TIMEOUT_S).scram_credential_infos]
                      for user, f in found.items()}
        except KafkaException:
            return None  # the broker has not replayed the records yet
        return result

    assert wait_for("both users described", described, timeout_s=TIMEOUT_S) == {
        "alice": [(1, 8192)], "bob": [(2, 4096)]}
    everyone = cast(Future[Any], admin.describe_user_scram_credentials()).result(TIMEOUT_S)
    assert {"alice", "bob"} <= set(everyone)
    with pytest.raises(KafkaException) as unknown:
        cast(dict[str, Future[Any]], admin.describe_user_scram_credentials(["nobody"]))[
            "nobody"].result(TIMEOUT_S)
    assert unknown.value.args[0].code() == RESOURCE_NOT_FOUND
    too_few = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(Mech.SCRAM_SHA_256, 1024), b"x")])["carol"]
    with pytest.raises(KafkaException) as refused:
        too_few.result(TIMEOUT_S)
    assert refused.value.args[0].code() == UNACCEPTABLE_CREDENTIAL

    alice = broker_scram(cluster).get("alice", ScramMechanism.SCRAM_SHA_256)
    assert alice == ScramCredential.from_password(ScramMechanism.SCRAM_SHA_256, "alice-secret",
                                                  SALT, 8192)
    deleted = admin.alter_user_scram_credentials([
        UserScramCredentialDeletion("bob", Mech.SCRAM_SHA_512)])
    deleted["bob"].result(TIMEOUT_S)
    wait_for("bob's credential removed from the broker's image",
             lambda: "bob" not in broker_scram(cluster).users() or None, timeout_s=TIMEOUT_S)
    (broker_id,) = cluster.brokers
    segments = sorted((cluster.nodes[broker_id].data / "__cluster_metadata-0").glob("*.log"))
    dumped = CliRunner().invoke(app, ["dump-log", "--cluster-metadata-decoder", "--files",
                                      ",".join(str(s) for s in segments)])
    assert dumped.exit_code == 0, dumped.output
    assert '"type":"USER_SCRAM_CREDENTIAL_RECORD"' in dumped.output
    assert '"type":"REMOVE_USER_SCRAM_CREDENTIAL_RECORD"' in dumped.output


def test_kafka_python_alters_and_describes(cluster: LocalCluster) -> None:
    from kafka.admin import (
        KafkaAdminClient,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )
    from kafka.admin import ScramMechanism as Mech
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                             request_timeout_ms=TIMEOUT_S * 1000)
    try:
        assert admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("dave", "SCRAM-SHA-512", "dave-secret",
                                         iterations=5000, salt=SALT),
            UserScramCredentialUpsertion("erin", Mech.SCRAM_SHA_256, "erin-secret"),
        ]) == {"dave": None, "erin": None}

        def described() -> dict[str, Any] | None:
            found = admin.describe_user_scram_credentials(["dave", "erin"])
            return found if all(v["error"] is None for v in found.values()) else None

        found = wait_for("dave and erin described", described, timeout_s=TIMEOUT_S)
        assert [(int(i["mechanism"]), i["iterations"]) for i in found["dave"]["credential_infos"]
                ] == [(2, 5000)]
        twice = admin.alter_user_scram_credentials([
            UserScramCredentialDeletion("erin", Mech.SCRAM_SHA_256),
            UserScramCredentialUpsertion("erin", Mech.SCRAM_SHA_512, "x")])
        assert twice == {"erin": "A user credential cannot be altered twice in the same request"}
        missing = admin.describe_user_scram_credentials(["nobody"])
        assert missing == {"nobody": {
            "error": "Attempt to describe a user credential that does not exist: nobody",
            "credential_infos": []}}
        dave = wait_for("dave in the broker's log", lambda: broker_scram(cluster).get(
            "dave", ScramMechanism.SCRAM_SHA_512), timeout_s=TIMEOUT_S)
        assert dave == ScramCredential.from_password(ScramMechanism.SCRAM_SHA_512, "dave-secret",
                                                     SALT, 5000)
    finally:
        admin.close()

