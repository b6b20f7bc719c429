"""The controllers' fences of brokers on refused listeners, read back from their logs.

pykraft's active controller fences a broker at once when every listener it registered
refuses connections (:mod:`pykraft.runtime.broker_liveness`, beyond Kafka) and logs
``broker_listeners_refused ... fenced=True``. A chaos run turns those lines into history
events, and the checker holds each against the faults: a broker fenced so while its node
ran is a false fence. ``bench/failover_leader.py`` times the fence from the same lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

_FENCED = re.compile(r"^ts=(\S+) .*event=broker_listeners_refused broker=(\d+) "
                     r"broker_epoch=(-?\d+) fenced=True")


@dataclass(frozen=True, slots=True)
class LoggedFence:
    at: datetime  # the log line's wall-clock time (UTC)
    broker: int
    epoch: int


def logged_fences(log: Path) -> list[LoggedFence]:
    """Every fence on refused listeners ``log`` (a controller's server.log) records, in
    order; none when the log is missing (a node that never started)."""
    try:
        text = log.read_text(errors="replace")
    except FileNotFoundError:
        return []
    return [LoggedFence(datetime.fromisoformat(match.group(1)), int(match.group(2)),
                        int(match.group(3)))
            for match in map(_FENCED.match, text.splitlines()) if match]
