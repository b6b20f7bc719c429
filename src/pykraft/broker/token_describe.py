"""DescribeDelegationToken (41) from the broker's metadata image (Kafka's KafkaApis
``handleDescribeTokensRequest``), with each token's HMAC derived from the secret key.

Refused as every token request is (:mod:`pykraft.security.token_requests`), then
DELEGATION_TOKEN_AUTH_DISABLED without a secret key. An empty owner list describes nothing,
a null one every token the requester may see: its own (as owner, requester or renewer),
and others' with DESCRIBE on the token or DESCRIBE_TOKENS on the owner's USER resource;
named owners keep only the tokens one of them owns, requested or may renew. Tokens come in
id order (Kafka's follow its cache's hash map).
"""

from __future__ import annotations

from pykraft.config.delegation_tokens import TokenConfig
from pykraft.image.acls import AclOperation, ResourceType
from pykraft.image.delegation_tokens import DelegationTokensImage, token_hmac
from pykraft.messages.kafka.describe_delegation_token_request import (
    DescribeDelegationTokenRequest,
)
from pykraft.messages.kafka.describe_delegation_token_response import (
    DescribedDelegationToken,
    DescribedDelegationTokenRenewer,
    DescribeDelegationTokenResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import DelegationTokenRecord
from pykraft.security.api_rules import Access
from pykraft.security.session import KafkaPrincipal
from pykraft.security.token_requests import tokens_allowed


def _involves(token: DelegationTokenRecord, principal: str) -> bool:
    """Kafka's ``TokenInformation.ownerOrRenewer``: owner, requester or a renewer."""
    return principal in (token.owner, token.requester) or principal in token.renewers


def _eligible(token: DelegationTokenRecord, owners: list[str] | None, access: Access) -> bool:
    """Kafka's ``DelegationTokenManager.filterToken``."""
    if owners is not None and not any(_involves(token, owner) for owner in owners):
        return False
    return (_involves(token, str(access.session.principal))
            or access.allows(AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN,
                             token.token_id)
            or access.allows(AclOperation.DESCRIBE_TOKENS, ResourceType.USER, token.owner))


def _described(token: DelegationTokenRecord, secret_key: str) -> DescribedDelegationToken:
    owner = KafkaPrincipal.parse(token.owner)
    requester = KafkaPrincipal.parse(token.requester)
    renewers = tuple(KafkaPrincipal.parse(r) for r in token.renewers)
    return DescribedDelegationToken(
        principal_type=owner.principal_type, principal_name=owner.name,
        token_requester_principal_type=requester.principal_type,
        token_requester_principal_name=requester.name,
        issue_timestamp=token.issue_timestamp, expiry_timestamp=token.expiration_timestamp,
        max_timestamp=token.max_timestamp, token_id=token.token_id,
        hmac=token_hmac(secret_key, token.token_id),
        renewers=tuple(DescribedDelegationTokenRenewer(principal_type=r.principal_type,
                                                       principal_name=r.name)
                       for r in renewers))


def describe_delegation_tokens(image: DelegationTokensImage, tokens: TokenConfig,
                               request: DescribeDelegationTokenRequest,
                               access: Access) -> DescribeDelegationTokenResponse:
    if not tokens_allowed(access.session):
        return DescribeDelegationTokenResponse(
            error_code=ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    if tokens.secret_key is None:
        return DescribeDelegationTokenResponse(error_code=ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
    owners = (None if request.owners is None else
              [f"{o.principal_type}:{o.principal_name}" for o in request.owners])
    if owners == []:
        return DescribeDelegationTokenResponse(error_code=ErrorCode.NONE)
    secret_key = tokens.secret_key
    return DescribeDelegationTokenResponse(error_code=ErrorCode.NONE, tokens=tuple(
        _described(image.tokens[token_id], secret_key) for token_id in sorted(image.tokens)
        if _eligible(image.tokens[token_id], owners, access)))
