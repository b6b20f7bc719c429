"""The KRaft control records of a metadata log, for the shell's ``/raft`` directory.

Kafka's ``MetadataImage`` (and so its shell's ``/image``) holds only metadata records; the
voter set and kraft.version (KIP-853) live in control records. The shell shows the latest of
each, committed or not, as the raft layer applies them: ``/raft/kraftVersion`` and
``/raft/voters/<id>`` (empty for a static quorum, whose voters are configured).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pykraft.ids import uuid_to_str
from pykraft.records.batch import iter_batches
from pykraft.records.control import KRaftVersionRecord, Voter, VotersRecord, decode_control
from pykraft.shell.tree import DirNode, FileNode, Node
from pykraft.storage.log_verify import TornTail


@dataclass(frozen=True, slots=True)
class KRaftRecords:
    """The latest KRaftVersion and Voters records seen (defaults: kraft.version 0, none)."""

    kraft_version: int = 0
    voters: VotersRecord | None = None


def read_kraft_records(snapshot: Path | None, segments: Sequence[Path] = (), *,
                       from_offset: int = 0, tail: TornTail | None = None) -> KRaftRecords:
    """Scan ``snapshot`` whole, then the batches of ``segments`` from ``from_offset`` on
    (the snapshot's end offset: the segments' earlier batches are already in it), up to
    ``tail``."""
    kraft_version, voters = 0, None
    files = [(snapshot, -1)] if snapshot is not None else []
    for path, first in [*files, *((segment, from_offset) for segment in segments)]:
        data = path.read_bytes()
        for batch in iter_batches(data if tail is None else tail.cut(path, data)):
            if not batch.is_control or batch.last_offset < first:
                continue
            for record in batch.records():
                message = decode_control(record.key, record.value).message
                if isinstance(message, KRaftVersionRecord):
                    kraft_version = message.kraft_version
                elif isinstance(message, VotersRecord):
                    voters = message
    return KRaftRecords(kraft_version, voters)


def _voter_text(voter: Voter) -> str:
    listeners = ", ".join(f"{e.name}://{e.host}:{e.port}" for e in voter.endpoints)
    feature = voter.kraft_version_feature
    return (f"VoterNode(voterKey=ReplicaKey(id={voter.voter_id}, "
            f"directoryId={uuid_to_str(voter.voter_directory_id)}), "
            f"listeners=[{listeners}], supportedKRaftVersion="
            f"{feature.min_supported_version}-{feature.max_supported_version})")


def kraft_dir(records: KRaftRecords) -> DirNode:
    """``/raft``: ``kraftVersion`` and one ``voters/<id>`` file per voter."""
    voters: dict[str, Node] = {} if records.voters is None else {
        str(v.voter_id): FileNode(_voter_text(v)) for v in records.voters.voters}
    return DirNode({"kraftVersion": FileNode(str(records.kraft_version)),
                    "voters": DirNode(voters)})
