"""Kafka's sampled windows (``SampledStat``, ``WindowedSum`` in its metrics library), the
measure under both of its quota rates: client quotas (:mod:`pykraft.quota.rate`) and
replication throttles (:mod:`pykraft.replica.replication_quota`).

``samples`` windows of ``window_ms`` each: a value goes to the current sample, a new sample
starts when the current one's window is over (one more than ``samples`` is kept, for the
window the oldest overlaps), and a sample without an event for ``samples`` windows is
reset. Time is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0


class WindowedSum:
    """The sum of what was recorded over the retained samples."""

    __slots__ = ("_current", "_samples", "samples", "window_ms")

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError(f"a windowed sum needs samples >= 1 and window_ms >= 1, "
                             f"not {samples} and {window_ms}")
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        """Add ``value`` at ``now_ms`` (a negative one takes a recorded value back)."""
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        sample = self._samples[self._current]
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def total(self, now_ms: int) -> float:
        """The retained samples' sum."""
        self._purge(now_ms)
        return sum(sample.value for sample in self._samples)

    def oldest_start_ms(self, now_ms: int) -> int:
        """When the oldest retained sample started (a sample starts now if there is none,
        as Kafka's ``oldest``)."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return min(sample.start_ms for sample in self._samples)

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms, now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        expire_ms = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_ms:
                sample.reset(now_ms)
