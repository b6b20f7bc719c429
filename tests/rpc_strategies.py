"""Hypothesis set-up shared by the protocol tests: the (api, version) pairs pykraft speaks,
and random request and response bodies of each API's generated class
(:mod:`pykraft.messages.kafka`), every field present at the version drawn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import strategies as st

from pykraft.messages import rpc
from pykraft.protocol.apis import all_versions
from test_messages_codec import messages_of

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

PAIRS = all_versions()
PAIR_IDS = [f"{key.name}-v{version}" for key, version in PAIRS]


def request_bodies(api_key: int, version: int) -> st.SearchStrategy[DataclassInstance]:
    """Request bodies of ``api_key`` at ``version``."""
    return messages_of(rpc.request_class(api_key), version)


def response_bodies(api_key: int, version: int) -> st.SearchStrategy[DataclassInstance]:
    """Response bodies of ``api_key`` at ``version``."""
    return messages_of(rpc.response_class(api_key), version)
