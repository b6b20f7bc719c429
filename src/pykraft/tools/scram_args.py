"""``storage format --add-scram``: Kafka's ScramParser syntax, defaults and messages.

An argument reads ``SCRAM-SHA-256=[name=alice,password=alice-secret]``; inside the brackets
``name`` is required, then either ``password`` or ``saltedpassword`` (base64, which needs
``salt``); ``salt`` (base64) defaults to random bytes, ``iterations`` to 4096 and must lie in
4096..16384. A value may be double-quoted. Each argument becomes one
UserScramCredentialRecord of the bootstrap checkpoint (KIP-900), so the credential is in the
image before the first broker needs it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable

from pykraft.errors import PyKraftError
from pykraft.image.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramMechanism,
    salted_password,
)
from pykraft.records.metadata import UserScramCredentialRecord

DEFAULT_ITERATIONS = 4096
_JAVA_INT = re.compile(r"[+-]?\d{1,10}")


class ScramArgumentError(PyKraftError):
    """An --add-scram argument Kafka's formatter would refuse; nothing was written."""


def _components(config: str) -> dict[str, str]:
    components = {}
    for component in config.split(","):
        key, sep, value = component.partition("=")
        if not sep:
            raise ScramArgumentError(f"No equals sign found in SCRAM component: {component}")
        if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        components[key] = value
    return components


def _base64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ScramArgumentError(f"Failed to decode given {what}: {value}") from None


def _iterations(value: str | None) -> int:
    if value is None:
        return DEFAULT_ITERATIONS
    if not _JAVA_INT.fullmatch(value) or not -(2**31) <= int(value) < 2**31:
        raise ScramArgumentError(f"Failed to parse iterations count: {value}")
    return int(value)


def parse_add_scram(argument: str, *, new_salt: Callable[[], bytes]
                    ) -> UserScramCredentialRecord:
    """The record for one --add-scram argument; ``new_salt`` salts when none is given."""
    text = argument.strip()
    mechanism_name, sep, config = text.partition("=")
    if not sep:
        raise ScramArgumentError(f"Failed to find equals sign in SCRAM argument '{text}'")
    mechanism = ScramMechanism.named(mechanism_name)
    if mechanism is ScramMechanism.UNKNOWN:
        raise ScramArgumentError(
            f"The add-scram mechanism {mechanism_name} is not supported.")
    if not config.startswith("["):
        raise ScramArgumentError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise ScramArgumentError("Expected configuration string to end with ]")
    components = _components(config[1:-1])
    name = components.pop("name", None)
    if name is None:
        raise ScramArgumentError("You must supply 'name' to add-scram")
    salt_text = components.pop("salt", None)
    salt = None if salt_text is None else _base64(salt_text, "salt")
    iterations = _iterations(components.pop("iterations", None))
    password = components.pop("password", None)
    salted_text = components.pop("saltedpassword", None)
    secret: str | bytes  # the password, or the password already salted
    if password is not None:
        secret = password
    elif salted_text is None:
        raise ScramArgumentError(
            "You must supply one of 'password' or 'saltedpassword' to add-scram")
    elif salt is None:
        raise ScramArgumentError("You must supply 'salt' with 'saltedpassword' to add-scram")
    else:
        secret = _base64(salted_text, "saltedPassword")
    if components:
        raise ScramArgumentError(f"Unknown SCRAM configurations: {', '.join(sorted(components))}")
    if iterations < MIN_ITERATIONS:
        raise ScramArgumentError(f"The 'iterations' value must be >= {MIN_ITERATIONS} for "
                                 f"add-scram using {mechanism.name}")
    if iterations > MAX_ITERATIONS:
        raise ScramArgumentError(f"The 'iterations' value must be <= {MAX_ITERATIONS} for "
                                 f"add-scram using {mechanism.name}")
    salt = new_salt() if salt is None else salt
    salted = secret if isinstance(secret, bytes) else salted_password(
        mechanism, secret, salt, iterations)
    credential = ScramCredential.from_salted_password(mechanism, salt, iterations, salted)
    return UserScramCredentialRecord(
        name=name, mechanism=mechanism, salt=credential.salt,
        stored_key=credential.stored_key, server_key=credential.server_key,
        iterations=iterations)
