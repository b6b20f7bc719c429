"""The typed errors pykraft raises for bad input.

One hierarchy so callers can catch "anything malformed from outside" in one place, while
each layer raises the specific subclass that names what was wrong and where.
"""

from __future__ import annotations


class PyKraftError(Exception):
    """Base class of every error pykraft raises on purpose."""


class ProtocolError(PyKraftError):
    """Malformed or unsupported bytes on the wire (frames, headers, message bodies)."""


class FrameTooLargeError(ProtocolError):
    """A frame's size prefix exceeds the configured maximum."""


class MalformedMessageError(ProtocolError):
    """Bytes that do not parse as the header or message they claim to be."""


class MessageDecodeError(MalformedMessageError):
    """Schema-message bytes that do not parse, with the field path that failed.

    ``path`` is the field path (``EndPoints[1].Host``) and ``position`` the byte offset in the
    decoded buffer where the problem was found, so a caller can point at the culprit.
    """

    def __init__(self, message: str, *, path: str = "", position: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.position = position


class MessageEncodeError(PyKraftError):
    """A message value that cannot be serialized (out of range, wrong type, null where not
    nullable); raised before any bytes are handed out."""


class UnsupportedVersionError(ProtocolError):
    """An (api key, version) pair this implementation does not speak.

    Carries the request's correlation id when it was readable, so a server can still answer
    (Kafka replies UNSUPPORTED_VERSION instead of dropping the connection).
    """

    def __init__(
        self,
        message: str,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        correlation_id: int | None = None,
    ) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class NetworkError(PyKraftError):
    """A peer that cannot be reached, hangs up, or does not answer within the timeout."""


class PeerUnreachableError(NetworkError):
    """The peer's address refused the connection: no process listens there (a dead node,
    not a slow or lossy link), which lets a follower give up on a leader at once."""


class RequestTooLargeError(PyKraftError):
    """A request to a peer would exceed the frame size the peer accepts: it is not sent
    (the peer would close the connection on it, every time)."""


class CorruptRecordError(PyKraftError):
    """A record batch or record that fails validation (CRC, lengths, magic, framing)."""

    def __init__(self, message: str, *, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position


class UnsupportedCompressionError(CorruptRecordError):
    """A compressed batch: KRaft never writes one and pykraft does not decode them."""


class MetadataRecordError(CorruptRecordError):
    """A metadata record value whose frame, api key, version or body is invalid."""


class ControlRecordError(CorruptRecordError):
    """A control record whose key or value cannot be decoded (unknown types are not errors)."""


class StorageError(PyKraftError):
    """A log directory, segment or state file that is missing, corrupt or inconsistent."""


class StorageIOError(StorageError):
    """The file system refused a read or write (a full disk, an I/O error): Kafka's
    IOException, which takes the log directory offline."""


class CorruptLogError(StorageError):
    """Corruption before the tail of a segment: the node must stop, nothing is dropped."""

    def __init__(self, path: str, position: int, reason: str) -> None:
        super().__init__(f"corrupt record batch in {path} at byte position {position}: {reason}")
        self.path = path
        self.position = position
        self.reason = reason


class OffsetOutOfRangeError(StorageError):
    """A read at an offset below the log start or beyond the log end offset."""


class ConfigError(PyKraftError):
    """A missing or invalid configuration key; the message names the key."""


class UsageError(PyKraftError):
    """A command line a tool refuses before any request (Kafka's tools print the message,
    often with their usage, and exit with status 1)."""


class RaftError(PyKraftError):
    """The consensus core refused an operation or detected a broken invariant."""


class NotLeaderError(RaftError):
    """An append was attempted on a replica that is not the leader of the current epoch."""


class RecordTooLargeError(RaftError):
    """Records that cannot fit in one batch of the configured maximum size."""


class FatalRaftError(RaftError):
    """A state that must never happen (e.g. truncating below the high watermark): stop."""


class MetadataImageError(PyKraftError):
    """A metadata record that cannot apply to the image it is replayed on (a change for an
    unknown broker, topic or partition): the log or snapshot is inconsistent."""


class ControllerError(PyKraftError):
    """The controller found its own bookkeeping inconsistent with the log it writes to
    (e.g. the writer placed records at an offset other than the predicted one)."""
