"""A recorded run's faults as steps to carry out again, each on the nodes it hit then.

A schedule names roles (``leader:0``, ``active-controller``) that the injector resolves when
a fault begins, so one seed can hit different nodes on another run. A replay takes instead
what the history recorded: each fault's kind, its resolved nodes, when it began relative to
the workload's first send, and how long it was held (a skipped fault is skipped again).
Pure: events in, steps and the recorded run's settings out.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.chaos.checker import SKIPPED
from pykraft.chaos.history import Event, FaultEvent, RunInfo, Send
from pykraft.chaos.injector import Active
from pykraft.errors import PyKraftError


class ReplayError(PyKraftError):
    """A history that holds no run to replay, or a fault target that names no node."""


@dataclass(frozen=True, slots=True)
class Step:
    """A recorded fault: ``at_ms`` after the first send; ``active`` None when skipped
    (``target`` then is the schedule's words), else held ``hold_ms``."""

    at_ms: int
    kind: str
    target: str
    active: Active | None
    hold_ms: int = 0


def recorded_run(events: list[Event]) -> tuple[RunInfo, list[Step]]:
    """The run's first line and its faults in the order they began."""
    info = next((e for e in events if isinstance(e, RunInfo)), None)
    if info is None:
        raise ReplayError("the history has no run line to replay")
    origin = next((e.t for e in events if isinstance(e, Send)), 0)
    faults = [e for e in events if isinstance(e, FaultEvent)]
    steps = []
    for index, event in enumerate(faults):
        if event.phase == SKIPPED:
            steps.append(Step(event.t - origin, event.kind, event.target, None))
        elif event.phase == "start":
            end = next((e.t for e in faults[index + 1:] if e.phase == "end"
                        and (e.kind, e.target) == (event.kind, event.target)), event.t)
            steps.append(Step(event.t - origin, event.kind, event.target,
                              _active(event.kind, event.target), end - event.t))
    return info, steps


def _active(kind: str, target: str) -> Active:
    try:
        return Active.parse(kind, target)
    except ValueError:
        raise ReplayError(f"fault target {target!r} names no node") from None
