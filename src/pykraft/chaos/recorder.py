"""The history file: events appended as JSON lines by every workload thread, flushed per
line so a run that dies still leaves what it saw."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from pykraft.chaos.history import Event, FaultEvent, decode_lines, encode


class Recorder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("w", encoding="utf-8")
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._started_wall = time.time()

    def now(self) -> int:
        """Milliseconds since the run began (the events' ``t``)."""
        return int((time.monotonic() - self._started) * 1000)

    def at(self, wall_s: float) -> int:
        """The ``t`` of a wall-clock time (a server log's), from the run's start."""
        return int((wall_s - self._started_wall) * 1000)

    def write(self, event: Event) -> None:
        line = encode(event) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()

    def fault(self, kind: str, target: str, phase: str) -> None:
        self.write(FaultEvent(self.now(), kind, target, phase))

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_history(path: Path) -> list[Event]:
    return decode_lines(path.read_text(encoding="utf-8").splitlines())
