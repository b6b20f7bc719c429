"""The delegation token keys (Kafka's DelegationTokenManagerConfigs), read once per node.

``delegation.token.secret.key`` turns tokens on: the controller derives every token's HMAC
from it, a broker checks a token's SCRAM password and describes tokens with it, so every
node must have the same one. Unset or empty, tokens are off (DELEGATION_TOKEN_AUTH_DISABLED).
Kafka 4 dropped the old name ``delegation.token.master.key``; like Kafka, pykraft no longer
reads it. The durations are Kafka's defaults: a token lives at most 7 days, must be renewed
every day, and the controller looks for expired tokens every hour.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pykraft.errors import ConfigError

SECRET_KEY = "delegation.token.secret.key"
MAX_LIFETIME_MS = "delegation.token.max.lifetime.ms"
EXPIRY_TIME_MS = "delegation.token.expiry.time.ms"
EXPIRY_CHECK_INTERVAL_MS = "delegation.token.expiry.check.interval.ms"
_DEFAULTS = {MAX_LIFETIME_MS: 7 * 24 * 3600 * 1000, EXPIRY_TIME_MS: 24 * 3600 * 1000,
             EXPIRY_CHECK_INTERVAL_MS: 3600 * 1000}


@dataclass(frozen=True, slots=True)
class TokenConfig:
    """A node's token settings; ``secret_key`` None when tokens are off."""

    secret_key: str | None = None
    max_lifetime_ms: int = _DEFAULTS[MAX_LIFETIME_MS]
    expiry_time_ms: int = _DEFAULTS[EXPIRY_TIME_MS]
    expiry_check_interval_ms: int = _DEFAULTS[EXPIRY_CHECK_INTERVAL_MS]

    def __repr__(self) -> str:  # a PASSWORD: a log line must not give it away
        secret = None if self.secret_key is None else "[hidden]"
        return (f"TokenConfig(secret_key={secret}, max_lifetime_ms={self.max_lifetime_ms}, "
                f"expiry_time_ms={self.expiry_time_ms}, "
                f"expiry_check_interval_ms={self.expiry_check_interval_ms})")

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None


def _duration(properties: Mapping[str, str], key: str) -> int:
    text = properties.get(key)
    try:
        value = _DEFAULTS[key] if text is None else int(text.strip())
    except ValueError:
        raise ConfigError(f"Invalid value {text} for configuration {key}: "
                          "Not a number of type LONG") from None
    if value < 1:
        raise ConfigError(f"Invalid value {value} for configuration {key}: "
                          "Value must be at least 1")
    return value


def token_config(properties: Mapping[str, str]) -> TokenConfig:
    """The token settings of a node's ``properties``; ConfigError for a duration below 1
    or not a number, as Kafka's ConfigDef refuses it."""
    secret = properties.get(SECRET_KEY) or None
    return TokenConfig(secret, _duration(properties, MAX_LIFETIME_MS),
                       _duration(properties, EXPIRY_TIME_MS),
                       _duration(properties, EXPIRY_CHECK_INTERVAL_MS))
