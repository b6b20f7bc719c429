"""Fetch answered from the segment files with ``sendfile`` (Kafka's zero copy): the same
frames as the buffered path, over asyncio's and uvloop's sockets, never bytes a segment
no longer holds, and the buffered path kept on TLS listeners."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import uvloop
from replica_fixtures import broker, client_batch, replicas_of, topic, with_records

from pykraft.broker.dispatch import BrokerDispatcher
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.errors import StorageError
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.fetch_request import FetchPartition, FetchRequest, FetchTopic
from pykraft.messages.splice import SplicedPayload, joined
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.frame import encode_frame
from pykraft.protocol.header import RequestHeader
from pykraft.records.batch import encode_batch
from pykraft.runtime import streams
from pykraft.runtime.streams import FrameStream
from pykraft.security.session import KafkaPrincipal, SecurityProtocol, Session

TOPIC_ID = uuid.UUID(int=1)
PARTITIONS = 3
PLAIN = Session(KafkaPrincipal("User", "ANONYMOUS"), "127.0.0.1:5000")
TLS = Session(KafkaPrincipal("User", "ANONYMOUS"), "127.0.0.1:5000", "SSL",
              SecurityProtocol.SSL)


def _run(loop: str, main: Coroutine[object, object, None]) -> None:
    """``main`` on asyncio's event loop or on uvloop's (the server's default)."""
    if loop == "uvloop":
        uvloop.run(main)
    else:
        asyncio.run(main)


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReplicaManager]:
    """Broker 1 leading t-0, t-1 and t-2, with batches of several sizes in each."""
    image: MetadataImage = with_records(MetadataImage(), broker(1, 9092),
                                        *topic("t", TOPIC_ID, *[(1,)] * PARTITIONS))
    manager = replicas_of(tmp_path, 1, image)
    for index in range(PARTITIONS):
        part = manager.partition_for("t", index)
        for size in (10, 3000, 100, 70_000 * (index + 1)):
            manager.append_records(part, client_batch([bytes([index]) * size] * 3), acks=1,
                                   api_version=12, now_ms=2_000)
    yield manager
    manager.shutdown()


def _dispatcher(replicas: ReplicaManager) -> BrokerDispatcher:
    node = SimpleNamespace(settings=SimpleNamespace(
        node_id=1, controller=SimpleNamespace(properties={})))
    return BrokerDispatcher(node, SimpleNamespace(image=replicas.image),  # type: ignore[arg-type]
                            None, cluster_id="cid",  # type: ignore[arg-type]
                            listener_name="PLAINTEXT", replicas=replicas)


def _frame(version: int, max_bytes: int, partition_max_bytes: int,
           offsets: tuple[int, ...] = (0,) * PARTITIONS) -> bytes:
    parts = tuple(FetchPartition(partition=index, fetch_offset=offset,
                                 partition_max_bytes=partition_max_bytes)
                  for index, offset in enumerate(offsets))
    body = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes,
                        topics=(FetchTopic(topic="t", topic_id=TOPIC_ID, partitions=parts),))
    return encode_request(RequestHeader(1, version, 7, "test"), body)


@pytest.mark.parametrize("version", [4, 11, 12, 13, 16, 18])
@pytest.mark.parametrize(("max_bytes", "partition_max_bytes"), [
    (1 << 30, 1 << 30), (1 << 30, 5_000), (50_000, 1 << 20), (0, 0), (200_000, 100_000)])
def test_a_plaintext_fetch_is_the_buffered_answer_with_its_records_left_in_files(
        replicas: ReplicaManager, version: int, max_bytes: int,
        partition_max_bytes: int) -> None:
    """Several partitions, sizes and limits (KIP-74's first batch included): the spliced
    answer is byte for byte the one a TLS listener sends, the records never read."""
    dispatcher = _dispatcher(replicas)
    frame = _frame(version, max_bytes, partition_max_bytes)

    async def both() -> tuple[bytes | SplicedPayload, bytes | SplicedPayload]:
        return await dispatcher.respond(frame, PLAIN), await dispatcher.respond(frame, TLS)

    spliced, buffered = asyncio.run(both())
    assert isinstance(buffered, bytes)
    assert isinstance(spliced, SplicedPayload)
    assert spliced.size == len(buffered) and joined(spliced) == buffered
    assert sum(len(p) for p in spliced.parts if isinstance(p, bytes)) < 1_000  # headers only
    answer = decode_response(1, version, buffered).body
    assert all(p.error_code == 0 for t in answer.responses for p in t.partitions)


