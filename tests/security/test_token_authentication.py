"""Delegation tokens outside the controller: SCRAM with ``tokenauth=true``, who may send
token requests at all, the principal serde's token flag, and DescribeDelegationToken's
filter."""

from __future__ import annotations

import uuid

import pytest
import scramp

from pykraft.broker.token_describe import describe_delegation_tokens
from pykraft.config.authorizer import AuthorizerConfig
from pykraft.config.delegation_tokens import TokenConfig
from pykraft.image.acls import (
    AclOperation,
    AclPermissionType,
    AclsImage,
    PatternType,
    StandardAcl,
)
from pykraft.image.acls import ResourceType as T
from pykraft.image.delegation_tokens import DelegationTokensImage, hmac_text, token_hmac
from pykraft.image.scram import ScramCredential, ScramImage, ScramMechanism
from pykraft.messages.kafka.create_delegation_token_request import (
    CreatableRenewers,
    CreateDelegationTokenRequest,
)
from pykraft.messages.kafka.create_delegation_token_response import (
    CreateDelegationTokenResponse,
)
from pykraft.messages.kafka.describe_delegation_token_request import (
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
)
from pykraft.messages.kafka.renew_delegation_token_request import RenewDelegationTokenRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import DelegationTokenRecord
from pykraft.security.api_rules import Access, AuthorizerCache
from pykraft.security.principal_serde import deserialize_principal, serialize_principal
from pykraft.security.scram import ScramExchangeError, ScramSaslServer
from pykraft.security.session import KafkaPrincipal, SecurityProtocol, Session
from pykraft.security.token_requests import token_refusal, tokens_allowed

SECRET = "s3cret"
TOKEN_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
TOKENS = DelegationTokensImage({TOKEN_ID: DelegationTokenRecord(
    owner="User:alice", requester="User:admin", renewers=("User:bob",), issue_timestamp=1,
    max_timestamp=100, expiration_timestamp=50, token_id=TOKEN_ID)})
SASL = SecurityProtocol.SASL_PLAINTEXT


def session(name: str = "alice", protocol: SecurityProtocol = SASL, *, token: bool = False,
            forwarded: bool = False) -> Session:
    return Session(KafkaPrincipal("User", name, token), "10.0.0.1:5000", "L", protocol,
                   forwarded=forwarded)


def scram_login(token_id: str, password: str, extension: str = ",tokenauth=true"
                ) -> ScramSaslServer:
    """A scramp client's exchange with the extension in its client-first (and so in the
    message its proof signs)."""
    mechanism = ScramMechanism.SCRAM_SHA_512
    ours = ScramSaslServer(mechanism, ScramImage, "server-nonce",
                           lambda tid, m: TOKENS.credential(SECRET, tid, m))
    client = scramp.ScramClient([mechanism.mechanism_name], token_id, password)
    first = client.get_client_first() + extension
    client.client_first_bare += extension
    client.set_server_first(ours.evaluate(first.encode()).decode())
    client.set_server_final(ours.evaluate(client.get_client_final().encode()).decode())
    return ours


def test_a_token_authenticates_as_its_owner_with_its_hmac() -> None:
    ours = scram_login(TOKEN_ID, hmac_text(token_hmac(SECRET, TOKEN_ID)))
    assert (ours.authorization_id, ours.token_authenticated) == ("alice", True)
    assert ours.credential_expiration_ms == 50  # the token's expiry bounds the session


@pytest.mark.parametrize(("token_id", "password", "extension"), [
    (TOKEN_ID, "wrong", ",tokenauth=true"),
    ("AAAAAAAAAAAAAAAAAAAAAg", "x", ",tokenauth=true"),  # no such token
    (TOKEN_ID, hmac_text(token_hmac(SECRET, TOKEN_ID)), ",tokenauth=true,other=1"),
    (TOKEN_ID, hmac_text(token_hmac(SECRET, TOKEN_ID)), ""),  # not a user's credential
])
def test_a_token_is_refused_otherwise(token_id: str, password: str, extension: str) -> None:
    with pytest.raises((ScramExchangeError, scramp.ScramException)):
        scram_login(token_id, password, extension)


def test_a_token_credential_is_the_same_on_every_node() -> None:
    mechanism = ScramMechanism.SCRAM_SHA_256
    found = TOKENS.credential(SECRET, TOKEN_ID, mechanism)
    assert found is not None and found == TOKENS.credential(SECRET, TOKEN_ID, mechanism)
    owner, credential, expiry_ms = found
    assert (owner, expiry_ms) == ("alice", 50) and credential == ScramCredential.from_password(
        mechanism, hmac_text(token_hmac(SECRET, TOKEN_ID)), credential.salt, 4096)


def test_the_principal_serde_carries_the_token_flag() -> None:
    principal = KafkaPrincipal("User", "alice", token_authenticated=True)
    back = deserialize_principal(serialize_principal(principal))
    assert back.token_authenticated and back == KafkaPrincipal("User", "alice")


