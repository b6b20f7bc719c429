"""Conformance rows for SCRAM credentials (KIP-554): AlterUserScramCredentials on both
listeners (a broker forwards it), DescribeUserScramCredentials on the broker (Kafka's
controller has no handler for it). Every run names users of its own."""

from __future__ import annotations

from typing import Any

from conformance.cases import BOTH, Case, Meaning, code, settled
from conformance.harness import BROKER, Run
from pykraft.image.scram import ScramMechanism, salted_password
from pykraft.messages.kafka.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from pykraft.messages.kafka.describe_user_scram_credentials_request import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from pykraft.protocol.apis import ApiKey

SHA256 = ScramMechanism.SCRAM_SHA_256
SALT = b"conformance-salt"


def user_of(run: Run, suffix: str = "") -> str:
    return f"u-{run.api_name}-{run.case}-{run.listener}-v{run.version}{suffix}".lower()


def upsertion(name: str, iterations: int = 4096) -> ScramCredentialUpsertion:
    return ScramCredentialUpsertion(
        name=name, mechanism=SHA256, iterations=iterations, salt=SALT,
        salted_password=salted_password(SHA256, "pw", SALT, max(iterations, 1)))


def alter(run: Run, upsertions: list[ScramCredentialUpsertion],
          deletions: tuple[tuple[str, int], ...] = ()) -> Any:
    return run.generated(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, AlterUserScramCredentialsRequest(
        deletions=tuple(ScramCredentialDeletion(name=n, mechanism=m) for n, m in deletions),
        upsertions=tuple(upsertions)))


def altered(body: Any, run: Run) -> Meaning:
    return [(r.user == user_of(run), code(r.error_code)) for r in body.results]


def upsert_then_delete(run: Run) -> Any:
    name = user_of(run)
    first = alter(run, [upsertion(name)])
    assert [code(r.error_code) for r in first.results] == ["NONE"], first
    return alter(run, [], ((name, SHA256),))


def describe(run: Run, names: list[str] | None) -> Any:
    users = None if names is None else tuple(UserName(name=n) for n in names)
    return run.generated(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
                         DescribeUserScramCredentialsRequest(users=users))


def described(body: Any, _run: Run) -> Meaning:
    return (code(body.error_code), [
        (code(r.error_code), [(c.mechanism, c.iterations) for c in r.credential_infos])
        for r in body.results])


def describe_upserted(run: Run) -> Any:
    """Upserted through the broker; described once the broker's image has it."""
    name = user_of(run)
    alter(run, [upsertion(name, 8192)])
    return settled(lambda: describe(run, [name]), lambda body: body.results[0].error_code == 0)


def described_all_has_upserted(body: Any, run: Run) -> Meaning:
    return [(code(r.error_code), [(c.mechanism, c.iterations) for c in r.credential_infos])
            for r in body.results if r.user == user_of(run, "-listed")]


def describe_all(run: Run) -> Any:
    alter(run, [upsertion(user_of(run, "-listed"))])
    return settled(lambda: describe(run, None),
                   lambda body: bool(described_all_has_upserted(body, run)))


SCRAM = [
    Case("AlterUserScramCredentials", 51, "upsert_then_delete", upsert_then_delete, altered,
         lambda _r: [(True, "NONE")], listeners=BOTH),
    Case("AlterUserScramCredentials", 51, "too_few_iterations",
         lambda r: alter(r, [upsertion(user_of(r), 4095)]), altered,
         lambda _r: [(True, "UNACCEPTABLE_CREDENTIAL")],
         listeners=BOTH),
    Case("AlterUserScramCredentials", 51, "delete_missing",
         lambda r: alter(r, [], ((user_of(r), SHA256),)), altered,
         lambda _r: [(True, "RESOURCE_NOT_FOUND")], listeners=BOTH),
    Case("AlterUserScramCredentials", 51, "user_twice",
         lambda r: alter(r, [upsertion(user_of(r)), upsertion(user_of(r), 8192)]), altered,
         lambda _r: [(True, "DUPLICATE_RESOURCE")], listeners=BOTH),
    Case("DescribeUserScramCredentials", 50, "unknown_user",
         lambda r: describe(r, [user_of(r)]), described,
         lambda _r: ("NONE", [("RESOURCE_NOT_FOUND", [])]), listeners=(BROKER,)),
    Case("DescribeUserScramCredentials", 50, "user_twice",
         lambda r: describe(r, [user_of(r), user_of(r)]), described,
         lambda _r: ("NONE", [("DUPLICATE_RESOURCE", [])]), listeners=(BROKER,)),
    Case("DescribeUserScramCredentials", 50, "upserted_user", describe_upserted, described,
         lambda _r: ("NONE", [("NONE", [(int(SHA256), 8192)])]), listeners=(BROKER,)),
    Case("DescribeUserScramCredentials", 50, "all_users", describe_all,
         described_all_has_upserted, lambda _r: [("NONE", [(int(SHA256), 4096)])],
         listeners=(BROKER,)),
]
