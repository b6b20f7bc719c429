"""Kafka's topic name rules (``Topic.validate``): CreateTopics, configs, Metadata and
auto-creation refuse an illegal name with INVALID_TOPIC_EXCEPTION."""

from __future__ import annotations

import re

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249


def topic_name_problem(name: str) -> str | None:
    """Kafka 4.4's ``Topic.validate`` rules and messages."""
    reason = _reason(name)
    return None if reason is None else f"Topic name is invalid: {reason}"


def _reason(name: str) -> str | None:
    if not name:
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    if not _LEGAL_NAME.fullmatch(name):
        return (f"'{name}' contains one or more characters other than ASCII alphanumerics, "
                "'.', '_' and '-'")
    return None
