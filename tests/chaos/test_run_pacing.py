"""A bounded run begins each fault only once the cluster is whole again (or the bound
passed); a replay carries out its steps in order, skipped ones recorded as skipped; once
asked to stop, no further fault begins."""

from __future__ import annotations

import threading
from typing import cast

import pytest

from pykraft.chaos import run as chaos_run
from pykraft.chaos.injector import Active, Injector
from pykraft.chaos.replay import Step
from pykraft.chaos.schedule import Fault


class FakeInjector:
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def begin(self, fault: Fault) -> Active:
        self.calls.append(f"begin {fault.index}")
        return Active(fault.kind, (1000,), fault.target)

    def apply(self, active: Active) -> Active:
        self.calls.append(f"apply {active.target}")
        return active

    def skip(self, kind: str, target: str) -> None:
        self.calls.append(f"skip {kind} {target}")

    def end(self, active: Active) -> None:
        self.calls.append(f"end {active.kind}")


def test_each_fault_waits_for_the_cluster_to_be_whole() -> None:
    calls: list[str] = []
    answers = iter([False, True, True])

    def whole() -> bool:
        calls.append("whole?")
        return next(answers)

    schedule = [Fault(0, "kill", "node:1000", None, 0, 0),
                Fault(1, "pause", "node:1000", None, 0, 0)]
    chaos_run._inject(schedule, cast(Injector, FakeInjector(calls)), whole, lambda _: None,
                      threading.Event())
    assert calls == ["whole?", "whole?", "begin 0", "end kill",
                     "whole?", "begin 1", "end pause"]


def test_a_cluster_never_whole_delays_a_fault_by_the_bound_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chaos_run, "WHOLE_TIMEOUT_S", 0.0)
    calls: list[str] = []
    lines: list[str] = []
    chaos_run._inject([Fault(0, "kill", "node:1000", None, 0, 0)],
                      cast(Injector, FakeInjector(calls)), lambda: False, lines.append,
                      threading.Event())
    assert calls == ["begin 0", "end kill"]
    assert "the next fault begins all the same" in lines[0]


def test_a_replay_applies_its_steps_in_order() -> None:
    calls: list[str] = []
    steps = [Step(0, "kill", "leader:0=node:1001", Active("kill", (1001,), "leader:0"), 0),
             Step(0, "pause", "leader:1", None),
             Step(0, "partition", "node:1-node:1002", Active("partition", (1, 1002), "node:1"))]
    chaos_run._replay(steps, cast(Injector, FakeInjector(calls)), lambda: 0, lambda _: None,
                      threading.Event())
    assert calls == ["apply leader:0=node:1001", "end kill", "skip pause leader:1",
                     "apply node:1-node:1002", "end partition"]


def test_once_asked_to_stop_no_further_fault_begins() -> None:
    calls: list[str] = []
    lines: list[str] = []
    enough = threading.Event()

    def whole() -> bool:
        enough.set()  # the request arrives while the first fault waits
        return True

    schedule = [Fault(i, "kill", "node:1000", None, 0, 0) for i in range(3)]
    chaos_run._inject(schedule, cast(Injector, FakeInjector(calls)), whole, lines.append,
                      enough)
    assert calls == ["begin 0", "end kill"]
    assert lines[-1] == "asked to stop after 1 faults: no more faults"
