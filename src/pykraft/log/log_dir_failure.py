"""A log directory that fails (a full disk, an I/O error): Kafka's ``LogDirFailureChannel``
and ``ReplicaManager.handleLogDirFailure``, for the configurations a pykraft broker runs.

Kafka takes a failed directory offline, stops serving its replicas and reports it to the
controller (BrokerHeartbeat's ``OfflineLogDirs``, KIP-858), which moves their leaderships
away. It halts the broker instead (``Exit.halt(1)``: no controlled shutdown, no checkpoint)
when the directory holds the metadata log, when no log directory is left, or when it cannot
report the directory. A pykraft broker registers only its metadata log directory with the
controller and assigns no partition to a directory, so no other directory can be reported
either: every failure halts, and the controller fences the silent broker once its session
times out and elects other replicas, as for a crash. Before, the broker stayed leader and
in every ISR, answering KAFKA_STORAGE_ERROR for ever and logging nothing.

Nothing written is damaged: a failed append is cut off again before the error is raised
(:func:`pykraft.storage.fsutil.write_all_at`), and the restart recovers the directory as
after a crash (no clean-shutdown marker is written on the way out).

Interface::

    failures = LogDirFailures(log_dirs, metadata_log_dir, halt=halt_process)
    failures.fail(directory, message, error)   # logs at ERROR, then halts (once per dir)
    failures.offline                           # the failed directories
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

#: Ends the process at once with a status (Kafka's ``Exit.halt``); tests pass their own.
Halt = Callable[[int], None]


def halt_process(status: int) -> None:
    """Flush the log handlers, then exit without unwinding: no controlled shutdown (the
    controller learns of the failure from the missing heartbeats) and no clean-shutdown
    marker or checkpoint written to a directory that failed."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(status)


class LogDirFailures:
    """The broker's failed log directories and what their failure does (see module)."""

    def __init__(self, log_dirs: Sequence[Path], metadata_log_dir: Path | None,
                 halt: Halt = halt_process) -> None:
        self.log_dirs = tuple(log_dirs)
        self._metadata_log_dir = metadata_log_dir
        self._halt = halt
        self.offline: set[Path] = set()

    def fail(self, directory: Path, message: str, error: BaseException) -> None:
        """Take ``directory`` offline for ``error`` (logged with ``message``, as Kafka's
        ``maybeAddOfflineLogDir``) and halt; a directory already offline changes nothing."""
        if directory in self.offline:
            return
        self.offline.add(directory)
        # structured as runtime.logfmt.event logs, without importing the runtime above us
        log.error("log_dir_failed", extra={"fields": {
            "dir": str(directory), "message": message,
            "error": f"{type(error).__name__}: {error}"}})
        log.error("halting", extra={"fields": {"reason": self._reason(directory)}})
        self._halt(1)

    def _reason(self, directory: Path) -> str:
        """Kafka's fatal message for the failure, most specific first."""
        if directory == self._metadata_log_dir:
            return f"Shutdown broker because the metadata log dir {directory} has failed"
        if set(self.log_dirs) <= self.offline:
            return (f"Shutdown broker because all log dirs in "
                    f"{', '.join(str(d) for d in self.log_dirs)} have failed")
        return (f"Shutdown broker because log dir {directory} has failed and cannot be "
                "reported to the controller (no directory assignment)")
