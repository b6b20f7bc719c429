"""Hypothesis set-up shared by the protocol tests: strategies for kio's special types and
the (api, version) pairs pykraft speaks.

kio's own strategies produce bytes for Records fields and int64 millisecond counts that
``datetime.timedelta`` cannot hold; real values fit easily in the range used here.
"""

from __future__ import annotations

import datetime

from hypothesis import strategies as st
from kio.static.primitive import Records, i64Timedelta

from pykraft.protocol.apis import all_versions

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
st.register_type_strategy(
    i64Timedelta,
    st.integers(-(2**50), 2**50).map(
        lambda ms: i64Timedelta.parse(datetime.timedelta(milliseconds=ms))
    ),
)

PAIRS = all_versions()
PAIR_IDS = [f"{key.name}-v{version}" for key, version in PAIRS]
