"""A stream's :class:`Inbox` hands out the chunks its connection received as they came (no
copy into a buffer and out again), pauses the transport while too much waits and resumes
it once read, and ends with the peer's end or the connection's error; streams made by
``FrameStream.accept``/``connect`` carry frames both ways on uvloop and asyncio's loop."""

from __future__ import annotations

import asyncio
import socket

import pytest

from pykraft.runtime.event_loop import run
from pykraft.runtime.streams import FrameStream, Inbox

KIB = 1024


class FakeTransport:
    """Records pause_reading / resume_reading calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")

    def is_closing(self) -> bool:
        return False


def test_chunks_come_out_as_they_went_in_and_reading_pauses_while_too_much_waits() -> None:
    async def scenario() -> tuple[list[bytes], list[str]]:
        inbox = Inbox(asyncio.get_running_loop())
        transport = FakeTransport()
        inbox.attach(transport)
        chunks = [bytes([n]) * (64 * KIB) for n in range(4)]
        for chunk in chunks[:2]:
            inbox.put(chunk)
        assert transport.calls == []  # 128 KiB waiting: not over the bound
        inbox.put(chunks[2])
        assert transport.calls == ["pause"]
        inbox.put(chunks[3])
        out = [await inbox.read(), await inbox.read()]  # 128 KiB left: still paused
        assert transport.calls == ["pause"]
        out.append(await inbox.read())  # 64 KiB left: resumed
        assert transport.calls == ["pause", "resume"]
        out.append(await inbox.read())
        return out, transport.calls

    out, calls = asyncio.run(scenario())
    assert [chunk[0] for chunk in out] == [0, 1, 2, 3]
    assert all(len(chunk) == 64 * KIB for chunk in out)
    assert calls == ["pause", "resume"]


def test_a_read_waits_for_the_next_chunk_and_ends_with_the_stream_or_its_error() -> None:
    async def scenario() -> tuple[bytes, bytes, bytes]:
        loop = asyncio.get_running_loop()
        inbox = Inbox(loop)
        waiting = asyncio.ensure_future(inbox.read())
        await asyncio.sleep(0)
        assert not waiting.done()
        inbox.put(b"late")
        first = await waiting
        inbox.put(b"last")
        inbox.end()
        last, end = await inbox.read(), await inbox.read()
        failed = Inbox(loop)
        failed.end(ConnectionResetError("reset"))
        with pytest.raises(ConnectionResetError):
            await failed.read()
        return first, last, end

    assert asyncio.run(scenario()) == (b"late", b"last", b"")


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_accepted_and_connected_streams_carry_frames_both_ways(loop: str) -> None:
    frames = [b"small", bytes(range(256)) * 4 * KIB, b"", b"after"]

    async def scenario() -> tuple[list[bytes], list[bytes], bytes | None]:
        listening = socket.create_server(("127.0.0.1", 0))
        listening.setblocking(False)
        port = listening.getsockname()[1]
        connecting = asyncio.ensure_future(FrameStream.connect("127.0.0.1", port))
        accepted, _ = await asyncio.get_running_loop().sock_accept(listening)
        server = await FrameStream.accept(accepted, 1 << 24)
        client = await connecting
        for frame in frames:
            await client.write_frame(frame)
        received = [await server.read_frame() or b"" for _ in frames]
        for frame in frames:
            await server.write_frame(frame)
        answered = [await client.read_frame() or b"" for _ in frames]
        client.close()
        end = await server.read_frame()
        server.close()
        listening.close()
        return received, answered, end

    received, answered, end = run(scenario(), loop)
    assert received == frames and answered == frames
    assert end is None  # the client's close: a clean end between frames
