"""What the server processes use while a workload runs, read from ``/proc``: CPU-seconds
(utime + stime of every thread, plus reaped children's) and resident memory of each process,
sampled by a thread every :data:`SAMPLE_INTERVAL_S` for the peak and read once at the end.

A JVM's and a Python server's figures come from the same kernel counters, so the two systems
are measured alike; the load generators are not counted.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

SAMPLE_INTERVAL_S = 0.2
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
#: fields of /proc/<pid>/stat after the command's closing parenthesis: utime is the 14th
#: field of the line, so the 12th here (the state is the 1st), then stime, cutime, cstime
_UTIME = 11


def cpu_seconds(pid: int) -> float | None:
    """utime + stime + cutime + cstime of ``pid`` (None once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return sum(int(v) for v in fields[_UTIME:_UTIME + 4]) / _CLOCK_TICKS


def rss_bytes(pid: int) -> int:
    """The resident set of ``pid`` now (0 once it is gone)."""
    try:
        resident = Path(f"/proc/{pid}/statm").read_text().split()[1]
    except (OSError, IndexError):
        return 0
    return int(resident) * _PAGE_SIZE


@dataclass
class Usage:
    """One workload's use, per server node id: CPU-seconds spent during it, peak and final RSS."""

    cpu_s: dict[int, float] = field(default_factory=dict)
    peak_rss: dict[int, int] = field(default_factory=dict)
    end_rss: dict[int, int] = field(default_factory=dict)

    @property
    def total_cpu_s(self) -> float:
        return sum(self.cpu_s.values())

    def summary(self) -> dict[str, object]:
        return {"cpu_s": {str(n): round(s, 2) for n, s in self.cpu_s.items()},
                "total_cpu_s": round(self.total_cpu_s, 2),
                "peak_rss_mb": {str(n): round(b / 2**20, 1) for n, b in self.peak_rss.items()},
                "end_rss_mb": {str(n): round(b / 2**20, 1) for n, b in self.end_rss.items()}}


@contextmanager
def measured(pids: dict[int, int]) -> Iterator[Usage]:
    """Sample the processes ``pids`` (node id -> pid) while the block runs; the
    :class:`Usage` is filled in when it ends (also when it raises). A process killed
    meanwhile counts until its last sample (a restarted node's new process is not counted)."""
    usage = Usage()
    started = {node: cpu_seconds(pid) or 0.0 for node, pid in pids.items()}
    last = dict(started)
    stop = threading.Event()

    def sample() -> None:
        while True:
            for node, pid in pids.items():
                usage.peak_rss[node] = max(usage.peak_rss.get(node, 0), rss_bytes(pid))
                last[node] = cpu_seconds(pid) or last[node]
            if stop.wait(SAMPLE_INTERVAL_S):
                return

    sampler = threading.Thread(target=sample, name="server-usage", daemon=True)
    sampler.start()
    try:
        yield usage
    finally:
        stop.set()
        sampler.join()
        for node, pid in pids.items():
            usage.cpu_s[node] = (cpu_seconds(pid) or last[node]) - started[node]
            usage.end_rss[node] = rss_bytes(pid)
            usage.peak_rss[node] = max(usage.peak_rss.get(node, 0), usage.end_rss[node])
