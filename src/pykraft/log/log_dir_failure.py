"""A log directory that fails (a full disk, an I/O error): Kafka's ``LogDirFailureChannel``
and ``ReplicaManager.handleLogDirFailure``.

Kafka (4.4, whatever the metadata.version) takes a failed directory offline, stops serving
its replicas (they answer KAFKA_STORAGE_ERROR) and reports it to the controller
(BrokerHeartbeat's ``OfflineLogDirs``, KIP-858), which from metadata.version 3.7-IV2 moves
their leaderships away and takes them out of the ISRs; the broker serves its other
directories on. It halts (``Exit.halt(1)``: no controlled shutdown, no checkpoint) when the
directory holds the metadata log, when no log directory is left, or when it cannot report
the directory (it has no ``directory.id``). Here ``report`` is what reports it (the broker
stops the directory's replicas and heartbeats it:
:class:`pykraft.broker.broker_server.BrokerServer`); with
none, or when it cannot, the broker halts and the controller fences the silent broker once
its session times out, as for a crash.

A directory that failed before the broker serves (:meth:`LogDirFailures.fail_at_startup`:
the start-up checks of :mod:`pykraft.storage.log_dir_check`, Kafka's
``createAndValidateLogDirs``, or an I/O error loading its logs, Kafka's ``loadLogs``) is
offline from the start and never reported: the broker registers only its online
directories, so the controller takes the replicas placed in it as offline (Kafka registers
before it loads the logs and names a directory failed while loading in a heartbeat; the
controller ends in the same state). It halts the start-up as :meth:`LogDirFailures.fail`
would halt the broker.

Nothing written is damaged: a failed append is cut off again before the error is raised
(:func:`pykraft.storage.fsutil.write_all_at`), and a restart recovers the directory as
after a crash (no clean-shutdown marker is written to a failed directory).

Interface::

    failures = LogDirFailures(log_dirs, metadata_log_dir, halt=halt_process)
    failures.report = reporter                 # reporter(directory) -> False: cannot
    failures.fail(directory, message, error)   # logs at ERROR, then reports or halts
    failures.fail_at_startup(directory, message, error)  # offline from the start
    failures.offline                           # the failed directories
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from pykraft.errors import StorageError

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
        self.report: Callable[[Path], bool] | None = None
        """Takes a failed directory's replicas offline and reports it to the controller;
        False when it cannot (no directory id): the broker halts then."""

    def fail(self, directory: Path, message: str, error: BaseException) -> None:
        """Take ``directory`` offline for ``error`` (logged with ``message``, as Kafka's
        ``maybeAddOfflineLogDir``), then report it, or halt (see module); a directory
        already offline changes nothing."""
        if directory in self.offline:
            return
        self.offline.add(directory)
        # structured as runtime.logfmt.event logs, without importing the runtime above us
        log.error("log_dir_failed", extra={"fields": {
            "dir": str(directory), "message": message, "error": _described(error)}})
        reason = self._reason(directory)
        if reason is None and self.report is not None and self.report(directory):
            return
        log.error("halting", extra={"fields": {"reason": reason or (
            f"Shutdown broker because log dir {directory} has failed and cannot be "
            "reported to the controller (no directory id)")}})
        self._halt(1)

    def fail_at_startup(self, directory: Path, message: str,
                        error: BaseException | str) -> None:
        """``directory`` failed while the broker started (Kafka's
        ``createAndValidateLogDirs`` and ``loadLogs``): offline from the start, logged as
        :meth:`fail` logs, and never reported: the broker registers without it, so the
        controller takes its replicas as offline. Raises :class:`StorageError` when the
        broker may not start without it (see module)."""
        self.offline.add(directory)
        log.error("log_dir_failed", extra={"fields": {
            "dir": str(directory), "message": message, "error": _described(error)}})
        reason = self._reason(directory)
        if reason is not None:
            raise StorageError(reason)

    def _reason(self, directory: Path) -> str | None:
        """Kafka's fatal message for a failure that halts whatever happens, most specific
        first; None when reporting it may do."""
        if directory == self._metadata_log_dir:
            return f"Shutdown broker because the metadata log dir {directory} has failed"
        if set(self.log_dirs) <= self.offline:
            return (f"Shutdown broker because all log dirs in "
                    f"{', '.join(str(d) for d in self.log_dirs)} have failed")
        return None


def _described(error: BaseException | str) -> str:
    return error if isinstance(error, str) else f"{type(error).__name__}: {error}"
