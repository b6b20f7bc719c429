"""``partition.metadata``: the topic id a partition directory belongs to.

Kafka (KIP-516) writes ``version: 0\\ntopic_id: <uuid>`` with no trailing newline; for the
metadata log the id is always the fixed ``AAAAAAAAAAAAAAAAAAAAAQ``.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from pykraft.ids import InvalidUuidError, uuid_from_str, uuid_to_str
from pykraft.storage.file_error import StateFileError
from pykraft.storage.fsutil import atomic_write

PARTITION_METADATA = "partition.metadata"
_VERSION_LINE = "version: 0"
_TOPIC_PREFIX = "topic_id: "


def encode_partition_metadata(topic_id: uuid.UUID) -> bytes:
    return f"{_VERSION_LINE}\n{_TOPIC_PREFIX}{uuid_to_str(topic_id)}".encode("ascii")


def decode_partition_metadata(data: bytes, source: str) -> uuid.UUID:
    """The topic id; a wrong version line or a malformed id is a :class:`StateFileError`."""
    try:
        lines = data.decode("ascii").split("\n")
    except UnicodeDecodeError:
        raise StateFileError(source, "partition metadata is not ASCII text") from None
    if lines[-1] == "":
        lines.pop()  # tolerate a trailing newline from other writers
    if len(lines) != 2 or lines[0] != _VERSION_LINE:
        raise StateFileError(
            source, f"expected '{_VERSION_LINE}' followed by a topic_id line, got {lines[:3]!r}"
        )
    if not lines[1].startswith(_TOPIC_PREFIX):
        raise StateFileError(source, f"second line {lines[1]!r} is not 'topic_id: <uuid>'")
    try:
        return uuid_from_str(lines[1][len(_TOPIC_PREFIX):])
    except InvalidUuidError as exc:
        raise StateFileError(source, str(exc)) from None


def read_partition_metadata(path: Path) -> uuid.UUID:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StateFileError(path, f"cannot read: {exc.strerror or exc}") from None
    return decode_partition_metadata(data, str(path))


def write_partition_metadata(path: Path, topic_id: uuid.UUID) -> None:
    atomic_write(path, encode_partition_metadata(topic_id))
