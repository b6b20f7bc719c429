"""Delegation tokens (KIP-48, KRaft: KIP-900), as Kafka's DelegationTokenControlManager
decides them.

A token belongs to its owner (the requester, or the principal CreateDelegationToken names,
KIP-373); its owner and renewers may renew and expire it. Its id is a random Kafka UUID and
its HMAC (the token's password) HmacSHA512 of the id with ``delegation.token.secret.key``;
renew and expire name a token by that HMAC. The checks come in Kafka's order: tokens off
(no secret: DELEGATION_TOKEN_AUTH_DISABLED), a metadata.version before 3.6-IV2
(UNSUPPORTED_VERSION), no such token, expired, not the owner or a renewer. Whether the
request may ask for tokens at all (not over a token's own authentication, not over an
unauthenticated channel) is the listener's to say before it gets here.

Every request carries the principal it is judged as (:class:`TokenRequest`, Kafka's
ControllerRequestContext), since the answer depends on who asks. Expired tokens are removed
by the controller's periodic sweep, at most :data:`MAX_RECORDS_PER_EXPIRATION` a run.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.config.delegation_tokens import TokenConfig
from pykraft.controller.context import ControllerContext, ControllerResult
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.image.delegation_tokens import MV_3_6_IV2, is_expired, token_hmac
from pykraft.messages.kafka.create_delegation_token_request import CreateDelegationTokenRequest
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

USER_TYPE = "User"
MAX_RECORDS_PER_EXPIRATION = 1000  # Kafka's DelegationTokenControlManager, per sweep
_LONG_MAX = 2**63 - 1

TokenBody = (CreateDelegationTokenRequest | RenewDelegationTokenRequest
             | ExpireDelegationTokenRequest)


@dataclass(frozen=True, slots=True)
class TokenRequest:
    """A token request with the principal it came from (``User:alice`` as type and name)."""

    body: TokenBody
    principal_type: str
    principal_name: str

    @property
    def principal(self) -> str:
        return f"{self.principal_type}:{self.principal_name}"


def _sum(now_ms: int, duration_ms: int) -> int:
    """Kafka's saturating ``sum``: a lifetime never wraps past Long.MAX_VALUE."""
    return min(now_ms + duration_ms, _LONG_MAX)


def _refusal(ctx: ControllerContext, tokens: TokenConfig) -> ErrorCode | None:
    if not tokens.enabled:
        return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    if ctx.metadata_version < MV_3_6_IV2:
        return ErrorCode.UNSUPPORTED_VERSION
    return None


def create_delegation_token(ctx: ControllerContext, request: TokenRequest) -> ControllerResult:
    body = request.body
    assert isinstance(body, CreateDelegationTokenRequest)
    tokens = ctx.config.tokens
    owner_type, owner_name = ((body.owner_principal_type or "", body.owner_principal_name)
                              if body.owner_principal_name else
                              (request.principal_type, request.principal_name))
    response = CreateDelegationTokenResponse(
        principal_type=owner_type, principal_name=owner_name,
        token_requester_principal_type=request.principal_type,
        token_requester_principal_name=request.principal_name)
    if (refusal := _refusal(ctx, tokens)) is not None:
        return ControllerResult((), dataclasses.replace(response, error_code=refusal))
    lifetime = tokens.max_lifetime_ms
    if body.max_lifetime_ms > 0:
        lifetime = min(lifetime, body.max_lifetime_ms)
    now = ctx.now_ms
    max_timestamp = _sum(now, lifetime)
    expiry = min(max_timestamp, _sum(now, tokens.expiry_time_ms))
    token_id = uuid_to_str(random_uuid(lambda: uuid.UUID(int=ctx.rng.getrandbits(128))))
    if any(r.principal_type != USER_TYPE for r in body.renewers):
        return ControllerResult((), dataclasses.replace(
            response, error_code=ErrorCode.INVALID_PRINCIPAL_TYPE))
    assert tokens.secret_key is not None
    record = DelegationTokenRecord(
        owner=f"{owner_type}:{owner_name}", requester=request.principal,
        renewers=tuple(f"{r.principal_type}:{r.principal_name}" for r in body.renewers),
        issue_timestamp=now, max_timestamp=max_timestamp, expiration_timestamp=expiry,
        token_id=token_id)
    return ControllerResult((record,), dataclasses.replace(
        response, issue_timestamp_ms=now, expiry_timestamp_ms=expiry,
        max_timestamp_ms=max_timestamp, token_id=token_id,
        hmac=token_hmac(tokens.secret_key, token_id)))


