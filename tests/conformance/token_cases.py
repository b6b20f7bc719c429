"""Conformance rows for delegation tokens (KIP-48, KIP-900), with
``delegation.token.secret.key`` set on both clusters (conftest's GROUP_PROPERTIES).

Over PLAINTEXT every token request is refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), on
the broker and on the controller alike. On the broker's SASL listener, authenticated as
alice (PLAIN, no super user): a token for herself, refusals for another owner (no
CREATE_TOKENS) and a renewer that is not a user, renewals and expiries of her tokens and of
unknown HMACs, and a describe that finds her token with its HMAC. A created token's id,
HMAC and timestamps are random or the clock's: rows that make one answer a summary of
what must hold (lifetimes, lengths, the HMAC described equal to the one created)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.cases import BOTH, Case, Meaning, code, settled
from conformance.harness import BROKER, SASL, Run
from conformance.sasl_cases import as_alice, same
from pykraft.messages.kafka.create_delegation_token_request import (
    CreatableRenewers,
    CreateDelegationTokenRequest,
)
from pykraft.messages.kafka.describe_delegation_token_request import (
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
)
from pykraft.messages.kafka.expire_delegation_token_request import ExpireDelegationTokenRequest
from pykraft.messages.kafka.renew_delegation_token_request import RenewDelegationTokenRequest
from pykraft.protocol.apis import ApiKey

SECRET_PROPERTIES = {"delegation.token.secret.key": "conformance-token-secret"}
DAY, WEEK = 86_400_000, 604_800_000
NOT_ALLOWED = "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"
FIRST_OWNER_VERSION = 3  # CreateDelegationToken v3 names an owner (KIP-373)


def create_request(owner: str | None = None, renewer_type: str = "User",
                   renewers: tuple[str, ...] = ()) -> CreateDelegationTokenRequest:
    return CreateDelegationTokenRequest(
        owner_principal_type="" if owner is None else "User", owner_principal_name=owner or "",
        renewers=tuple(CreatableRenewers(principal_type=renewer_type, principal_name=r)
                       for r in renewers), max_lifetime_ms=-1)


def created(run: Run, request: CreateDelegationTokenRequest) -> Any:
    """Alice's CreateDelegationToken at the run's version."""
    return as_alice(run, request)


def created_meaning(body: Any, run: Run) -> Meaning:
    """What a create must answer, whatever the token: code, owner, requester (v3+),
    the lifetimes from issue, and the id's and HMAC's lengths."""
    requester = (f"{body.token_requester_principal_type}:{body.token_requester_principal_name}"
                 if run.version >= FIRST_OWNER_VERSION else None)
    issue = body.issue_timestamp_ms
    return (code(body.error_code), f"{body.principal_type}:{body.principal_name}", requester,
            body.expiry_timestamp_ms - issue if issue > 0 else body.expiry_timestamp_ms,
            body.max_timestamp_ms - issue if issue > 0 else body.max_timestamp_ms,
            len(body.token_id), len(body.hmac))


def create_summary(run: Run, request: CreateDelegationTokenRequest) -> Meaning:
    return created_meaning(created(run, request), run)


def refusal(owner: str, requester: str, error: str) -> Any:
    return lambda run: (error, owner, requester if run.version >= FIRST_OWNER_VERSION
                        else None, -1, -1, 0, 0)


def renew(run: Run, hmac: bytes, period_ms: int = -1) -> Any:
    return RenewDelegationTokenRequest(hmac=hmac, renew_period_ms=period_ms)


def expiry_meaning(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), body.expiry_timestamp_ms


def found(ask: Callable[[], Any]) -> Any:
    """``ask()`` once the controller knows the token just created: Kafka's controller finds
    a token by HMAC in a cache its metadata publisher fills after the create committed, so
    a renew or expire sent at once may not find it yet (pykraft's finds it in its image)."""
    return settled(ask, lambda body: code(body.error_code) != "DELEGATION_TOKEN_NOT_FOUND")


def renewed_own(run: Run) -> Meaning:
    """Alice renews her token for a second: its expiry moves to before the day it had."""
    token = created(run, create_request())
    body = found(lambda: as_alice(run, renew(run, token.hmac, 1000)))
    return code(body.error_code), token.issue_timestamp_ms <= body.expiry_timestamp_ms < (
        token.expiry_timestamp_ms)


def expired_own(run: Run) -> Meaning:
    """Alice expires her token at once: now, not before it was issued."""
    token = created(run, create_request())
    body = found(lambda: as_alice(run, ExpireDelegationTokenRequest(
        hmac=token.hmac, expiry_time_period_ms=-1)))
    return code(body.error_code), token.issue_timestamp_ms <= body.expiry_timestamp_ms


def described_own(run: Run) -> Meaning:
    """Alice's token, described by the broker once its image has it: her own, renewable by
    bob, with the HMAC the create answered."""
    token = created(run, create_request(renewers=("bob",)))

    def mine(body: Any) -> list[Any]:
        return [t for t in body.tokens if t.token_id == token.token_id]

    body = settled(lambda: as_alice(run, DescribeDelegationTokenRequest(owners=None)),
                   lambda answer: bool(mine(answer)))
    return code(body.error_code), [
        (f"{t.principal_type}:{t.principal_name}", t.hmac == token.hmac,
         t.max_timestamp - t.issue_timestamp, [r.principal_name for r in t.renewers])
        for t in mine(body)]


def describe_meaning(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), [t.token_id for t in body.tokens]


def owners(names: list[str] | None) -> DescribeDelegationTokenRequest:
    return DescribeDelegationTokenRequest(owners=None if names is None else tuple(
        DescribeDelegationTokenOwner(principal_type="User", principal_name=n) for n in names))


def fixed(meaning: Meaning) -> Any:
    return lambda _run: meaning


TOKENS = [
    Case("CreateDelegationToken", ApiKey.CREATE_DELEGATION_TOKEN, "plaintext_not_allowed",
         lambda r: r.generated(ApiKey.CREATE_DELEGATION_TOKEN, create_request()),
         created_meaning, refusal("User:ANONYMOUS", "User:ANONYMOUS", NOT_ALLOWED),
         listeners=BOTH),
    Case("CreateDelegationToken", ApiKey.CREATE_DELEGATION_TOKEN, "for_herself",
         lambda r: create_summary(r, create_request()), same,
         lambda r: ("NONE", "User:alice", "User:alice" if r.version >= FIRST_OWNER_VERSION
                    else None, DAY, WEEK, 22, 64), listeners=(SASL,)),
    Case("CreateDelegationToken", ApiKey.CREATE_DELEGATION_TOKEN,
         "for_another_without_create_tokens",
         lambda r: create_summary(r, create_request(owner="bob")), same,
         refusal("User:bob", "User:alice", "DELEGATION_TOKEN_AUTHORIZATION_FAILED"),
         listeners=(SASL,), since=FIRST_OWNER_VERSION),
    Case("CreateDelegationToken", ApiKey.CREATE_DELEGATION_TOKEN, "renewer_not_a_user",
         lambda r: create_summary(r, create_request(renewer_type="Group",
                                                    renewers=("g",))), same,
         refusal("User:alice", "User:alice", "INVALID_PRINCIPAL_TYPE"), listeners=(SASL,)),
    Case("RenewDelegationToken", ApiKey.RENEW_DELEGATION_TOKEN, "plaintext_not_allowed",
         lambda r: r.generated(ApiKey.RENEW_DELEGATION_TOKEN, renew(r, b"x")),
         expiry_meaning, fixed((NOT_ALLOWED, -1)), listeners=BOTH),
    Case("RenewDelegationToken", ApiKey.RENEW_DELEGATION_TOKEN, "unknown_hmac",
         lambda r: as_alice(r, renew(r, b"no such token")), expiry_meaning,
         fixed(("DELEGATION_TOKEN_NOT_FOUND", 0)), listeners=(SASL,)),
    Case("RenewDelegationToken", ApiKey.RENEW_DELEGATION_TOKEN, "owner_renews", renewed_own,
         same, fixed(("NONE", True)), listeners=(SASL,)),
    Case("ExpireDelegationToken", ApiKey.EXPIRE_DELEGATION_TOKEN, "plaintext_not_allowed",
         lambda r: r.generated(ApiKey.EXPIRE_DELEGATION_TOKEN, ExpireDelegationTokenRequest(
             hmac=b"x", expiry_time_period_ms=-1)),
         expiry_meaning, fixed((NOT_ALLOWED, -1)), listeners=BOTH),
    Case("ExpireDelegationToken", ApiKey.EXPIRE_DELEGATION_TOKEN, "unknown_hmac",
         lambda r: as_alice(r, ExpireDelegationTokenRequest(hmac=b"no such token",
                                                            expiry_time_period_ms=-1)),
         expiry_meaning, fixed(("DELEGATION_TOKEN_NOT_FOUND", 0)), listeners=(SASL,)),
    Case("ExpireDelegationToken", ApiKey.EXPIRE_DELEGATION_TOKEN, "owner_expires_now",
         expired_own, same, fixed(("NONE", True)), listeners=(SASL,)),
    Case("DescribeDelegationToken", ApiKey.DESCRIBE_DELEGATION_TOKEN, "plaintext_not_allowed",
         lambda r: r.generated(ApiKey.DESCRIBE_DELEGATION_TOKEN, owners(None)),
         describe_meaning, fixed((NOT_ALLOWED, [])), listeners=(BROKER,)),
    Case("DescribeDelegationToken", ApiKey.DESCRIBE_DELEGATION_TOKEN, "no_owners",
         lambda r: as_alice(r, owners([])), describe_meaning, fixed(("NONE", [])),
         listeners=(SASL,)),
    Case("DescribeDelegationToken", ApiKey.DESCRIBE_DELEGATION_TOKEN, "own_token",
         described_own, same, fixed(("NONE", [("User:alice", True, WEEK, ["bob"])])),
         listeners=(SASL,)),
]
