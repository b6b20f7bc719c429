"""The fast-failover decisions without I/O: who is probed, when, once per silence, one
probe per broker at a time, and what a round's outcomes mean (only refusals on every
endpoint are evidence, about the incarnation the probe began with)."""

from __future__ import annotations

import pytest

from pykraft.controller.broker_liveness import (
    Incarnation,
    LivenessWatch,
    NoEvidence,
    Probe,
    ProbeAgain,
    ProbeOutcome,
    Report,
    evidence_is_current,
)

REFUSED, ACCEPTED = ProbeOutcome.REFUSED, ProbeOutcome.ACCEPTED
TIMED_OUT, FAILED = ProbeOutcome.TIMED_OUT, ProbeOutcome.FAILED
ONE = Incarnation(1, 7, (("h", 1), ("h", 2)))
TWO = Incarnation(2, 9, (("h", 3),))


def watch(*incarnations: Incarnation, overdue_ms: float | None = None,
          unfenced: tuple[int, ...] = ()) -> LivenessWatch:
    known = {i.broker_id: i for i in incarnations}
    return LivenessWatch(known.get, unfenced=lambda: unfenced, overdue_ms=overdue_ms,
                         rounds=3, spacing_ms=200)


def test_a_closed_heartbeat_connection_starts_a_probe_of_the_current_incarnation() -> None:
    w = watch(ONE)
    w.heartbeat(0, "c1", 1)
    assert w.closed("c1") == Probe(ONE, 0)
    assert w.closed("c1") is None  # that connection is gone


def test_a_connection_nobody_heartbeated_on_starts_nothing() -> None:
    assert watch(ONE).closed("c1") is None


def test_an_unknown_or_fenced_broker_is_not_probed() -> None:
    w = watch()
    w.heartbeat(0, "c1", 1)
    assert w.closed("c1") is None


def test_one_probe_per_incarnation_at_a_time() -> None:
    w = watch(ONE)
    w.heartbeat(0, "c1", 1)
    w.heartbeat(0, "c2", 1)
    probe = w.closed("c1")
    assert probe is not None and w.closed("c2") is None
    w.round_done(10, probe, [REFUSED, REFUSED])
    w.heartbeat(20, "c3", 1)
    assert w.closed("c3") == Probe(ONE, 0)


def test_a_process_that_re_registered_and_died_while_the_old_one_was_probed_is_probed() -> None:
    """Broker 1 restarts (epoch 7 -> 8) and dies again while its old incarnation's probe is
    still under way: the new one gets its own probe at once, not two heartbeats later, and
    the old probe's end leaves it running."""
    known = {1: ONE}
    w = LivenessWatch(known.get, rounds=3, spacing_ms=200)
    w.heartbeat(0, "c1", 1)
    old = w.closed("c1")
    assert old == Probe(ONE)
    again = Incarnation(1, 8, ONE.endpoints)
    known[1] = again
    w.heartbeat(100, "c2", 1)
    assert w.closed("c2") == Probe(again)
    assert isinstance(w.round_done(150, old, [ACCEPTED, ACCEPTED]), ProbeAgain)
    w.round_done(160, Probe(ONE, 2), [ACCEPTED, ACCEPTED])  # the old probe ends
    w.heartbeat(170, "c3", 1)
    assert w.closed("c3") is None  # the new incarnation's probe is still under way


def test_refusals_everywhere_are_reported_with_the_probed_epoch() -> None:
    w = watch(ONE)
    w.heartbeat(0, "c1", 1)
    probe = w.closed("c1")
    assert probe is not None
    assert w.round_done(5, probe, [REFUSED, REFUSED]) == Report(ONE)


@pytest.mark.parametrize("outcomes", [[REFUSED, ACCEPTED], [TIMED_OUT, REFUSED],
                                      [FAILED, FAILED], [ACCEPTED, ACCEPTED]])
def test_anything_but_refusals_everywhere_is_no_evidence_after_the_last_round(
        outcomes: list[ProbeOutcome]) -> None:
    w = watch(ONE)
    w.heartbeat(0, "c1", 1)
    probe = w.closed("c1")
    verdicts = []
    for now in (5, 210, 415):
        assert probe is not None
        verdict = w.round_done(now, probe, outcomes)
        verdicts.append(verdict)
        probe = verdict.probe if isinstance(verdict, ProbeAgain) else None
    assert verdicts == [ProbeAgain(Probe(ONE, 1), 205), ProbeAgain(Probe(ONE, 2), 410),
                        NoEvidence(ONE)]


def test_a_later_round_of_refusals_is_evidence() -> None:
    w = watch(ONE)
    w.heartbeat(0, "c1", 1)
    probe = w.closed("c1")
    assert probe is not None
    again = w.round_done(5, probe, [REFUSED, ACCEPTED])
    assert isinstance(again, ProbeAgain)
    assert w.round_done(205, again.probe, [REFUSED, REFUSED]) == Report(ONE)


def test_outcomes_must_match_the_endpoints() -> None:
    with pytest.raises(ValueError, match="1 outcomes for 2 endpoints"):
        watch(ONE).round_done(0, Probe(ONE), [REFUSED])


def test_overdue_heartbeats_are_probed_once_per_silence() -> None:
    w = watch(ONE, TWO, overdue_ms=100)
    w.heartbeat(0, "c1", 1)
    w.heartbeat(0, "c2", 2)
    assert w.overdue(99) == []
    w.heartbeat(60, "c2", 2)
    assert w.overdue(100) == [Probe(ONE)]
    w.abandon(ONE)
    assert w.overdue(150) == []  # the same silence
    w.heartbeat(200, "c1", 1)
    assert w.overdue(300) == [Probe(ONE), Probe(TWO)]


def test_a_broker_never_heard_from_is_overdue_from_when_the_watch_began() -> None:
    w = watch(ONE, overdue_ms=100, unfenced=(1,))
    assert w.overdue(1000) == []
    assert w.overdue(1100) == [Probe(ONE)]


def test_without_an_overdue_bound_silence_is_not_watched() -> None:
    w = watch(ONE, unfenced=(1,))
    w.heartbeat(0, "c1", 1)
    assert w.check_every_ms is None and w.overdue(10**9) == []


def test_evidence_fences_only_the_incarnation_it_is_about() -> None:
    assert evidence_is_current(7, 7)
    assert not evidence_is_current(8, 7)  # re-registered since: stale evidence
    assert not evidence_is_current(None, 7)  # fenced or unregistered
