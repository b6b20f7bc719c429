"""Kafka's topic name rules (``Topic.validate``): CreateTopics, configs, Metadata and
auto-creation refuse an illegal name with INVALID_TOPIC_EXCEPTION."""

from __future__ import annotations

import re

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_NAME_LENGTH = 249


def topic_name_problem(name: str) -> str | None:
    """Kafka's ``Topic.validate`` rules."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters"
    if not _LEGAL_NAME.fullmatch(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than ASCII "
                "alphanumerics, '.', '_' and '-'")
    return None
