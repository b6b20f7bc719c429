"""The raft core's election state on real disk: a ``QuorumStateStore`` over Kafka's
``quorum-state`` file (as :mod:`pykraft.runtime.disk_log` is its log over the segment files).

The store lives here, not beside the file format in :mod:`pykraft.storage.quorum_state_file`,
because it translates between the core's ``ElectionState`` and the file's
``QuorumStateData``: raft and storage are one layer and know nothing of each other, so the
translation belongs to the runtime above both.

As Kafka's ``FileQuorumStateStore``, the data version follows the kraft.version given with
each write: version 0 (static quorums; it also records the voter ids, the same bytes Kafka
3.x writes) below kraft.version 1, version 1 (with ``votedDirectoryId``, without voters)
from it on. Writes go through :func:`write_quorum_state` (tmp file, fsync, rename, fsync
dir) and are synchronous by the store's contract: a vote must be durable before the
response that grants it leaves. They happen only on election events, so blocking the loop
for them is cheap.
"""

from __future__ import annotations

from pathlib import Path

from pykraft.ids import ZERO_UUID
from pykraft.raft.quorum_state import ElectionState, check_storable
from pykraft.storage.quorum_state_file import (
    NO_ID,
    QUORUM_STATE,
    QuorumStateData,
    read_quorum_state,
    write_quorum_state,
)


class FileQuorumStateStore:
    """:class:`~pykraft.raft.quorum_state.QuorumStateStore` over ``<log dir>/quorum-state``."""

    def __init__(self, partition_dir: Path, voters: frozenset[int]) -> None:
        self.path = partition_dir / QUORUM_STATE
        self._voters = tuple(sorted(voters))

    def read(self) -> ElectionState | None:
        if not self.path.exists():
            return None
        data = read_quorum_state(self.path)
        return ElectionState(
            epoch=data.leader_epoch,
            leader_id=None if data.leader_id == NO_ID else data.leader_id,
            voted_id=None if data.voted_id == NO_ID else data.voted_id,
            voted_directory_id=(
                None if data.voted_directory_id == ZERO_UUID else data.voted_directory_id
            ),
        )

    def write(self, state: ElectionState, kraft_version: int = 0) -> None:
        check_storable(state)
        v1 = kraft_version >= 1
        write_quorum_state(self.path, QuorumStateData(
            leader_id=NO_ID if state.leader_id is None else state.leader_id,
            leader_epoch=state.epoch,
            voted_id=NO_ID if state.voted_id is None else state.voted_id,
            voted_directory_id=(state.voted_directory_id or ZERO_UUID) if v1 else ZERO_UUID,
            current_voters=self._voters,
            data_version=1 if v1 else 0,
        ))
