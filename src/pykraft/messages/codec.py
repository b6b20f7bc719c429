"""Encode and decode schema messages, with a reader and a writer generated per
(schema, version, flexibility) and cached.

The generated functions (:mod:`pykraft.messages._codegen`) resolve once which fields exist
in the version, which are tagged, and how each is laid out, so decoding a record runs
straight-line code with no dispatch per field: this is the hot path of metadata log replay.
:func:`generated_source` shows the code of a message.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pykraft.errors import MessageDecodeError, MessageEncodeError, UnsupportedVersionError
from pykraft.messages import _codegen
from pykraft.messages._codegen import struct_reader, struct_writer
from pykraft.messages.schema import schema_of
from pykraft.messages.wire import (
    FieldDecodeError,
    FieldEncodeError,
    FieldReader,
    FieldWriter,
    format_path,
)

__all__ = [
    "decode",
    "decode_from",
    "encode",
    "encode_into",
    "generated_source",
    "run_reader",
    "struct_reader",
    "struct_writer",
]

M = TypeVar("M")

_TOP_READERS: dict[tuple[type, int], FieldReader] = {}
_TOP_WRITERS: dict[tuple[type, int], FieldWriter] = {}


def encode(msg: object, version: int, prefix: bytes = b"") -> bytes:
    """Serialize a ``@message`` at ``version`` (flexible or classic as its schema says),
    after ``prefix`` (a frame's header: one buffer, so a large body is not copied again)."""
    out = bytearray(prefix)
    encode_into(out, msg, version)
    return bytes(out)


def encode_into(out: bytearray, msg: object, version: int) -> None:
    """:func:`encode` appending to ``out`` (a
    :class:`~pykraft.messages.splice.SplicedBuffer` takes records held in files)."""
    write = _TOP_WRITERS.get((type(msg), version))
    if write is None:
        schema = schema_of(type(msg))
        if schema.valid_versions is None or version not in schema.valid_versions:
            raise UnsupportedVersionError(
                f"cannot write {schema.name} at version {version} "
                f"(valid versions: {schema.valid_versions or 'none, it is a nested struct'})",
                api_version=version,
            )
        write = struct_writer(schema, version, schema.is_flexible(version))
        _TOP_WRITERS[(type(msg), version)] = write
    try:
        write(out, msg)
    except FieldEncodeError as exc:
        name = type(msg).__name__
        text = f"cannot encode {name} v{version}: {format_path(exc.path)}: {exc.reason}"
        if exc.unsupported:
            raise UnsupportedVersionError(text, api_version=version) from None
        raise MessageEncodeError(text) from None


def decode(cls: type[M], version: int, data: bytes | bytearray | memoryview) -> M:
    """Parse exactly ``data`` as ``cls`` at ``version``; trailing bytes are an error."""
    buf = data if isinstance(data, bytes) else bytes(data)
    msg, pos = decode_from(cls, version, buf)
    if pos != len(buf):
        raise MessageDecodeError(
            f"{cls.__name__} v{version}: {len(buf) - pos} unexpected trailing byte(s)",
            position=pos,
        )
    return msg


def decode_from(
    cls: type[M],
    version: int,
    data: bytes | bytearray | memoryview,
    pos: int = 0,
    end: int | None = None,
) -> tuple[M, int]:
    """Parse ``cls`` embedded in ``data`` at ``pos`` (not past ``end``); returns the
    message and the position just after it."""
    read = _TOP_READERS.get((cls, version))
    if read is None:
        schema = schema_of(cls)
        if schema.valid_versions is None or version not in schema.valid_versions:
            valid = schema.valid_versions or "none, it is a nested struct"
            raise MessageDecodeError(
                f"{cls.__name__}: unsupported version {version} (valid: {valid})", position=pos
            )
        read = struct_reader(schema, version, schema.is_flexible(version))[0]
        _TOP_READERS[(cls, version)] = read
    buf = data if isinstance(data, bytes) else bytes(data)
    try:
        result: tuple[M, int] = read(buf, pos, len(buf) if end is None else min(end, len(buf)))
    except FieldDecodeError as exc:
        raise _decode_error(f"{cls.__name__} v{version}", exc) from None
    return result


def run_reader(
    read: FieldReader, label: str, data: bytes, pos: int = 0, end: int | None = None
) -> tuple[Any, int]:
    """Run a compiled reader, turning an internal failure into :class:`MessageDecodeError`
    that names ``label`` and the field path."""
    limit = len(data) if end is None else min(end, len(data))
    try:
        return read(data, pos, limit)
    except FieldDecodeError as exc:
        raise _decode_error(label, exc) from None


def _decode_error(label: str, exc: FieldDecodeError) -> MessageDecodeError:
    path = format_path(exc.path)
    return MessageDecodeError(
        f"{label}: {path or '<message>'}: {exc.reason} (at byte {exc.position})",
        path=path,
        position=exc.position,
    )


def generated_source(cls: type, version: int, flexible: bool | None = None) -> str:
    """The Python source generated to read and write ``cls`` at ``version`` (a debugging
    aid). A nested struct has its own functions and needs its parent's ``flexible``."""
    schema = schema_of(cls)
    if flexible is None:
        flexible = schema.is_flexible(version)
    return _codegen.generated_source(schema, version, flexible)
