"""Kafka frames over an asyncio stream: the one reader/writer every connection uses.

Reads go through :class:`~pykraft.protocol.frame.FrameDecoder`, so an oversized size prefix
is refused after four bytes (:class:`FrameTooLargeError`) instead of being buffered.
"""

from __future__ import annotations

import asyncio
import collections

from pykraft.protocol.frame import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame

_READ_CHUNK = 256 * 1024


class FrameStream:
    """Whole frames in, whole frames out, over one TCP connection."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._decoder = FrameDecoder(max_frame_size)
        self._frames: collections.deque[bytes] = collections.deque()

    @classmethod
    async def connect(
        cls, host: str, port: int, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    ) -> FrameStream:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, max_frame_size)

    @property
    def peer(self) -> str:
        address = self._writer.get_extra_info("peername")
        return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)

    async def read_frame(self) -> bytes | None:
        """The next frame, or None at a clean end of stream between frames."""
        while not self._frames:
            data = await self._reader.read(_READ_CHUNK)
            if not data:
                if self._decoder.buffered:
                    raise asyncio.IncompleteReadError(b"", None)
                return None
            self._frames.extend(self._decoder.feed(data))
        return self._frames.popleft()

    async def write_frame(self, payload: bytes) -> None:
        self._writer.write(encode_frame(payload))
        await self._writer.drain()

    def close(self) -> None:
        self._writer.close()
