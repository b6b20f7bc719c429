"""Percentiles of the simulated election and recovery times of a sweep: the local and the
Spark sweep print the same table from the same RunResults."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pykraft.sim.runner import RunResult

FRACTIONS = (0.5, 0.9, 0.99)
TIMINGS = ("first_leader_ms", "recovery_ms")


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest-rank percentile (the value a fraction of runs did not exceed); None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def timing_percentiles(results: Sequence[RunResult],
                       fractions: Sequence[float] = FRACTIONS) -> list[list[str]]:
    """Per scenario: runs measured and p50/p90/p99/max of time to first leader and to
    recovery, in simulated ms, as table cells ("-" where nothing was measured)."""
    by_name: dict[str, list[RunResult]] = {}
    for result in results:
        by_name.setdefault(result.scenario, []).append(result)
    table: list[list[str]] = []
    for name, runs in by_name.items():
        cells = [name]
        for column in TIMINGS:
            values = [v for r in runs if (v := getattr(r, column)) is not None]
            cells.append(str(len(values)))
            cells += [_cell(percentile(values, f)) for f in (*fractions, 1.0)]
        table.append(cells)
    return table


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"
