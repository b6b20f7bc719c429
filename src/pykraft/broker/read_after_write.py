"""Read-after-write for a forwarded write: its answer waits until this broker's image has it.

The active controller answers a forwarded write (CreateTopics, IncrementalAlterConfigs,
CreateAcls, ...) once its record is committed, but this broker replays that record only when
its own metadata fetch brings it: relayed at once, the answer lets the client ask this same
broker (DescribeConfigs, Metadata, DescribeAcls) before its image holds the write, and see
the old state (``kafka-configs --alter`` then ``--describe`` did, under load). Kafka's broker
relays at once too (``ForwardingManagerImpl.forwardRequest``'s response handler calls the
callback with the parsed response; ``KafkaApis.maybeForwardToController`` sends it), and its
clients live with the lag; pykraft closes it.

Kafka's RPCs carry no offset of the write, so the broker asks the controller for its high
watermark after the answer came (DescribeQuorum, Kafka's RPC for it): that is at least the
offset the controller had committed when it answered, the write included, and the answer is
relayed once the image has reached it. When that cannot be learnt (no controller reachable,
a refusal, a leader that does not know its high watermark yet) or the image does not get
there in time, the answer goes as Kafka's would, at once: never worse than Kafka.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from pykraft.errors import PyKraftError
from pykraft.messages.kafka.describe_quorum_response import DescribeQuorumResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.rpc import describe_quorum_request
from pykraft.runtime.controller_channel import ControllerSender

#: Forwarded APIs that write nothing: their answers are relayed at once.
NOT_WRITES = frozenset({ApiKey.DESCRIBE_QUORUM})


class Image(Protocol):
    """The broker's metadata image, as far as waiting for an offset goes."""

    async def reached(self, end_offset: int) -> None: ...


async def controller_high_watermark(channel: ControllerSender) -> int | None:
    """The active controller's high watermark now, or None when it cannot be learnt."""
    try:
        answer = await channel.send(describe_quorum_request())
    except PyKraftError:  # any failure: relay the answer as Kafka does
        return None
    if not isinstance(answer, DescribeQuorumResponse) or answer.error_code != ErrorCode.NONE:
        return None
    parts = [p for t in answer.topics for p in t.partitions]
    if len(parts) != 1 or parts[0].error_code != ErrorCode.NONE or parts[0].high_watermark < 0:
        return None
    return parts[0].high_watermark


async def settle(api_key: int, channel: ControllerSender, image: Image,
                 timeout_s: float) -> bool:
    """Wait, up to ``timeout_s``, until ``image`` holds every write the controller had
    committed when it answered a forwarded ``api_key``; whether it does."""
    if api_key in NOT_WRITES or timeout_s <= 0:
        return False
    try:
        async with asyncio.timeout(timeout_s):
            high_watermark = await controller_high_watermark(channel)
            if high_watermark is None:
                return False
            await image.reached(high_watermark)
    except TimeoutError:
        return False
    return True
