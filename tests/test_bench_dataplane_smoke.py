"""bench/dataplane.py still imports and parses its arguments (no servers: the run itself
takes minutes and installs peers, so it is run by hand, see docs/bench.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "bench" / "dataplane.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=30, check=False)


def test_help_lists_the_options() -> None:
    done = run("--help")
    assert done.returncode == 0, done.stderr
    for option in ("--systems", "--count-100", "--count-1k", "--rate", "--profile"):
        assert option in done.stdout


def test_pykraft_must_come_first_and_peers_must_be_known() -> None:
    for systems in ("jetstream,pykraft", "pykraft,kafka"):
        done = run("--systems", systems)
        assert done.returncode == 2
        assert "pykraft first" in done.stderr


def test_counts_must_be_positive() -> None:
    done = run("--count-100", "0")
    assert done.returncode == 2
    assert "must be positive" in done.stderr
