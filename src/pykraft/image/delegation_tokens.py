"""Delegation tokens in the metadata log (KIP-48, KIP-900): token id -> the token's record.

The active controller writes the records (a DelegationTokenRecord creates or renews a
token, a RemoveDelegationTokenRecord expires it) and every node keeps them, in its snapshots
too, as Kafka's DelegationTokenImage does. The record holds no HMAC: every node derives it
from ``delegation.token.secret.key`` (HmacSHA512 of the token id), so a leaked log or
snapshot gives no token away, and a client proves it holds a token by that HMAC: as the
password of a SCRAM exchange, or to renew, expire or find it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterator, KeysView, Mapping
from dataclasses import dataclass, field

from pykraft.image.scram import MIN_ITERATIONS, ScramCredential, ScramMechanism
from pykraft.records.metadata import DelegationTokenRecord, RemoveDelegationTokenRecord

MV_3_6_IV2 = 14  # metadata.version's isDelegationTokenSupported


def token_hmac(secret_key: str, token_id: str) -> bytes:
    """Kafka's ``createHmac``: HmacSHA512 of the token id's UTF-8, keyed by the secret's."""
    return hmac.digest(secret_key.encode(), token_id.encode(), hashlib.sha512)


def hmac_text(token_hmac_bytes: bytes) -> str:
    """The HMAC as a token's SCRAM password (Kafka's ``hmacAsBase64String``)."""
    return base64.b64encode(token_hmac_bytes).decode("ascii")


def is_expired(token: DelegationTokenRecord, now_ms: int) -> bool:
    """Past its expiry or its maximum lifetime (Kafka's checks, strictly after either)."""
    return token.max_timestamp < now_ms or token.expiration_timestamp < now_ms


@dataclass(frozen=True, slots=True)
class DelegationTokensImage:
    """Token id -> its latest DelegationTokenRecord (Kafka's DelegationTokenData)."""

    tokens: Mapping[str, DelegationTokenRecord] = field(default_factory=dict)

    def records(self, metadata_version: int) -> Iterator[tuple[object, int]]:
        """Kafka's DelegationTokenImage.write: nothing below 3.6-IV2, whose nodes cannot
        read them (Kafka's controller creates no token there)."""
        if metadata_version < MV_3_6_IV2:
            return
        for token_id in sorted(self.tokens):
            yield self.tokens[token_id], 0

    def credential(self, secret_key: str, token_id: str,
                   mechanism: ScramMechanism) -> tuple[str, ScramCredential, int] | None:
        """The owner's name, the SCRAM credential and the expiry timestamp of token
        ``token_id``; the credential's password is its HMAC in base64 (Kafka's
        DelegationTokenManager salts it at the mechanism's minimum iterations; the salt
        derives from the id, so every node agrees on it)."""
        token = self.tokens.get(token_id)
        if token is None:
            return None
        password = hmac_text(token_hmac(secret_key, token_id)).encode()
        salt = hashlib.sha256(token_id.encode()).digest()[:16]
        salted = hashlib.pbkdf2_hmac(mechanism.hash_name, password, salt, MIN_ITERATIONS)
        credential = ScramCredential.from_salted_password(mechanism, salt, MIN_ITERATIONS,
                                                          salted)
        return token.owner.partition(":")[2], credential, token.expiration_timestamp

    def by_hmac(self, secret_key: str, token_hmac_bytes: bytes) -> DelegationTokenRecord | None:
        """The token whose HMAC under ``secret_key`` is ``token_hmac_bytes`` (Kafka's
        ``tokenForHmac``; derived here rather than cached, so a node never holds one)."""
        return next((token for token_id, token in self.tokens.items()
                     if hmac.compare_digest(token_hmac(secret_key, token_id),
                                            token_hmac_bytes)), None)


class DelegationTokensDelta:
    """Token changes on top of an image; None removes one."""

    def __init__(self, image: DelegationTokensImage) -> None:
        self._image = image
        self._changes: dict[str, DelegationTokenRecord | None] = {}

    @property
    def touched(self) -> KeysView[str]:
        """The token ids a record touched (Kafka's ``changes()``)."""
        return self._changes.keys()

    def replay(self, record: DelegationTokenRecord | RemoveDelegationTokenRecord) -> None:
        self._changes[record.token_id] = (
            record if isinstance(record, DelegationTokenRecord) else None)

    def apply(self) -> DelegationTokensImage:
        if not self._changes:
            return self._image
        tokens: dict[str, DelegationTokenRecord | None] = {**self._image.tokens,
                                                            **self._changes}
        return DelegationTokensImage({token_id: record for token_id, record in tokens.items()
                                      if record is not None})
