"""Kafka's TCP framing: every request and response is an int32 big-endian size, then payload.

The decoder is incremental (feed whatever the socket returned, get whole frames back) and
checks the size prefix before buffering, so a hostile or confused peer announcing a 2 GiB
frame is refused after 4 bytes instead of after we tried to hold 2 GiB.
"""

from __future__ import annotations

import struct

from pykraft.errors import FrameTooLargeError

#: Kafka's ``socket.request.max.bytes`` default (100 MiB).
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024

_SIZE = struct.Struct(">i")
SIZE_PREFIX_BYTES = _SIZE.size


def encode_frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its int32 size."""
    return _SIZE.pack(len(payload)) + payload


class FrameDecoder:
    """Turns a byte stream into frames (payloads without their size prefix).

    After a :class:`FrameTooLargeError` the stream is out of sync for good: the decoder keeps
    raising it, and the caller is expected to close the connection.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._expected: int | None = None
        self._error: FrameTooLargeError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        """Consume ``data``; return every frame it completed, in order."""
        if self._error is not None:
            raise self._error
        self._buffer += data
        frames: list[bytes] = []
        while True:
            if self._expected is None:
                if len(self._buffer) < SIZE_PREFIX_BYTES:
                    return frames
                (size,) = _SIZE.unpack_from(self._buffer, 0)
                if size < 0 or size > self.max_frame_size:
                    self._error = FrameTooLargeError(
                        f"frame size prefix {size} is outside 0..{self.max_frame_size}"
                    )
                    self._buffer.clear()
                    raise self._error
                del self._buffer[:SIZE_PREFIX_BYTES]
                self._expected = size
            if len(self._buffer) < self._expected:
                return frames
            frames.append(bytes(self._buffer[: self._expected]))
            del self._buffer[: self._expected]
            self._expected = None
