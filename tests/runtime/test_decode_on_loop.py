"""Where an answer is decoded: a Fetch answer (records, sliced not parsed) on the event loop
up to ``RECORDS_OFF_LOOP_BYTES`` (1 MiB: a follower's answer of a few partitions decodes
faster there than a hop to the codec thread costs), on the codec thread above it; an answer
that is all structure (Metadata) on the codec thread from ``OFF_LOOP_BYTES`` (64 KiB), as a
large frame must not stall the loop."""

from __future__ import annotations

import asyncio
import socket
import threading
import uuid

import pytest

from pykraft.messages.kafka.fetch_response import (
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)
from pykraft.messages.kafka.metadata_response import MetadataResponse, MetadataResponseTopic
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import ResponseFrame, decode_response, encode_response
from pykraft.runtime import kafka_client
from pykraft.runtime.codec_thread import OFF_LOOP_BYTES, RECORDS_OFF_LOOP_BYTES
from pykraft.runtime.event_loop import run
from pykraft.runtime.streams import FrameStream

FETCH_VERSION = 17
METADATA_VERSION = 12
KIB = 1024


def fetch_answer(records_bytes: int) -> bytes:
    """A Fetch answer of 4 partitions sharing ``records_bytes`` of records."""
    records = bytes(records_bytes // 4)
    return encode_response(7, ApiKey.FETCH, FETCH_VERSION, FetchResponse(
        throttle_time_ms=0, error_code=0, session_id=0, responses=(FetchableTopicResponse(
            topic_id=uuid.uuid4(), partitions=tuple(
                PartitionData(partition_index=p, error_code=0, high_watermark=1,
                              records=records) for p in range(4))),)))


def metadata_answer(topics: int) -> bytes:
    """A Metadata answer naming ``topics`` topics (no partitions)."""
    return encode_response(7, ApiKey.METADATA, METADATA_VERSION, MetadataResponse(
        brokers=(), topics=tuple(MetadataResponseTopic(
            error_code=0, name=f"topic-{n:06d}", topic_id=uuid.uuid4(), partitions=())
            for n in range(topics))))


def decoding_thread(api_key: int, version: int, frame: bytes,
                    monkeypatch: pytest.MonkeyPatch) -> str:
    """Which thread decoded ``frame`` read by a client connection's stream."""
    threads: list[int] = []

    def recorded(api_key: int, version: int, data: bytes) -> ResponseFrame:
        threads.append(threading.get_ident())
        return decode_response(api_key, version, data)

    monkeypatch.setattr(kafka_client, "decode_response", recorded)

    async def scenario() -> int:
        listening = socket.create_server(("127.0.0.1", 0))
        listening.setblocking(False)
        connecting = asyncio.ensure_future(
            FrameStream.connect("127.0.0.1", listening.getsockname()[1]))
        accepted, _ = await asyncio.get_running_loop().sock_accept(listening)
        server = await FrameStream.accept(accepted, 1 << 24)
        client = await connecting
        try:
            await server.write_frame(frame)
            body = await kafka_client._read_response(client, api_key, version, 7)
            assert isinstance(body, FetchResponse | MetadataResponse)
            return threading.get_ident()
        finally:
            client.close()
            server.close()
            listening.close()

    loop_thread = run(scenario(), "uvloop")
    assert len(threads) == 1
    return "loop" if threads[0] == loop_thread else "other"


@pytest.mark.parametrize(("records_bytes", "where"), [
    (512 * KIB, "loop"), (RECORDS_OFF_LOOP_BYTES - 4 * KIB, "loop"),
    (2 * RECORDS_OFF_LOOP_BYTES, "other")])
def test_a_fetch_answer_is_decoded_on_the_loop_up_to_a_mebibyte(
        records_bytes: int, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = fetch_answer(records_bytes)
    assert (len(frame) > RECORDS_OFF_LOOP_BYTES) == (where == "other")
    assert decoding_thread(ApiKey.FETCH, FETCH_VERSION, frame, monkeypatch) == where


@pytest.mark.parametrize(("topics", "where"), [(1000, "loop"), (5000, "other")])
def test_an_answer_of_structure_leaves_the_loop_above_64_kib(
        topics: int, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    frame = metadata_answer(topics)
    assert (len(frame) > OFF_LOOP_BYTES) == (where == "other")
    assert decoding_thread(ApiKey.METADATA, METADATA_VERSION, frame, monkeypatch) == where
