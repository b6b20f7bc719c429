"""Bytes an encoding leaves out, for the writer to send from where they are: a Fetch
response's records as a region of a segment file, sent with ``sendfile`` (Kafka's
``FileRecords.writeTo``), never read into the process.

Encoding into a :class:`SplicedBuffer` writes a :class:`Splice`'s length prefix and notes
where its bytes belong; :meth:`SplicedBuffer.payload` is then the frame's body as parts
(:class:`SplicedPayload`), or plain bytes when nothing was left out. Any other buffer
refuses a splice, so a response that cannot carry one (TLS) never encodes one by mistake.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass


class Splice(abc.ABC):
    """``length`` bytes of a records field that the writer sends itself."""

    __slots__ = ()

    @property
    @abc.abstractmethod
    def length(self) -> int:
        """How many bytes: fixed when the splice is made, as the frame's size counts them."""

    @abc.abstractmethod
    def source(self, offset: int) -> tuple[int, int]:
        """The file descriptor and file position of byte ``offset`` of the splice, checked
        now: raises :class:`~pykraft.errors.StorageError` when the bytes are no longer the
        ones the splice was made of (the file was truncated or closed meanwhile)."""

    @abc.abstractmethod
    def read(self, offset: int, size: int) -> bytes:
        """Bytes ``offset`` to ``offset + size`` of the splice (a writer that cannot
        ``sendfile``), checked as :meth:`source` is."""


@dataclass(frozen=True, slots=True)
class SplicedPayload:
    """A frame's body as bytes and splices, in order; ``size`` counts them all."""

    parts: tuple[bytes | Splice, ...]
    size: int


class SplicedBuffer(bytearray):
    """An encoder's output buffer that takes splices: each is noted with its position."""

    def __init__(self) -> None:
        super().__init__()
        self.splices: list[tuple[int, Splice]] = []

    def splice(self, value: Splice) -> None:
        """Leave ``value``'s bytes out here (its length prefix is written already)."""
        self.splices.append((len(self), value))

    def payload(self) -> bytes | SplicedPayload:
        """The encoded bytes, or the parts when a splice was left out."""
        if not self.splices:
            return bytes(self)
        parts: list[bytes | Splice] = []
        at = 0
        with memoryview(self) as view:
            for position, value in self.splices:
                if position > at:
                    parts.append(bytes(view[at:position]))
                parts.append(value)
                at = position
            if at < len(view):
                parts.append(bytes(view[at:]))
        size = len(self) + sum(value.length for _, value in self.splices)
        return SplicedPayload(tuple(parts), size)


def joined(payload: bytes | SplicedPayload) -> bytes:
    """``payload`` in one buffer, its splices read."""
    if isinstance(payload, bytes):
        return payload
    return b"".join(part if isinstance(part, bytes) else part.read(0, part.length)
                    for part in payload.parts)