def test_nothing_to_send_is_plain_bytes(replicas: ReplicaManager) -> None:
    """A fetch at the log end leaves nothing in a file: the answer is one buffer."""
    end = replicas.partition_for("t", 0).log_end_offset
    frame = _frame(18, 1 << 20, 1 << 20, (end,) * PARTITIONS)
    assert isinstance(asyncio.run(_dispatcher(replicas).respond(frame, PLAIN)), bytes)


async def _connected() -> tuple[FrameStream, FrameStream]:
    """A server's stream and its client's, over 127.0.0.1."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        port = listener.getsockname()[1]
        client = await FrameStream.connect("127.0.0.1", port, max_frame_size=1 << 30)
        accepted, _ = await asyncio.get_running_loop().sock_accept(listener)
    return await FrameStream.accept(accepted, 1 << 30), client


async def _over_a_socket(payloads: list[bytes | SplicedPayload], *,
                         between: Callable[[], None] = lambda: None) -> list[bytes | None]:
    """Write ``payloads`` as frames on a server's stream and read them on a client's
    (``between`` runs after the first frame): what the client got, None after a close."""
    server, client = await _connected()

    async def write() -> None:
        try:
            for number, payload in enumerate(payloads):
                await server.write_frame(payload)
                if number == 0:
                    between()
        except StorageError:
            pass
        finally:
            server.close()

    writing = asyncio.create_task(write())
    got: list[bytes | None] = []
    try:
        for _ in payloads:
            got.append(await client.read_frame())
    except asyncio.IncompleteReadError:
        got.append(None)
    await writing
    client.close()
    return got


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_spliced_frames_reach_the_client_as_buffered_ones(
        replicas: ReplicaManager, loop: str) -> None:
    """Over a real connection (the client reads only once several megabytes wait, so the
    server's socket fills and ``sendfile`` waits for it), on either event loop."""
    dispatcher = _dispatcher(replicas)
    frames = [_frame(18, 1 << 30, 1 << 30), _frame(12, 50_000, 1 << 20),
              _frame(18, 1 << 30, 5_000)] * 4

    async def run() -> None:
        spliced = [await dispatcher.respond(frame, PLAIN) for frame in frames]
        buffered = [joined(payload) for payload in spliced]
        assert await _over_a_socket(spliced) == buffered
        assert buffered[0] == encode_frame(buffered[0])[4:]

    _run(loop, run())


@pytest.mark.parametrize("change", ["truncate", "delete"])
def test_records_a_segment_lost_in_flight_are_never_sent(
        replicas: ReplicaManager, change: str) -> None:
    """A segment truncated or deleted while answers from it wait: the connection closes
    with the frame cut short (the client refetches) and no byte of what replaced them
    reaches the client (Kafka closes the channel the same way)."""
    dispatcher = _dispatcher(replicas)
    part = replicas.partition_for("t", 0)
    log = part.log

    def lose() -> None:
        if change == "truncate":  # and other bytes written where the records were
            log.truncate_to(1, now_ms=3_000)
            log.append(encode_batch(log.log_end_offset, [(None, b"other" * 1000)] * 80,
                                    timestamp=3_000,
                                    partition_leader_epoch=0), now_ms=3_000)
        else:  # by retention: the segment goes, renamed *.deleted and closed
            log.delete_segments([0], 3_000)

    async def run() -> None:
        first = await dispatcher.respond(_frame(18, 1 << 30, 1 << 30), PLAIN)
        second = await dispatcher.respond(_frame(18, 1 << 30, 1 << 30), PLAIN)
        expected = joined(first)
        got = await _over_a_socket([first, second], between=lose)
        assert got == [expected, None]

    asyncio.run(run())


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_send_waiting_on_a_full_socket_ends_when_the_connection_is_aborted(
        replicas: ReplicaManager, loop: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that stops reading, then an abort (idle or evicted connection): the
    ``sendfile`` waiting for room ends with the connection's error instead of holding the
    socket open forever."""
    dispatcher = _dispatcher(replicas)
    waiting = asyncio.Event()
    writable = streams._writable

    async def waiting_for_room(fd: int) -> None:  # sendfile found the socket full
        waiting.set()
        await writable(fd)

    monkeypatch.setattr(streams, "_writable", waiting_for_room)

    async def run() -> None:
        payload = await dispatcher.respond(_frame(18, 1 << 30, 1 << 30), PLAIN)
        server, client = await _connected()

        async def flood() -> None:
            for _ in range(100):  # more than the socket buffers hold
                await server.write_frame(payload)

        writing = asyncio.create_task(flood())
        async with asyncio.timeout(30):
            await waiting.wait()
        server.abort()
        with pytest.raises(OSError):
            async with asyncio.timeout(30):
                await writing
        client.close()

    _run(loop, run())
