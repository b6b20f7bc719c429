"""The authorizer's server keys, read once where a node's settings are checked.

Kafka loads ``authorizer.class.name`` by reflection; pykraft has one authorizer, KRaft's
StandardAuthorizer, so that is the one class name accepted. Without the key there is no
authorizer: the ACL APIs answer SECURITY_DISABLED and nothing is checked, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pykraft.errors import ConfigError

AUTHORIZER_CLASS_NAME = "authorizer.class.name"
SUPER_USERS = "super.users"
ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@dataclass(frozen=True, slots=True)
class AuthorizerConfig:
    """What StandardAuthorizer.configure reads."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


def authorizer_config(properties: Mapping[str, str]) -> AuthorizerConfig | None:
    """The configured authorizer's settings, None without one; ConfigError for a class
    other than StandardAuthorizer or a super user that is not ``<type>:<name>``."""
    class_name = properties.get(AUTHORIZER_CLASS_NAME, "").strip()
    if not class_name:
        return None
    if class_name != STANDARD_AUTHORIZER:
        raise ConfigError(f"Invalid value {class_name} for configuration "
                          f"{AUTHORIZER_CLASS_NAME}: only {STANDARD_AUTHORIZER} is supported")
    users = [user.strip() for user in properties.get(SUPER_USERS, "").split(";")]
    for user in users:
        if user and ":" not in user:
            raise ConfigError(f"Invalid value {user} in {SUPER_USERS}: expected a string in "
                              f"format principalType:principalName")
    allow = properties.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND, "false").strip().lower() == "true"
    return AuthorizerConfig(frozenset(user for user in users if user), allow)
