"""Delegation tokens on the controller: Kafka's DelegationTokenControlManager decisions,
the records they write, and the periodic sweep of expired tokens."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from controller_harness import Cluster  # type: ignore[import-not-found]

from pykraft.controller.delegation_token_control import MAX_RECORDS_PER_EXPIRATION, TokenRequest
from pykraft.controller.responses import error_response
from pykraft.errors import ConfigError
from pykraft.messages.kafka.create_delegation_token_request import (
    CreatableRenewers,
    CreateDelegationTokenRequest,
)
from pykraft.messages.kafka.create_delegation_token_response import (
    CreateDelegationTokenResponse,
)
from pykraft.messages.kafka.expire_delegation_token_request import ExpireDelegationTokenRequest
from pykraft.messages.kafka.expire_delegation_token_response import (
    ExpireDelegationTokenResponse,
)
from pykraft.messages.kafka.renew_delegation_token_request import RenewDelegationTokenRequest
from pykraft.messages.kafka.renew_delegation_token_response import RenewDelegationTokenResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import DelegationTokenRecord, RemoveDelegationTokenRecord

SECRET = "token-secret"
DAY, WEEK = 86_400_000, 604_800_000
MV_3_6_IV1 = 13


def started(properties: dict[str, str] | None = None, mv: int = 21) -> Cluster:
    cluster = Cluster(mv=mv, properties={"delegation.token.secret.key": SECRET}
                      if properties is None else properties)
    cluster.elect()
    cluster.tick(1_000_000)
    return cluster


def create(cluster: Cluster, by: str = "alice", *, owner: str | None = None,
           renewers: tuple[str, ...] = (), max_lifetime_ms: int = -1,
           renewer_type: str = "User") -> CreateDelegationTokenResponse:
    body = CreateDelegationTokenRequest(
        owner_principal_type="User" if owner else None, owner_principal_name=owner,
        renewers=tuple(CreatableRenewers(principal_type=renewer_type, principal_name=r)
                       for r in renewers), max_lifetime_ms=max_lifetime_ms)
    response = cluster.call(TokenRequest(body, "User", by))
    assert isinstance(response, CreateDelegationTokenResponse)
    return response


def renew(cluster: Cluster, token_hmac: bytes, by: str = "alice",
          period_ms: int = -1) -> RenewDelegationTokenResponse:
    response = cluster.call(TokenRequest(RenewDelegationTokenRequest(
        hmac=token_hmac, renew_period_ms=period_ms), "User", by))
    assert isinstance(response, RenewDelegationTokenResponse)
    return response


def expire(cluster: Cluster, token_hmac: bytes, by: str = "alice",
           period_ms: int = -1) -> ExpireDelegationTokenResponse:
    response = cluster.call(TokenRequest(ExpireDelegationTokenRequest(
        hmac=token_hmac, expiry_time_period_ms=period_ms), "User", by))
    assert isinstance(response, ExpireDelegationTokenResponse)
    return response


def test_create_writes_a_token_whose_hmac_is_hmac_sha512_of_its_id() -> None:
    cluster = started()
    now = cluster.now
    made = create(cluster, renewers=("bob",))
    assert made.error_code == ErrorCode.NONE
    assert (made.principal_name, made.token_requester_principal_name) == ("alice", "alice")
    assert (made.issue_timestamp_ms, made.expiry_timestamp_ms, made.max_timestamp_ms) == (
        now, now + DAY, now + WEEK)
    assert len(made.token_id) == 22  # a Kafka UUID's text
    assert made.hmac == hmac.digest(SECRET.encode(), made.token_id.encode(), hashlib.sha512)
    token = cluster.controller.image.delegation_tokens.tokens[made.token_id]
    assert token == DelegationTokenRecord(
        owner="User:alice", requester="User:alice", renewers=("User:bob",),
        issue_timestamp=now, max_timestamp=now + WEEK, expiration_timestamp=now + DAY,
        token_id=made.token_id)
    assert cluster.replayed_image() == cluster.controller.image  # a broker sees the same


def test_create_for_another_owner_and_a_shorter_life() -> None:
    cluster = started()
    made = create(cluster, "admin", owner="carol", max_lifetime_ms=1000)
    assert (made.principal_name, made.token_requester_principal_name) == ("carol", "admin")
    assert made.max_timestamp_ms == made.expiry_timestamp_ms == cluster.now + 1000
    token = cluster.controller.image.delegation_tokens.tokens[made.token_id]
    assert (token.owner, token.requester) == ("User:carol", "User:admin")


@pytest.mark.parametrize(("properties", "mv", "renewer_type", "code"), [
    ({}, 21, "User", ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED),
    ({"delegation.token.secret.key": ""}, 21, "User", ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED),
    ({"delegation.token.secret.key": SECRET}, MV_3_6_IV1, "User", ErrorCode.UNSUPPORTED_VERSION),
    ({"delegation.token.secret.key": SECRET}, 21, "Group", ErrorCode.INVALID_PRINCIPAL_TYPE),
])
def test_create_refusals_write_nothing(properties: dict[str, str], mv: int, renewer_type: str,
                                       code: ErrorCode) -> None:
    cluster = started(properties, mv)
    records = len(cluster.raft.metadata_records())
    made = create(cluster, renewers=("x",), renewer_type=renewer_type)
    assert made.error_code == code
    assert (made.principal_name, made.token_id, made.hmac, made.max_timestamp_ms) == (
        "alice", "", b"", 0)
    assert len(cluster.raft.metadata_records()) == records


def test_renew_moves_the_expiry_never_past_the_maximum() -> None:
    cluster = started()
    made = create(cluster, renewers=("bob",))
    cluster.tick(1000)
    renewed = renew(cluster, made.hmac, "bob", period_ms=5000)
    assert renewed == RenewDelegationTokenResponse(error_code=ErrorCode.NONE,
                                                   expiry_timestamp_ms=cluster.now + 5000)
    token = cluster.controller.image.delegation_tokens.tokens[made.token_id]
    assert token.expiration_timestamp == cluster.now + 5000
    short = create(cluster, max_lifetime_ms=10_000)
    assert renew(cluster, short.hmac).expiry_timestamp_ms == short.max_timestamp_ms


def test_renew_refusals() -> None:
    cluster = started()
    made = create(cluster, max_lifetime_ms=1000)
    assert renew(cluster, b"no such hmac").error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    assert renew(cluster, made.hmac, "mallory").error_code == (
        ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
    cluster.now += 1001  # expired, not yet swept
    assert renew(cluster, made.hmac).error_code == ErrorCode.DELEGATION_TOKEN_EXPIRED


def test_expire_now_removes_the_token_and_a_period_shortens_it() -> None:
    cluster = started()
    first, second = create(cluster), create(cluster)
    assert expire(cluster, first.hmac) == ExpireDelegationTokenResponse(
        error_code=ErrorCode.NONE, expiry_timestamp_ms=cluster.now)
    assert first.token_id not in cluster.controller.image.delegation_tokens.tokens
    assert isinstance(cluster.raft.metadata_records()[-1].message, RemoveDelegationTokenRecord)
    assert expire(cluster, second.hmac, period_ms=10).expiry_timestamp_ms == cluster.now + 10
    assert expire(cluster, first.hmac).error_code == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    cluster.now += 11
    assert expire(cluster, second.hmac, period_ms=10).error_code == (
        ErrorCode.DELEGATION_TOKEN_EXPIRED)
    assert expire(cluster, second.hmac, "bob").error_code == (
        ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)


def test_the_sweep_removes_expired_tokens_every_check_interval() -> None:
    cluster = started({"delegation.token.secret.key": SECRET,
                       "delegation.token.expiry.check.interval.ms": "60000"})
    short, long = create(cluster, max_lifetime_ms=100), create(cluster)
    cluster.tick(200)
    tokens = cluster.controller.image.delegation_tokens.tokens
    assert short.token_id in tokens  # expired, but the sweep has not run yet
    deadline = cluster.controller.next_deadline_ms()
    assert deadline is not None and deadline <= cluster.now + 60_000
    cluster.tick(60_000)
    cluster.commit()
    assert set(cluster.controller.image.delegation_tokens.tokens) == {long.token_id}


def test_a_sweep_past_its_limit_runs_again_at_once() -> None:
    cluster = started({"delegation.token.secret.key": SECRET})
    for _ in range(MAX_RECORDS_PER_EXPIRATION + 5):
        create(cluster, max_lifetime_ms=1)
    cluster.tick(3_600_000)
    cluster.commit()
    assert not cluster.controller.image.delegation_tokens.tokens


def test_not_controller_answers_keep_their_shape() -> None:
    body = CreateDelegationTokenRequest(renewers=(), max_lifetime_ms=-1)
    answer = error_response(TokenRequest(body, "User", "alice"), ErrorCode.NOT_CONTROLLER)
    assert isinstance(answer, CreateDelegationTokenResponse)
    assert (answer.error_code, answer.principal_name, answer.max_timestamp_ms) == (
        ErrorCode.NOT_CONTROLLER, "ANONYMOUS", -1)


def test_a_duration_below_one_is_refused_at_start() -> None:
    with pytest.raises(ConfigError, match=r"delegation\.token\.max\.lifetime\.ms"):
        Cluster(properties={"delegation.token.max.lifetime.ms": "0"})
