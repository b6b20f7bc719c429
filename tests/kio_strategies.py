"""Hypothesis set-up shared by the protocol tests: the (api, version) pairs pykraft serves,
and bodies of the generated class the codec takes for each (drawn at that version: fields
absent there keep their defaults)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from pykraft.protocol.apis import all_versions
from pykraft.protocol.codec import request_type, response_type
from test_messages_codec import messages_of

PAIRS = all_versions()
PAIR_IDS = [f"{key.name}-v{version}" for key, version in PAIRS]


def request_bodies(api_key: int, version: int) -> st.SearchStrategy[Any]:
    """Request bodies of ``api_key`` at ``version``."""
    return messages_of(request_type(api_key, version), version)


def response_bodies(api_key: int, version: int) -> st.SearchStrategy[Any]:
    """Response bodies of ``api_key`` at ``version``."""
    return messages_of(response_type(api_key, version), version)
