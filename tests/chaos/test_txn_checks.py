"""The transactions' checker on small histories: what each anomaly looks like, for the
transactional producers and for the exactly-once copier."""

from __future__ import annotations

from pykraft.chaos.history import Committed, CtpResult, Event, TxnEnd, TxnLog, TxnRead
from pykraft.chaos.txn_checks import TxnFigures, check_copies, check_transactions

COMMITTED = TxnEnd(10, "t0.0-0", "commit", [[0, "t0.0-0.0"], [1, "t0.0-0.1"]])
ABORTED = TxnEnd(20, "t0.0-1", "abort", [[0, "t0.0-1.0"], [1, "t0.0-1.1"]])
UNKNOWN = TxnEnd(30, "t0.0-2", "unknown", [[0, "t0.0-2.0"], [0, "t0.0-2.1"]])


def judged(*events: Event) -> tuple[TxnFigures, list[str]]:
    notes: list[str] = []
    return check_transactions(list(events), notes.append), notes


def test_a_clean_history() -> None:
    figures, notes = judged(COMMITTED, ABORTED, UNKNOWN,
                            TxnRead(40, "r0", 0, 0, "t0.0-0.0"),
                            TxnLog(0, ["t0.0-0.0", "t0.0-2.0", "t0.0-2.1"]),
                            TxnLog(1, ["t0.0-0.1"]))
    assert (figures.committed, figures.aborted, figures.unknown) == (1, 1, 1)
    assert (figures.reads, figures.unknown_visible, figures.anomalies) == (1, 1, 0)
    assert notes == []


def test_an_unknown_outcome_may_be_invisible_too() -> None:
    figures, _ = judged(COMMITTED, UNKNOWN, TxnLog(0, ["t0.0-0.0"]), TxnLog(1, ["t0.0-0.1"]))
    assert figures.anomalies == 0 and figures.unknown_visible == 0


def test_each_anomaly() -> None:
    figures, notes = judged(
        COMMITTED, ABORTED, UNKNOWN,
        TxnRead(40, "r0", 0, 1, "t0.0-1.0"),  # an aborted value read
        TxnLog(0, ["t0.0-2.0", "t0.0-0.0", "t0.0-0.0", "ghost"]),  # unknown partly, dup, phantom
        TxnLog(1, ["t0.0-1.1"]))  # an aborted value kept; committed t0.0-0.1 missing
    assert figures.aborted_reads == 2
    assert figures.partly_visible == 3  # committed (1 of 2), aborted (1 of 2), unknown (1 of 2)
    assert (figures.duplicated, figures.phantom, figures.commits_lost) == (1, 1, 0)
    assert figures.anomalies == 7 and len(notes) == 7


def test_a_committed_transaction_entirely_missing_is_lost() -> None:
    figures, _ = judged(COMMITTED, TxnLog(0, []), TxnLog(1, []))
    assert figures.commits_lost == 1 and figures.anomalies == 1


def test_no_last_read_judges_the_reads_only() -> None:
    figures, _ = judged(COMMITTED, ABORTED, TxnRead(40, "r0", 0, 0, "t0.0-0.0"))
    assert figures.anomalies == 0 and figures.commits_lost == 0


def copies(output: list[list[str | None]], offsets: list[int]) -> TxnFigures:
    figures = TxnFigures()
    committed = {0: Committed(0, 10, ["a", "b", None, "c"]), 1: Committed(1, 0, ["x", "y"])}
    check_copies([CtpResult(50, offsets, output, 2)], committed, figures, lambda _: None)
    return figures


def test_exact_copies_below_the_committed_offsets() -> None:
    figures = copies([["a", "b", "c"], ["x"]], [14, 1])  # partition 1 committed up to y
    assert (figures.copied, figures.copy_generations, figures.anomalies) == (4, 2, 0)
    assert copies([[], []], [-1, -1]).anomalies == 0  # nothing committed, nothing copied


def test_each_copy_anomaly() -> None:
    assert copies([["a", "c"], ["x", "y"]], [14, 2]).copies_missing == 1
    assert copies([["a", "a", "b", "c"], ["x", "y"]], [14, 2]).copies_duplicated == 1
    assert copies([["a", "b", "c"], ["x", "y"]], [14, 1]).copies_extra == 1
    assert copies([["b", "a", "c"], ["x", "y"]], [14, 2]).copies_reordered == 1