@pytest.mark.parametrize(("who", "allowed"), [
    (session(), True),
    (session(protocol=SecurityProtocol.PLAINTEXT), False),
    (session("ANONYMOUS", SecurityProtocol.SSL), False),
    (session("CN=client", SecurityProtocol.SSL), True),
    (session(token=True), False),
    (session(protocol=SecurityProtocol.PLAINTEXT, forwarded=True), True),  # the broker checked
    (session(token=True, forwarded=True), False),
])
def test_who_may_send_token_requests(who: Session, allowed: bool) -> None:
    assert tokens_allowed(who) is allowed


def access_of(who: Session, *grants: tuple[T, str, AclOperation]) -> Access:
    """``who``'s access with an authorizer and ACLs allowing it ``grants``."""
    image = AclsImage({uuid.UUID(int=i + 1): StandardAcl(
        resource, name, PatternType.LITERAL, str(who.principal), "*", op,
        AclPermissionType.ALLOW) for i, (resource, name, op) in enumerate(grants)})
    return AuthorizerCache(AuthorizerConfig()).access(lambda: image, who)


def create_for(owner: str | None, renewer_type: str = "User") -> CreateDelegationTokenRequest:
    return CreateDelegationTokenRequest(
        owner_principal_type="User" if owner else None, owner_principal_name=owner,
        renewers=(CreatableRenewers(principal_type=renewer_type, principal_name="r"),),
        max_lifetime_ms=-1)


def test_token_refusals_in_kafkas_order() -> None:
    admin = session("admin")
    no_acl = access_of(admin)
    own = token_refusal(create_for(None), no_acl, broker=True)
    assert own is None
    other = token_refusal(create_for("carol"), no_acl, broker=True)
    assert isinstance(other, CreateDelegationTokenResponse)
    assert (other.error_code, other.max_timestamp_ms) == (
        ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, -1)
    granted = access_of(admin, (T.USER, "User:carol", AclOperation.CREATE_TOKENS))
    assert token_refusal(create_for("carol"), granted, broker=True) is None
    groups = token_refusal(create_for(None, "Group"), no_acl, broker=True)
    assert groups is not None and groups.error_code == ErrorCode.INVALID_PRINCIPAL_TYPE
    assert token_refusal(create_for(None, "Group"), no_acl, broker=False) is None
    plain = AuthorizerCache(None).access(AclsImage,
                                         session(protocol=SecurityProtocol.PLAINTEXT))
    renewal = token_refusal(RenewDelegationTokenRequest(hmac=b"", renew_period_ms=1), plain,
                            broker=True)
    assert renewal is not None and (renewal.error_code, renewal.expiry_timestamp_ms) == (
        ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1)


def describe(who: Session, owners: list[str] | None = None,
             *acls: tuple[T, str, AclOperation]) -> list[str]:
    request = DescribeDelegationTokenRequest(owners=None if owners is None else tuple(
        DescribeDelegationTokenOwner(principal_type="User", principal_name=o) for o in owners))
    answer = describe_delegation_tokens(TOKENS, TokenConfig(SECRET), request,
                                        access_of(who, *acls))
    assert answer.error_code == ErrorCode.NONE
    return [t.token_id for t in answer.tokens]


def test_describe_shows_the_tokens_one_owns_requested_renews_or_may_describe() -> None:
    for name in ("alice", "admin", "bob"):
        assert describe(session(name)) == [TOKEN_ID]
    assert describe(session("eve")) == []
    assert describe(session("eve"), None, (T.USER, "User:alice", AclOperation.DESCRIBE_TOKENS))
    assert describe(session("eve"), None, (T.DELEGATION_TOKEN, TOKEN_ID,
                                           AclOperation.DESCRIBE))
    assert describe(session("alice"), ["bob"]) == [TOKEN_ID]  # bob renews it
    assert describe(session("alice"), ["carol"]) == []
    assert describe(session("alice"), []) == []


def test_describe_refusals() -> None:
    request = DescribeDelegationTokenRequest(owners=None)
    plain = AuthorizerCache(None).access(AclsImage,
                                         session(protocol=SecurityProtocol.PLAINTEXT))
    assert describe_delegation_tokens(TOKENS, TokenConfig(SECRET), request, plain).error_code == (
        ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    sasl = AuthorizerCache(None).access(AclsImage, session())
    assert describe_delegation_tokens(TOKENS, TokenConfig(), request, sasl).error_code == (
        ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED)
    described = describe_delegation_tokens(TOKENS, TokenConfig(SECRET), request, sasl).tokens[0]
    assert described.hmac == token_hmac(SECRET, TOKEN_ID)
    assert (described.principal_name, described.token_requester_principal_name,
            [r.principal_name for r in described.renewers]) == ("alice", "admin", ["bob"])
