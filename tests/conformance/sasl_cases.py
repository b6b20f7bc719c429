"""Conformance rows for SASL's two APIs on listeners without SASL (PLAINTEXT), where
Kafka's KafkaApis answers them with ILLEGAL_SASL_STATE (a connection that needs no
authentication is already past it)."""

from __future__ import annotations

from typing import Any

from conformance.cases import BOTH, Case, Meaning, code
from conformance.harness import Run
from pykraft.protocol.apis import ApiKey
from pykraft.runtime.sasl_authenticator import AFTER_AUTHENTICATION


def handshake(run: Run) -> Any:
    return run.kio(ApiKey.SASL_HANDSHAKE, {"mechanism": "PLAIN"})


def authenticate(run: Run) -> Any:
    return run.kio(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": b"\0alice\0alice-secret"})


def handshake_meaning(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), list(body.mechanisms)


def authenticate_meaning(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), body.error_message, bytes(body.auth_bytes)


SASL = [
    Case("SaslHandshake", ApiKey.SASL_HANDSHAKE, "illegal_without_sasl", handshake,
         handshake_meaning, lambda _run: ("ILLEGAL_SASL_STATE", []), listeners=BOTH),
    Case("SaslAuthenticate", ApiKey.SASL_AUTHENTICATE, "illegal_without_sasl", authenticate,
         authenticate_meaning,
         lambda _run: ("ILLEGAL_SASL_STATE", AFTER_AUTHENTICATION, b""), listeners=BOTH),
]
