"""``pykraft delegation-tokens``: Kafka's ``kafka-delegation-tokens.sh`` (DelegationTokenCommand).

Each action prints what Kafka's prints: the call it makes (``*_call``, printed before any
request, so it stands on stdout whether the call succeeds or not), then the outcome (the
async functions); tokens as its table (``%-15s %-30s ...``, each row after a blank line)
with dates in the local time zone as ``yyyy-MM-dd'T'HH:mm``. Token management works only
over an authenticated connection (the brokers refuse it over PLAINTEXT), so
``--command-config`` names the client's security settings. A failed call raises
:class:`~pykraft.tools.admin_client.ApiError` with Kafka's message for the code.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Sequence

from pykraft.messages.kafka.create_delegation_token_request import (
    CreatableRenewers,
    CreateDelegationTokenRequest,
)
from pykraft.messages.kafka.describe_delegation_token_request import (
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
)
from pykraft.messages.kafka.describe_delegation_token_response import (
    DescribedDelegationToken,
    DescribedDelegationTokenRenewer,
)
from pykraft.messages.kafka.expire_delegation_token_request import ExpireDelegationTokenRequest
from pykraft.messages.kafka.renew_delegation_token_request import RenewDelegationTokenRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.security.session import KafkaPrincipal
from pykraft.tools.admin_client import AdminClient, ApiError

_ROW = "\n{:<15} {:<30} {:<15} {:<15} {:<25} {:<15} {:<15} {:<15}\n"
#: Kafka's exception messages for the token errors (their Errors' defaults).
_MESSAGES = {
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: "Delegation Token feature is not enabled.",
    ErrorCode.DELEGATION_TOKEN_NOT_FOUND: "Delegation Token is not found on server.",
    ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH: "Specified Principal is not valid Owner/Renewer.",
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED:
        "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on "
        "delegation token authenticated channels.",
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED: "Delegation Token authorization failed.",
    ErrorCode.DELEGATION_TOKEN_EXPIRED: "Delegation Token is expired.",
    ErrorCode.INVALID_PRINCIPAL_TYPE: "Request principal type is not supported.",
}


def _check(error_code: int) -> None:
    if error_code != ErrorCode.NONE:
        code = ErrorCode(error_code)
        raise ApiError(code, _MESSAGES.get(code))


def date(timestamp_ms: int) -> str:
    """Kafka's SimpleDateFormat("yyyy-MM-dd'T'HH:mm"), in the local time zone."""
    return datetime.datetime.fromtimestamp(timestamp_ms / 1000).strftime("%Y-%m-%dT%H:%M")


def _principals(principals: Sequence[KafkaPrincipal]) -> str:
    """A Java list's text: ``[User:bob, User:carol]``."""
    return "[" + ", ".join(str(p) for p in principals) + "]"


def token_table(tokens: Sequence[DescribedDelegationToken]) -> str:
    """Kafka's ``printToken``: the header, then a row a token."""
    text = _ROW.format("TOKENID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUEDATE",
                       "EXPIRYDATE", "MAXDATE")
    for t in tokens:
        renewers = _principals([KafkaPrincipal(r.principal_type, r.principal_name)
                                for r in t.renewers])
        text += _ROW.format(
            t.token_id, base64.b64encode(t.hmac).decode(),
            f"{t.principal_type}:{t.principal_name}",
            f"{t.token_requester_principal_type}:{t.token_requester_principal_name}",
            renewers, date(t.issue_timestamp), date(t.expiry_timestamp),
            date(t.max_timestamp))
    return text


def create_call(renewers: Sequence[KafkaPrincipal], max_life_time_ms: int) -> str:
    """``--create``'s first line."""
    return (f"Calling create token operation with renewers :{_principals(renewers)} , "
            f"max-life-time-period :{max_life_time_ms}\n")


async def create(admin: AdminClient, renewers: Sequence[KafkaPrincipal],
                 max_life_time_ms: int, owner: KafkaPrincipal | None) -> str:
    """``--create``'s outcome: the new token's id and its table."""
    answer = await admin.request(CreateDelegationTokenRequest(
        owner_principal_type="" if owner is None else owner.principal_type,
        owner_principal_name="" if owner is None else owner.name,
        renewers=tuple(CreatableRenewers(principal_type=r.principal_type,
                                         principal_name=r.name) for r in renewers),
        max_lifetime_ms=max_life_time_ms))
    _check(answer.error_code)
    token = DescribedDelegationToken(
        principal_type=answer.principal_type, principal_name=answer.principal_name,
        token_requester_principal_type=answer.token_requester_principal_type,
        token_requester_principal_name=answer.token_requester_principal_name,
        issue_timestamp=answer.issue_timestamp_ms, expiry_timestamp=answer.expiry_timestamp_ms,
        max_timestamp=answer.max_timestamp_ms, token_id=answer.token_id, hmac=answer.hmac,
        renewers=tuple(DescribedDelegationTokenRenewer(  # Kafka's admin: the ones asked for
            principal_type=r.principal_type, principal_name=r.name) for r in renewers))
    return f"Created delegation token with tokenId : {answer.token_id}\n" + token_table([token])


def renew_call(hmac: str, renew_time_period_ms: int) -> str:
    return f"Calling renew token operation with hmac :{hmac} , renew-time-period " \
           f":{renew_time_period_ms}\n"


def expire_call(hmac: str, expiry_time_period_ms: int) -> str:
    return f"Calling expire token operation with hmac :{hmac} , expire-time-period " \
           f":{expiry_time_period_ms}\n"


async def renew(admin: AdminClient, hmac: str, period_ms: int) -> str:
    return await _new_expiry(admin, "renew", hmac, period_ms)


async def expire(admin: AdminClient, hmac: str, period_ms: int) -> str:
    return await _new_expiry(admin, "expire", hmac, period_ms)


async def _new_expiry(admin: AdminClient, action: str, hmac: str, period_ms: int) -> str:
    """``--renew`` or ``--expire``'s outcome: the token's new expiry."""
    raw = base64.b64decode(hmac)
    request: RenewDelegationTokenRequest | ExpireDelegationTokenRequest = (
        RenewDelegationTokenRequest(hmac=raw, renew_period_ms=period_ms) if action == "renew"
        else ExpireDelegationTokenRequest(hmac=raw, expiry_time_period_ms=period_ms))
    answer = await admin.request(request)
    _check(answer.error_code)
    return f"Completed {action} operation. New expiry date : {date(answer.expiry_timestamp_ms)}"


def describe_call(owners: Sequence[KafkaPrincipal]) -> str:
    return (f"Calling describe token operation for owners: {_principals(owners)}\n"
            if owners else "Calling describe token operation for current user.\n")


async def describe(admin: AdminClient, owners: Sequence[KafkaPrincipal]) -> str:
    """``--describe``'s outcome: the tokens of ``owners``. Without any, Kafka's tool says it
    asks for the current user's, yet sends an empty owner list (not null, which would mean
    every token the user may see), and Kafka's brokers answer that with no token: this tool
    sends the same, so both print the same from any broker."""
    answer = await admin.request(DescribeDelegationTokenRequest(owners=tuple(
        DescribeDelegationTokenOwner(principal_type=o.principal_type, principal_name=o.name)
        for o in owners)))
    _check(answer.error_code)
    return f"Total number of tokens : {len(answer.tokens)}" + token_table(answer.tokens)
