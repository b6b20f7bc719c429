"""A large request is decoded with Python's cyclic collector paused: its hundreds of
thousands of new objects (no cycles among them) set off full collections otherwise, each
walking the whole heap while holding the GIL the event loop needs."""

from __future__ import annotations

import gc
from typing import Any

from pykraft.messages.kafka.sync_group_request import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_request, encode_request
from pykraft.protocol.header import RequestHeader
from pykraft.runtime import listener_dispatch


def test_a_large_request_decodes_without_a_collection() -> None:
    assignment = SyncGroupRequestAssignment(member_id="m", assignment=b"a")
    frame = encode_request(RequestHeader(ApiKey.SYNC_GROUP, 5, 1, "c"), SyncGroupRequest(
        group_id="g", generation_id=1, member_id="m", protocol_type=None, protocol_name=None,
        assignments=(assignment,) * 100_000))
    collections: list[int] = []

    def counted(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collections.append(info["generation"])
    gc.callbacks.append(counted)
    try:
        plain = decode_request(frame)
        assert len(collections) > 10, "100,000 entries set off collections"
        collections.clear()
        paused = listener_dispatch._decode_large(frame)
    finally:
        gc.callbacks.remove(counted)
    assert collections in ([], [0], [1]) and gc.isenabled()  # one young one, once resumed
    assert paused == plain
