"""The ``.lock`` file a node holds in each of its log directories while it runs, as Kafka's
``LogManager.lockLogDirs`` and ``KafkaRaftManager`` do: a second process started on the same
directories is refused before it reads or writes anything. The controller lets a broker that
registers with the same directories replace its old session at once (a restart after
``kill -9``), which is safe only because two live processes cannot share them.

The lock is a POSIX record lock (``fcntl`` ``F_SETLK``), the kind Java's
``FileChannel.tryLock`` takes on Linux, so a Kafka node and a pykraft node exclude each other
too. It lasts as long as the process (or until :meth:`DirectoryLocks.release`)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable
from pathlib import Path

from pykraft.errors import StorageError

LOCK_FILE = ".lock"


class DirectoryLockedError(StorageError):
    """Another process holds a log directory's ``.lock``."""


class DirectoryLocks:
    """The held ``.lock`` files of a node's directories."""

    def __init__(self, fds: list[int]) -> None:
        self._fds = fds

    @classmethod
    def acquire(cls, directories: Iterable[Path]) -> DirectoryLocks:
        """Lock every existing directory (a missing one is the formatting check's to refuse);
        all or none: on a refusal the locks taken so far are released."""
        fds: list[int] = []
        try:
            for directory in directories:
                if directory.is_dir():
                    fds.append(_lock(directory))
        except BaseException:
            DirectoryLocks(fds).release()
            raise
        return cls(fds)

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)  # closing the descriptor drops the process's lock on the file
        self._fds = []


def _lock(directory: Path) -> int:
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise DirectoryLockedError(
            f"Failed to acquire lock on file {LOCK_FILE} in {directory}. A Kafka instance in "
            "another process or thread is using this directory.") from None
    return fd
