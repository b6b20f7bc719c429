"""Hypothesis set-up shared by the protocol tests: strategies for kio's special types, the
(api, version) pairs pykraft speaks, and bodies of the class the codec takes for each
(generated or kio's, :data:`~pykraft.protocol.apis.GENERATED_APIS`).

kio's own strategies produce bytes for Records fields and int64 millisecond counts that
``datetime.timedelta`` cannot hold; real values fit easily in the range used here.
"""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import strategies as st
from kio.static.primitive import Records, i64Timedelta

from pykraft.protocol.apis import GENERATED_APIS, all_versions
from pykraft.protocol.codec import request_type, response_type
from test_messages_codec import messages_of

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
st.register_type_strategy(
    i64Timedelta,
    st.integers(-(2**50), 2**50).map(
        lambda ms: i64Timedelta.parse(datetime.timedelta(milliseconds=ms))
    ),
)

PAIRS = all_versions()
PAIR_IDS = [f"{key.name}-v{version}" for key, version in PAIRS]


def request_bodies(api_key: int, version: int) -> st.SearchStrategy[Any]:
    """Request bodies of ``api_key`` at ``version``, of the class the codec takes."""
    cls = request_type(api_key, version)
    return messages_of(cls, version) if api_key in GENERATED_APIS else st.from_type(cls)


def response_bodies(api_key: int, version: int) -> st.SearchStrategy[Any]:
    """Response bodies of ``api_key`` at ``version``, of the class the codec takes."""
    cls = response_type(api_key, version)
    return messages_of(cls, version) if api_key in GENERATED_APIS else st.from_type(cls)
