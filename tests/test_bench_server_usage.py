"""bench/server_usage.py: the servers' CPU and RSS from /proc, for a process that lives
through a measured block and for one started in it (a node restarted by a failover row),
and 0/None for a process that is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
from server_usage import cpu_seconds, measured, rss_bytes

#: a child's fixed amount of work (CPU it spends, not a duration)
_BURN = "sum(i * i for i in range(3_000_000))"


def test_a_process_of_the_whole_block_counts_its_cpu_and_rss() -> None:
    me = os.getpid()
    with measured(lambda: {1: me}) as usage:
        sum(i * i for i in range(3_000_000))
    assert usage.cpu_s[1] > 0
    assert usage.peak_rss[1] >= usage.end_rss[1] > 0
    assert usage.total_cpu_s == usage.cpu_s[1]


def test_a_process_started_in_the_block_counts_from_its_start() -> None:
    nodes: dict[int, int] = {}
    child = None
    try:
        with measured(lambda: dict(nodes)) as usage:
            child = subprocess.Popen(
                [sys.executable, "-c", f"{_BURN}; print('burnt', flush=True); input()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            nodes[2] = child.pid
            assert child.stdout is not None
            assert child.stdout.readline() == b"burnt\n"  # its fixed work is done
            burnt = cpu_seconds(child.pid)
        assert burnt is not None and usage.cpu_s[2] >= burnt > 0
        assert usage.peak_rss[2] >= usage.end_rss[2] > 0
    finally:
        if child is not None:
            child.communicate(b"\n", timeout=60)
    assert cpu_seconds(child.pid) is None and rss_bytes(child.pid) == 0
