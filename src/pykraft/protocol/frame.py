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
    return frame_size_prefix(len(payload)) + payload


def frame_size_prefix(size: int) -> bytes:
    """The int32 size prefix of a ``size``-byte frame (written apart from a large one)."""
    return _SIZE.pack(size)


def join_frame(parts: list[bytes]) -> bytes:
    """A frame from the chunks :meth:`FrameDecoder.feed_parts` gave (one copy at most)."""
    return parts[0] if len(parts) == 1 else b"".join(parts)


class FrameDecoder:
    """Turns a byte stream into frames (payloads without their size prefix).

    A frame's bytes are kept as the chunks they came in and joined once it is complete: one
    copy of each byte, where appending to a buffer cut from its front copied the whole
    buffer again and again (about 1 s of CPU per 100 MiB frame, on the event loop). Nothing
    is allocated ahead of the bytes received, so a size prefix alone costs no memory.

    After a :class:`FrameTooLargeError` the stream is out of sync for good: the decoder keeps
    raising it, and the caller is expected to close the connection.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._prefix = bytearray()
        self._chunks: list[bytes] = []
        self._received = 0
        """Bytes of the current frame's payload received so far."""
        self._expected: int | None = None
        self._error: FrameTooLargeError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as part of a frame."""
        return len(self._prefix) + self._received

    def feed(self, data: bytes) -> list[bytes]:
        """Consume ``data``; return every frame it completed, in order."""
        return [join_frame(parts) for parts in self.feed_parts(data)]

    def feed_parts(self, data: bytes) -> list[list[bytes]]:
        """:meth:`feed`, each completed frame as the chunks it came in (for a caller that
        chooses when to pay for :func:`join_frame`)."""
        if self._error is not None:
            raise self._error
        frames: list[list[bytes]] = []
        view = memoryview(data)
        while True:
            if self._expected is None:
                wanted = SIZE_PREFIX_BYTES - len(self._prefix)
                self._prefix += view[:wanted]
                view = view[wanted:]
                if len(self._prefix) < SIZE_PREFIX_BYTES:
                    return frames
                (size,) = _SIZE.unpack(self._prefix)
                self._prefix.clear()
                if size < 0 or size > self.max_frame_size:
                    self._error = FrameTooLargeError(
                        f"frame size prefix {size} is outside 0..{self.max_frame_size}"
                    )
                    raise self._error
                self._expected = size
            taken = view[:self._expected - self._received]
            if taken:
                self._chunks.append(data if len(taken) == len(data) else bytes(taken))
                self._received += len(taken)
                view = view[len(taken):]
            if self._received < self._expected:
                return frames
            frames.append(self._chunks)
            self._chunks = []
            self._received = 0
            self._expected = None
            if not view:
                return frames
