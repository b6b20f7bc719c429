"""Crash-safe file replacement, the way Kafka persists its small state files.

A reader must only ever see the old or the new content, never a mix: write a sibling
``<name>.tmp``, fsync it, rename it over the target, then fsync the directory so the rename
itself survives a power loss. A stale ``.tmp`` left by a crash is simply overwritten.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pykraft.errors import StorageIOError

TMP_SUFFIX = ".tmp"


def fsync_dir(directory: Path) -> None:
    """Make creations, renames and deletions inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_files(paths: Iterable[Path]) -> None:
    """Fsync each file through a descriptor of its own (which flushes the data whichever
    descriptor wrote it): safe beside the thread writing them. A file gone meanwhile (a
    segment deleted) needs no fsync any more."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (tmp, fsync, rename, fsync dir)."""
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        atomic_write_in(directory, path.name, data)
    finally:
        os.close(directory)


def atomic_write_in(directory_fd: int, name: str, data: bytes) -> None:
    """:func:`atomic_write` of ``name`` in the directory open as ``directory_fd``: the
    directory it was opened as, even if renamed since."""
    tmp = name + TMP_SUFFIX
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=directory_fd)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, name, src_dir_fd=directory_fd, dst_dir_fd=directory_fd)
    os.fsync(directory_fd)


def write_all_at(fd: int, path: Path, data: bytes, position: int) -> None:
    """Write all of ``data`` at ``position`` of a segment file; on failure cut the partial
    write off again (so the file ends on a whole batch) and raise :class:`StorageIOError`."""
    try:
        with memoryview(data) as view:
            written = 0
            while written < len(data):
                written += os.pwrite(fd, view[written:], position + written)
    except OSError as exc:
        os.ftruncate(fd, position)
        raise StorageIOError(f"cannot append to {path}: {exc}") from exc
