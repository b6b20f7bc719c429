"""Who may manage delegation tokens, before the controller decides (Kafka's KafkaApis and
ControllerApis checks).

A token lets its holder act as its owner, so tokens are handed out only to a client that
authenticated with something stronger: never over PLAINTEXT, never to the anonymous client
of a one-way SSL listener, never to a client that authenticated with a token itself (it
could otherwise extend its own life). A forwarded request came over the broker's connection
to the controller, whose protocol says nothing about the client's: only the token check
applies to it (the broker made the others). Creating a token for another owner needs
CREATE_TOKENS on that owner's USER resource; a broker refuses renewers that are not users
before forwarding. Every refusal is answered as Kafka's ``prepareResponse`` does: owner and
requester named, timestamps -1, no token.
"""

from __future__ import annotations

from pykraft.image.acls import AclOperation, ResourceType
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
from pykraft.security.api_rules import Access
from pykraft.security.session import ANONYMOUS, KafkaPrincipal, SecurityProtocol, Session

USER_TYPE = "User"
ERROR_TIMESTAMP = -1  # Kafka's DelegationTokenManager.ERROR_TIMESTAMP

TokenResponse = (CreateDelegationTokenResponse | RenewDelegationTokenResponse
                 | ExpireDelegationTokenResponse)


def tokens_allowed(session: Session) -> bool:
    """Kafka's ``allowTokenRequests``."""
    principal = session.principal
    if principal.token_authenticated:
        return False
    if session.forwarded:
        return True
    protocol = session.security_protocol
    return not (protocol == SecurityProtocol.PLAINTEXT
                or (protocol == SecurityProtocol.SSL and principal == ANONYMOUS))


def token_owner(request: CreateDelegationTokenRequest, session: Session) -> KafkaPrincipal:
    """The owner a create asks for (KIP-373), the requester itself when it names none."""
    if request.owner_principal_name:
        return KafkaPrincipal(request.owner_principal_type or "", request.owner_principal_name)
    return session.principal


def token_refusal(body: object, access: Access, *, broker: bool) -> TokenResponse | None:
    """The answer refusing a token request before the controller sees it, or None;
    ``broker``: the broker's checks (before forwarding), else the controller's."""
    session = access.session
    allowed = tokens_allowed(session)
    if isinstance(body, CreateDelegationTokenRequest):
        owner = token_owner(body, session)
        code = _create_refusal(body, access, owner, allowed=allowed, broker=broker)
        return None if code is None else create_refusal(code, owner, session.principal)
    if allowed:
        return None
    if isinstance(body, RenewDelegationTokenRequest):
        return RenewDelegationTokenResponse(
            error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            expiry_timestamp_ms=ERROR_TIMESTAMP)
    assert isinstance(body, ExpireDelegationTokenRequest)
    return ExpireDelegationTokenResponse(
        error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
        expiry_timestamp_ms=ERROR_TIMESTAMP)


def _create_refusal(body: CreateDelegationTokenRequest, access: Access, owner: KafkaPrincipal,
                    *, allowed: bool, broker: bool) -> ErrorCode | None:
    if not allowed:
        return ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    if owner != access.session.principal and not access.allows(
            AclOperation.CREATE_TOKENS, ResourceType.USER, str(owner)):
        return ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    if broker and any(r.principal_type != USER_TYPE for r in body.renewers):
        return ErrorCode.INVALID_PRINCIPAL_TYPE
    return None


def create_refusal(code: ErrorCode, owner: KafkaPrincipal,
                   requester: KafkaPrincipal) -> CreateDelegationTokenResponse:
    """Kafka's ``CreateDelegationTokenResponse.prepareResponse`` for an error."""
    return CreateDelegationTokenResponse(
        error_code=code, principal_type=owner.principal_type, principal_name=owner.name,
        token_requester_principal_type=requester.principal_type,
        token_requester_principal_name=requester.name, issue_timestamp_ms=ERROR_TIMESTAMP,
        expiry_timestamp_ms=ERROR_TIMESTAMP, max_timestamp_ms=ERROR_TIMESTAMP)
