"""kraft.version and the voter set as the log says (Kafka's KRaftControlRecordStateMachine).

Both are read from control records up to the log end, committed or not: a voter-set change
takes effect when it is appended and is reverted if the log is truncated before it. A
snapshot's KRaftVersion and Voters records count at ``snapshot end offset - 1`` (so the
bootstrap 0-0 checkpoint's count at -1). A static quorum (``controller.quorum.voters``) is
kraft.version 0 with its voters at -1, until the log says otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable

from pykraft.raft.voter_set import OffsetHistory, VoterSet, VoterSetHistory
from pykraft.records.batch import RecordBatch
from pykraft.records.control import KRaftVersionRecord, VotersRecord, decode_control

_BEFORE_LOG = -1


class ControlRecordState:
    """Voter-set and kraft.version histories of one replica."""

    def __init__(self, static_voters: VoterSet) -> None:
        self._static = static_voters
        self.voters = VoterSetHistory()
        self.kraft_versions: OffsetHistory[int] = OffsetHistory()

    @property
    def is_static(self) -> bool:
        """No KRaftVersion record seen: the configured static voters are in force."""
        return self.kraft_versions.last_entry() is None and len(self._static) > 0

    @property
    def kraft_version(self) -> int:
        last = self.kraft_versions.last_entry()
        return 0 if last is None else last[1]

    @property
    def last_voter_set(self) -> VoterSet:
        last = self.voters.last_entry()
        return self._static if last is None else last[1]

    @property
    def last_voter_set_offset(self) -> int | None:
        """Offset of the latest VotersRecord in the log, None if it came from elsewhere."""
        last = self.voters.last_entry()
        return None if last is None or last[0] < 0 else last[0]

    def voter_sets_newest_first(self) -> list[VoterSet]:
        """Every voter set still known (the static one last): where to find a replica."""
        history = [voters for _offset, voters in self.voters.entries_after(_BEFORE_LOG - 1)]
        return [*reversed(history), self._static]

    def voter_set_at(self, offset: int) -> VoterSet:
        found = self.voters.value_at_or_before(offset)
        return self._static if found is None else found

    def kraft_version_at(self, offset: int) -> int:
        found = self.kraft_versions.value_at_or_before(offset)
        return 0 if found is None else found

    def load_snapshot(self, end_offset: int, batches: Iterable[RecordBatch]) -> None:
        """Start over from a snapshot: its header records hold the state at ``end - 1``."""
        self.voters.clear()
        self.kraft_versions.clear()
        at = end_offset - 1 if end_offset > 0 else _BEFORE_LOG
        for batch in batches:
            if batch.is_control:
                self._apply(batch, at)

    def observe(self, batches: Iterable[RecordBatch]) -> None:
        """Batches just appended to the log (control ones are read, data ones skipped)."""
        for batch in batches:
            if batch.is_control:
                self._apply(batch, None)

    def _apply(self, batch: RecordBatch, at: int | None) -> None:
        for record in batch.records():
            message = decode_control(record.key, record.value).message
            offset = record.offset if at is None else at
            if isinstance(message, KRaftVersionRecord):
                self.kraft_versions.add_at(offset, message.kraft_version)
            elif isinstance(message, VotersRecord):
                self.voters.add_at(offset, VoterSet.from_record(message))

    def truncate_new_entries(self, end_offset: int) -> None:
        self.voters.truncate_new_entries(end_offset)
        self.kraft_versions.truncate_new_entries(end_offset)

    def truncate_old_entries(self, start_offset: int) -> None:
        self.voters.truncate_old_entries(start_offset)
        self.kraft_versions.truncate_old_entries(start_offset)
