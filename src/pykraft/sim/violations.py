"""What a simulated run raises when a safety or liveness property breaks.

Its own module because the cluster raises it too and :mod:`pykraft.sim.invariants` reads the
cluster: both import it from here.
"""

from __future__ import annotations


class InvariantViolation(Exception):  # noqa: N818 - it names a broken property, not an error
    """A safety or liveness property failed; ``invariant`` names it."""

    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(f"{invariant}: {detail}")
        self.invariant = invariant
        self.detail = detail
