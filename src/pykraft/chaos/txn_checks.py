"""What a chaos history says about transactions: atomic, and never read when aborted.

Against each transaction's outcome (:class:`~pykraft.chaos.history.TxnEnd`) and the last
``read_committed`` read of the transactions' topic (:class:`~pykraft.chaos.history.TxnLog`):

* aborted reads: a value of an aborted transaction that a ``read_committed`` consumer read,
  or that the last read holds;
* partly visible: a transaction the last read holds some values of but not all (a commit
  or an unknown outcome alike: a transaction is all or nothing);
* commits lost: a committed transaction none of whose values the last read holds;
* duplicated: a value the last read holds more than once, or in a partition other than the
  one it was written to;
* phantom: a value the last read holds that no recorded transaction wrote.

Unknown outcomes (the client lost its verdict) are counted, and judged only for
atomicity: either way is right.

The consume-transform-produce worker (:class:`~pykraft.chaos.history.CtpResult`) is judged
against the run's committed log: each partition's output must be exactly the input values
below the group's committed offset, in order; what differs is counted as missing,
duplicated, extra (copied, but its offset never committed with it) or reordered. Pure:
events in, figures out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pykraft.chaos.history import Committed, CtpResult, Event, TxnEnd, TxnLog, TxnRead

COMMIT, ABORT, UNKNOWN = "commit", "abort", "unknown"


@dataclass(slots=True)
class TxnFigures:
    committed: int = 0
    aborted: int = 0
    unknown: int = 0
    unknown_visible: int = 0  # unknown outcomes that turned out committed
    reads: int = 0
    aborted_reads: int = 0
    partly_visible: int = 0
    commits_lost: int = 0
    duplicated: int = 0
    phantom: int = 0
    copied: int = 0  # consume-transform-produce: output values
    copy_generations: int = 0
    copier_hangs: int = 0  # client calls hung past their timeout (librdkafka's, not ours)
    copies_missing: int = 0
    copies_duplicated: int = 0
    copies_extra: int = 0
    copies_reordered: int = 0

    @property
    def anomalies(self) -> int:
        return (self.aborted_reads + self.partly_visible + self.commits_lost + self.duplicated
                + self.phantom + self.copies_missing + self.copies_duplicated
                + self.copies_extra + self.copies_reordered)

    def as_dict(self) -> dict[str, object]:
        return {"committed": self.committed, "aborted": self.aborted, "unknown": self.unknown,
                "unknown_visible": self.unknown_visible, "reads": self.reads,
                "aborted_reads": self.aborted_reads, "partly_visible": self.partly_visible,
                "commits_lost": self.commits_lost, "duplicated": self.duplicated,
                "phantom": self.phantom, "copied": self.copied,
                "copy_generations": self.copy_generations,
                "copier_hangs": self.copier_hangs,
                "copies_missing": self.copies_missing,
                "copies_duplicated": self.copies_duplicated, "copies_extra": self.copies_extra,
                "copies_reordered": self.copies_reordered}


def check_transactions(history: Sequence[Event], note: Callable[[str], None]) -> TxnFigures:
    figures = TxnFigures()
    ends = [e for e in history if isinstance(e, TxnEnd)]
    logs = [e for e in history if isinstance(e, TxnLog)]
    reads = [e for e in history if isinstance(e, TxnRead)]
    figures.reads = len(reads)
    outcome = Counter(e.outcome for e in ends)
    figures.committed, figures.aborted = outcome[COMMIT], outcome[ABORT]
    figures.unknown = outcome[UNKNOWN]
    written = {str(value): (e, int(partition)) for e in ends for partition, value in e.values}
    for read in reads:
        found = written.get(read.value or "")
        if found is not None and found[0].outcome == ABORT:
            figures.aborted_reads += 1
            note(f"read_committed consumer {read.consumer} read {read.value} of aborted "
                 f"transaction {found[0].transaction} at {read.partition}:{read.offset}")
    if not logs:  # the run ended before its last read: nothing more to judge
        return figures
    held = Counter((log.partition, value) for log in logs for value in log.values)
    visible: Counter[str] = Counter()
    for (partition, value), count in held.items():
        found = written.get(value or "")
        if found is None:
            figures.phantom += count
            note(f"the last read holds {value} at partition {partition}, which no "
                 "transaction wrote")
            continue
        end, written_to = found
        if count > 1 or partition != written_to:
            figures.duplicated += count if partition != written_to else count - 1
            note(f"{value} of {end.transaction} held {count} times in partition {partition} "
                 f"(written to {written_to})")
        visible[end.transaction] += 1
        if end.outcome == ABORT:
            figures.aborted_reads += 1
            note(f"the last read holds {value} of aborted transaction {end.transaction}")
    for end in ends:
        seen = visible[end.transaction]
        if 0 < seen < len(end.values):
            figures.partly_visible += 1
            note(f"transaction {end.transaction} ({end.outcome}): {seen} of {len(end.values)} "
                 "values visible")
        elif seen == 0 and end.outcome == COMMIT:
            figures.commits_lost += 1
            note(f"committed transaction {end.transaction}: none of its values visible")
        elif seen and end.outcome == UNKNOWN:
            figures.unknown_visible += 1
    return figures


def check_copies(history: Sequence[Event], committed: dict[int, Committed],
                 figures: TxnFigures, note: Callable[[str], None]) -> None:
    """The consume-transform-produce output against the input below its committed offsets."""
    result = next((e for e in history if isinstance(e, CtpResult)), None)
    if result is None:
        return
    figures.copy_generations = result.generations
    figures.copier_hangs = result.hung
    for partition, output in enumerate(result.output):
        figures.copied += len(output)
        source = committed.get(partition)
        offset = result.offsets[partition] if partition < len(result.offsets) else -1
        expected: list[str | None] = []
        if source is not None and offset >= source.start:
            expected = [v for v in source.values[:offset - source.start] if v is not None]
        if output == expected:
            continue
        counts, wanted = Counter(output), Counter(expected)
        missing = sum((wanted - counts).values())
        extra = sum((Counter(dict.fromkeys(counts, 1)) - wanted).values())
        duplicated = sum(n - 1 for value, n in counts.items() if n > 1 and value in wanted)
        figures.copies_missing += missing
        figures.copies_extra += extra
        figures.copies_duplicated += duplicated
        if not (missing or extra or duplicated):
            figures.copies_reordered += 1
        note(f"consume-transform-produce partition {partition}: {len(output)} copied, "
             f"{len(expected)} below committed offset {offset} ({missing} missing, "
             f"{duplicated} duplicated, {extra} extra)")
