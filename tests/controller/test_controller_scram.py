"""AlterUserScramCredentials on the controller: Kafka's validation, atomic writes, replay."""

from __future__ import annotations

from controller_harness import Cluster  # type: ignore[import-not-found]

from pykraft.controller.responses import error_response
from pykraft.image.scram import ScramCredential, ScramMechanism, salted_password
from pykraft.messages.kafka.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from pykraft.messages.kafka.alter_user_scram_credentials_response import (
    AlterUserScramCredentialsResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
SALT = b"salt-of-sixteen!"
MV_3_5_IV1 = 10


def upsert(name: str, mechanism: int = SHA256, iterations: int = 4096,
           password: str = "secret") -> ScramCredentialUpsertion:
    known = ScramMechanism.of(mechanism)
    salted = (salted_password(known, password, SALT, iterations)
              if known is not ScramMechanism.UNKNOWN else b"x")
    return ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations,
                                    salt=SALT, salted_password=salted)


def delete(name: str, mechanism: int = SHA256) -> ScramCredentialDeletion:
    return ScramCredentialDeletion(name=name, mechanism=mechanism)


def alter(cluster: Cluster, upsertions: tuple[ScramCredentialUpsertion, ...] = (),
          deletions: tuple[ScramCredentialDeletion, ...] = ()) -> dict[str, tuple[int, str | None]]:
    response = cluster.call(AlterUserScramCredentialsRequest(deletions=deletions,
                                                             upsertions=upsertions))
    assert isinstance(response, AlterUserScramCredentialsResponse)
    return {r.user: (r.error_code, r.error_message) for r in response.results}


def started(mv: int = 21) -> Cluster:
    cluster = Cluster(mv=mv)
    cluster.elect()
    return cluster


def test_upsert_derives_the_keys_from_the_salted_password() -> None:
    cluster = started()
    assert alter(cluster, (upsert("alice"), upsert("bob", SHA512, 8192))) == {
        "alice": (ErrorCode.NONE, None), "bob": (ErrorCode.NONE, None)}
    scram = cluster.controller.image.scram
    assert scram.get("alice", SHA256) == ScramCredential.from_password(
        SHA256, "secret", SALT, 4096)
    bob = scram.get("bob", SHA512)
    assert bob is not None and bob.iterations == 8192
    assert cluster.replayed_image() == cluster.controller.image  # a broker sees the same


def test_alterations_are_one_batch_with_deletions_first() -> None:
    cluster = started()
    alter(cluster, (upsert("alice"), upsert("bob")))
    batches = len(cluster.raft.batches)
    assert alter(cluster, (upsert("carol"), upsert("dave", SHA512)), (delete("alice"),)) == {
        "alice": (ErrorCode.NONE, None), "carol": (ErrorCode.NONE, None),
        "dave": (ErrorCode.NONE, None)}
    assert len(cluster.raft.batches) == batches + 1
    kinds = [type(r.message) for r in cluster.raft.metadata_records()[-3:]]
    assert kinds == [RemoveUserScramCredentialRecord, UserScramCredentialRecord,
                     UserScramCredentialRecord]
    assert cluster.controller.image.scram.users() == ["bob", "carol", "dave"]


def test_validation_errors_in_kafkas_words() -> None:
    cluster = started()
    results = alter(cluster, (
        upsert("few", iterations=4095), upsert("many", iterations=16385),
        upsert("", SHA256), upsert("odd", mechanism=3), upsert("ok", iterations=16384),
    ), (delete("ghost"), delete("nomech", mechanism=0)))
    assert results == {
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "odd": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "ghost": (ErrorCode.RESOURCE_NOT_FOUND,
                  "Attempt to delete a user credential that does not exist"),
        "nomech": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "ok": (ErrorCode.NONE, None),
    }
    assert cluster.controller.image.scram.users() == ["ok"]


def test_a_user_named_twice_fails_every_mention() -> None:
    cluster = started()
    alter(cluster, (upsert("alice"), upsert("bob")))
    twice = (ErrorCode.DUPLICATE_RESOURCE,
             "A user credential cannot be altered twice in the same request")
    results = alter(cluster, (upsert("alice", SHA512), upsert("carol"), upsert("carol", SHA512),
                              upsert("bob")),
                    (delete("alice"), delete("bob"), delete("bob")))
    assert results == {"alice": twice, "bob": twice, "carol": twice}
    records = cluster.raft.metadata_records()
    assert not isinstance(records[-1].message, RemoveUserScramCredentialRecord)
    assert cluster.controller.image.scram.users() == ["alice", "bob"]


def test_a_deleted_credential_of_another_mechanism_is_not_found() -> None:
    cluster = started()
    alter(cluster, (upsert("alice"),))
    assert alter(cluster, deletions=(delete("alice", SHA512),))["alice"][0] == (
        ErrorCode.RESOURCE_NOT_FOUND)
    assert alter(cluster, deletions=(delete("alice"),)) == {"alice": (ErrorCode.NONE, None)}
    assert cluster.controller.image.scram.users() == []
    assert cluster.replayed_image().scram.users() == []


def test_refused_below_metadata_version_3_5_iv2() -> None:
    cluster = started(MV_3_5_IV1)
    unsupported = (ErrorCode.UNSUPPORTED_VERSION,
                   "The current metadata.version does not support SCRAM")
    assert alter(cluster, (upsert("alice"),), (delete("bob"),)) == {
        "alice": unsupported, "bob": unsupported}
    assert cluster.controller.image.scram.users() == []


def test_not_controller_answer_names_each_user_once_sorted() -> None:
    request = AlterUserScramCredentialsRequest(deletions=(delete("zed"), delete("amy")),
                                               upsertions=(upsert("zed"),))
    response = error_response(request, ErrorCode.NOT_CONTROLLER)
    assert isinstance(response, AlterUserScramCredentialsResponse)
    assert [(r.user, r.error_code) for r in response.results] == [
        ("amy", ErrorCode.NOT_CONTROLLER), ("zed", ErrorCode.NOT_CONTROLLER)]
