"""The run loop every simulated cluster shares: pop the next event, run it, check every
invariant after it; a condition not reached within its simulated-time bound is a Liveness
violation, and a PyKraftError escaping an event a FatalError."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from pykraft.errors import PyKraftError
from pykraft.sim.scheduler import EventQueue
from pykraft.sim.violations import InvariantViolation

C = TypeVar("C")


class SimLoop(Generic[C]):
    """The queue, the event count, the trace and the invariants of one run; ``C`` is the
    cluster type its invariants read (the subclass itself)."""

    def __init__(self, trace: Callable[[str], None] | None) -> None:
        self.queue = EventQueue()
        self.events = 0
        self._trace = trace
        self.invariants: list[Callable[[C], None]] = []

    def run_until(self, predicate: Callable[[], bool], max_ms: int, *, what: str = "",
                  require: bool = True, max_events: int = 500_000) -> None:
        deadline = self.queue.now_ms + max_ms
        while not predicate():
            if self.queue.now_ms > deadline or self.events > max_events:
                if require:
                    raise InvariantViolation(
                        "Liveness", f"{what or 'condition'} not reached within {max_ms} ms"
                    )
                return
            popped = self.queue.pop()
            if popped is None:
                raise InvariantViolation("Liveness", "no events left")
            label, action = popped
            self.events += 1
            if self._trace is not None:
                self._trace(f"{self.queue.now_ms:>8} {label}")
            try:
                action()
            except PyKraftError as exc:
                raise InvariantViolation("FatalError", f"{type(exc).__name__}: {exc}") from exc
            for invariant in self.invariants:
                invariant(self._checked())

    def _checked(self) -> C:
        """The cluster the invariants read: the subclass instance itself."""
        return self  # type: ignore[return-value]

    def run_for(self, ms: int) -> None:
        end = self.queue.now_ms + ms
        self.run_until(lambda: self.queue.now_ms >= end, ms + 1)

    def _log(self, text: str) -> None:
        if self._trace is not None:
            self._trace(f"{self.queue.now_ms:>8} {text}")