def _token(ctx: ControllerContext, hmac: bytes) -> DelegationTokenRecord | ErrorCode:
    """The token ``hmac`` names, or the first refusal before its expiry is looked at."""
    tokens = ctx.config.tokens
    if (refusal := _refusal(ctx, tokens)) is not None:
        return refusal
    assert tokens.secret_key is not None
    token = ctx.image.delegation_tokens.by_hmac(tokens.secret_key, hmac)
    return ErrorCode.DELEGATION_TOKEN_NOT_FOUND if token is None else token


def _may_renew(token: DelegationTokenRecord, principal: str) -> bool:
    """Kafka's ``allowedToRenew``: the owner or one of the renewers."""
    return token.owner == principal or principal in token.renewers


def renew_delegation_token(ctx: ControllerContext, request: TokenRequest) -> ControllerResult:
    body = request.body
    assert isinstance(body, RenewDelegationTokenRequest)
    token = _token(ctx, body.hmac)
    if not isinstance(token, ErrorCode) and is_expired(token, ctx.now_ms):
        token = ErrorCode.DELEGATION_TOKEN_EXPIRED
    if not isinstance(token, ErrorCode) and not _may_renew(token, request.principal):
        token = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    if isinstance(token, ErrorCode):
        return ControllerResult((), RenewDelegationTokenResponse(error_code=token))
    period = ctx.config.tokens.expiry_time_ms
    if body.renew_period_ms > 0:
        period = min(period, body.renew_period_ms)
    expiry = min(token.max_timestamp, ctx.now_ms + period)
    renewed = dataclasses.replace(token, expiration_timestamp=expiry)
    return ControllerResult((renewed,), RenewDelegationTokenResponse(
        error_code=ErrorCode.NONE, expiry_timestamp_ms=expiry))


def expire_delegation_token(ctx: ControllerContext, request: TokenRequest) -> ControllerResult:
    """A negative period expires the token at once (even an expired one); otherwise its
    expiry moves to now plus the period, never past its maximum."""
    body = request.body
    assert isinstance(body, ExpireDelegationTokenRequest)
    token = _token(ctx, body.hmac)
    if not isinstance(token, ErrorCode) and not _may_renew(token, request.principal):
        token = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    if isinstance(token, ErrorCode):
        return ControllerResult((), ExpireDelegationTokenResponse(error_code=token))
    now = ctx.now_ms
    if body.expiry_time_period_ms < 0:
        return ControllerResult((RemoveDelegationTokenRecord(token_id=token.token_id),),
                                ExpireDelegationTokenResponse(error_code=ErrorCode.NONE,
                                                              expiry_timestamp_ms=now))
    if is_expired(token, now):
        return ControllerResult((), ExpireDelegationTokenResponse(
            error_code=ErrorCode.DELEGATION_TOKEN_EXPIRED))
    expiry = min(token.max_timestamp, _sum(now, body.expiry_time_period_ms))
    renewed = dataclasses.replace(token, expiration_timestamp=expiry)
    return ControllerResult((renewed,), ExpireDelegationTokenResponse(
        error_code=ErrorCode.NONE, expiry_timestamp_ms=expiry))


def sweep_expired_tokens(ctx: ControllerContext) -> tuple[list[RemoveDelegationTokenRecord],
                                                           bool]:
    """The removals of expired tokens, at most MAX_RECORDS_PER_EXPIRATION, and whether more
    remain (then the next sweep runs at once, as Kafka's periodic task reruns)."""
    tokens = ctx.image.delegation_tokens.tokens
    expired = [token_id for token_id in sorted(tokens) if is_expired(tokens[token_id],
                                                                      ctx.now_ms)]
    return ([RemoveDelegationTokenRecord(token_id=t)
             for t in expired[:MAX_RECORDS_PER_EXPIRATION]],
            len(expired) > MAX_RECORDS_PER_EXPIRATION)


OPERATIONS: dict[type, Callable[[ControllerContext, TokenRequest], ControllerResult]] = {
    CreateDelegationTokenRequest: create_delegation_token,
    RenewDelegationTokenRequest: renew_delegation_token,
    ExpireDelegationTokenRequest: expire_delegation_token,
}


def operate(ctx: ControllerContext, request: TokenRequest) -> ControllerResult:
    return OPERATIONS[type(request.body)](ctx, request)
