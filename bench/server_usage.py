"""What the server processes use while a workload runs, read from ``/proc``: CPU-seconds
(utime + stime of every thread, plus reaped children's) and resident memory of each process,
sampled by a thread every :data:`SAMPLE_INTERVAL_S` (the peak, and the RSS at the end is the
last sample's).

A JVM's and a Python server's figures come from the same kernel counters, so the two systems
are measured alike; the load generators are not counted.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
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
def measured(current: Callable[[], dict[int, int]]) -> Iterator[Usage]:
    """Sample the server processes ``current()`` names (node id -> pid) while the block
    runs; the :class:`Usage` is filled in when it ends (also when it raises). A process
    killed meanwhile counts until its last sample; one started meanwhile (a node restarted)
    counts from its start, under the same node id."""
    usage = Usage()
    #: pid -> (its node id, its CPU-seconds as the block began: 0 if it started later)
    first_seen: dict[int, tuple[int, float]] = {}
    last_cpu: dict[int, float] = {}
    stop = threading.Event()

    def observe(first: bool) -> None:
        for node, pid in current().items():
            cpu = cpu_seconds(pid)
            if cpu is None:
                continue
            first_seen.setdefault(pid, (node, cpu if first else 0.0))
            last_cpu[pid] = cpu
            rss = rss_bytes(pid)
            usage.peak_rss[node] = max(usage.peak_rss.get(node, 0), rss)
            usage.end_rss[node] = rss

    def sample() -> None:
        while not stop.wait(SAMPLE_INTERVAL_S):
            observe(first=False)

    observe(first=True)
    sampler = threading.Thread(target=sample, name="server-usage", daemon=True)
    sampler.start()
    try:
        yield usage
    finally:
        stop.set()
        sampler.join()
        observe(first=False)
        for pid, (node, started) in first_seen.items():
            usage.cpu_s[node] = usage.cpu_s.get(node, 0.0) + last_cpu[pid] - started
