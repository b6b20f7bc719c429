"""SCRAM credentials in the metadata log (KIP-554): user -> mechanism -> credential.

Kafka keeps the salted password's two derived keys, never the password: ``StoredKey =
H(HMAC(SaltedPassword, "Client Key"))`` proves a client's proof, ``ServerKey =
HMAC(SaltedPassword, "Server Key")`` signs the server's final message (RFC 5802).
UserScramCredentialRecord adds or replaces one user's credential for one mechanism,
RemoveUserScramCredentialRecord drops it. Kafka writes them into snapshots from
metadata.version 3.5-IV2 on, the first level that knows them.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
from collections.abc import Iterator, KeysView, Mapping
from dataclasses import dataclass, field

from pykraft.records.metadata import RemoveUserScramCredentialRecord, UserScramCredentialRecord

MV_3_5_IV2 = 11  # metadata.version's isScramSupported
MIN_ITERATIONS = 4096  # Kafka's ScramMechanism minIterations, both mechanisms
MAX_ITERATIONS = 16384  # and maxIterations (ScramControlManager.MAX_ITERATIONS)


class ScramMechanism(enum.IntEnum):
    """Kafka's ``ScramMechanism`` type ids (the records' and the admin APIs' int8)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        """``SCRAM-SHA-256``, as SaslHandshake and ``sasl.enabled.mechanisms`` name it."""
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        """The hashlib name of the mechanism's hash (``sha256``); UNKNOWN has none."""
        if self is ScramMechanism.UNKNOWN:
            raise ValueError("the UNKNOWN SCRAM mechanism has no hash")
        return "sha" + self.name.rsplit("_", 1)[1]

    @classmethod
    def of(cls, value: int) -> ScramMechanism:
        """Kafka's ``fromType``: an id it does not know is UNKNOWN."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN

    @classmethod
    def named(cls, name: str) -> ScramMechanism:
        """Kafka's ``fromMechanismName``: ``SCRAM-SHA-512`` -> SCRAM_SHA_512, else UNKNOWN."""
        return next((m for m in cls if m.mechanism_name == name), cls.UNKNOWN)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """One user's credential for one mechanism (Kafka's ScramCredentialData)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # a credential in a log line must not give the keys away
        return "ScramCredential(salt=[hidden], storedKey=[hidden], serverKey=[hidden], " \
               "iterations=[hidden])"

    @classmethod
    def from_salted_password(cls, mechanism: ScramMechanism, salt: bytes, iterations: int,
                             salted_password: bytes) -> ScramCredential:
        """The keys the server keeps, from what AlterUserScramCredentials sends."""
        digest = mechanism.hash_name
        client_key = hmac.digest(salted_password, b"Client Key", digest)
        return cls(salt, hashlib.new(digest, client_key).digest(),
                   hmac.digest(salted_password, b"Server Key", digest), iterations)

    @classmethod
    def from_password(cls, mechanism: ScramMechanism, password: str, salt: bytes,
                      iterations: int) -> ScramCredential:
        """SaltedPassword = Hi(password, salt, i), PBKDF2 with the mechanism's HMAC."""
        return cls.from_salted_password(mechanism, salt, iterations,
                                        salted_password(mechanism, password, salt, iterations))


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes,
                    iterations: int) -> bytes:
    """RFC 5802's Hi(): what a client sends in AlterUserScramCredentials' upsertions."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


Credentials = Mapping[ScramMechanism, Mapping[str, ScramCredential]]


@dataclass(frozen=True, slots=True)
class ScramImage:
    """Mechanism -> user -> credential; a mechanism without users is absent."""

    mechanisms: Credentials = field(default_factory=dict)

    def get(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self.mechanisms.get(mechanism, {}).get(user)

    def users(self) -> list[str]:
        """Every user with at least one credential, sorted."""
        return sorted({user for users in self.mechanisms.values() for user in users})

    def credentials_of(self, user: str) -> list[tuple[ScramMechanism, ScramCredential]]:
        """The user's credentials by mechanism id."""
        return [(mechanism, users[user]) for mechanism, users in sorted(self.mechanisms.items())
                if user in users]

    def records(self, metadata_version: int) -> Iterator[tuple[object, int]]:
        """Kafka's ScramImage.write: nothing below 3.5-IV2, whose nodes cannot read them
        (the controller refuses to create credentials there)."""
        if metadata_version < MV_3_5_IV2:
            return
        for mechanism, users in sorted(self.mechanisms.items()):
            for user in sorted(users):
                credential = users[user]
                yield UserScramCredentialRecord(
                    name=user, mechanism=mechanism, salt=credential.salt,
                    stored_key=credential.stored_key, server_key=credential.server_key,
                    iterations=credential.iterations), 0


class ScramDelta:
    """Credential changes on top of an image; None removes one."""

    def __init__(self, image: ScramImage) -> None:
        self._image = image
        self._changes: dict[tuple[ScramMechanism, str], ScramCredential | None] = {}

    @property
    def touched(self) -> KeysView[tuple[ScramMechanism, str]]:
        """The (mechanism, user) pairs a record touched (Kafka's ``changes()``)."""
        return self._changes.keys()

    def replay(self, record: UserScramCredentialRecord | RemoveUserScramCredentialRecord
               ) -> None:
        key = ScramMechanism.of(record.mechanism), record.name
        if isinstance(record, RemoveUserScramCredentialRecord):
            self._changes[key] = None
        else:
            self._changes[key] = ScramCredential(record.salt, record.stored_key,
                                                 record.server_key, record.iterations)

    def apply(self) -> ScramImage:
        if not self._changes:
            return self._image
        mechanisms = {m: dict(users) for m, users in self._image.mechanisms.items()}
        for (mechanism, user), credential in self._changes.items():
            users = mechanisms.setdefault(mechanism, {})
            if credential is None:
                users.pop(user, None)
            else:
                users[user] = credential
            if not users:
                del mechanisms[mechanism]
        return ScramImage(mechanisms)
