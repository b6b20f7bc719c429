"""The one line a node prints when a storage file stops it from starting.

An operator facing a refusal needs three things: which file, where in it (when there is a
byte position), and what to do about it. The advice depends only on the kind of file, so
it is chosen here from the file name, never from the wording of the error.
"""

from __future__ import annotations

from pathlib import Path

from pykraft.errors import CorruptLogError, StorageError
from pykraft.storage.file_error import StateFileError
from pykraft.storage.meta_properties import META_PROPERTIES
from pykraft.storage.partition_metadata import PARTITION_METADATA
from pykraft.storage.quorum_state_file import QUORUM_STATE
from pykraft.storage.segment import LOG_SUFFIX
from pykraft.storage.snapshot_files import parse_snapshot_name

_REMEDIES = {
    META_PROPERTIES: "restore it, or rewrite it with the version, node.id, cluster.id and "
                     "directory.id this node had, then restart",
    QUORUM_STATE: "restore it, or move it away (the node then forgets the vote it cast in "
                  "the current epoch), then restart",
    PARTITION_METADATA: "move it away (it is written again with the metadata topic id), "
                        "then restart",
}
_SEGMENT_REMEDY = ("move the file and the segments after it away, or restore them from a "
                   "replica, then restart")
_SNAPSHOT_REMEDY = ("restore it from a replica, or move the partition directory away so "
                    "that the node fetches the log again from the leader, then restart")
_DEFAULT_REMEDY = "restore the file from a replica or a backup, then restart"


def remedy_for(path: Path) -> str:
    """What an operator can do about a damaged ``path``."""
    if path.name in _REMEDIES:
        return _REMEDIES[path.name]
    if path.suffix == LOG_SUFFIX:
        return _SEGMENT_REMEDY
    if parse_snapshot_name(path.name) is not None:
        return _SNAPSHOT_REMEDY
    return _DEFAULT_REMEDY


def refusal_line(exc: StorageError) -> str:
    """``<file>: <problem> [at byte N]; <what to do>`` (just the message if no file is
    known, e.g. a directory that is not formatted, whose message already says what to do)."""
    if isinstance(exc, CorruptLogError):
        return (f"{exc.path}: corrupt record batch at byte {exc.position} ({exc.reason}); "
                f"{remedy_for(Path(exc.path))}")
    if isinstance(exc, StateFileError):
        return f"{exc}; {remedy_for(Path(exc.path))}"
    return str(exc)
