"""``quorum-state``: the raft election state that must survive a restart.

Kafka's ``FileBasedStateStore`` writes ``QuorumStateData`` as one compact JSON line with
``data_version`` appended last and no trailing newline. The data version follows
kraft.version: v0 carries ``clusterId`` (always ""), ``appliedOffset`` (0) and
``currentVoters``; v1 drops those and adds ``votedDirectoryId``. A missing file means a fresh
node: epoch 0 and no leader. Replacement is atomic (``.tmp``, fsync, rename, fsync dir).
A file that cannot be read is a :class:`StateFileError` naming it, as every state file's.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykraft.errors import StorageError
from pykraft.ids import ZERO_UUID, InvalidUuidError, uuid_from_str, uuid_to_str
from pykraft.storage.file_error import StateFileError
from pykraft.storage.fsutil import atomic_write

QUORUM_STATE = "quorum-state"
DATA_VERSION_KEY = "data_version"
NO_ID = -1
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True)
class QuorumStateData:
    """One persisted election state; fields a data version lacks keep their defaults."""

    leader_id: int = NO_ID
    leader_epoch: int = NO_ID
    voted_id: int = NO_ID
    voted_directory_id: uuid.UUID = ZERO_UUID
    cluster_id: str = ""
    applied_offset: int = 0
    current_voters: tuple[int, ...] | None = ()
    data_version: int = 0

    def __post_init__(self) -> None:
        if self.data_version not in (0, 1):
            raise ValueError(f"quorum-state data_version must be 0 or 1, not {self.data_version}")


FRESH_STATE = QuorumStateData(leader_epoch=0)


def encode_quorum_state(state: QuorumStateData) -> bytes:
    """The exact bytes Kafka writes for ``state`` (field order as in ``QuorumStateData``);
    a :class:`StorageError` for a state :func:`decode_quorum_state` would refuse to read."""
    ints = {"leaderId": state.leader_id, "leaderEpoch": state.leader_epoch,
            "votedId": state.voted_id, "appliedOffset": state.applied_offset}
    for key, value in ints.items():
        bounds = _INT64 if key == "appliedOffset" else _INT32
        if not bounds[0] <= value <= bounds[1]:
            raise StorageError(f"refusing to write quorum state field {key!r} = {value}: "
                               f"expected an integer in {bounds[0]}..{bounds[1]}")
    fields: dict[str, Any]
    if state.data_version == 0:
        voters = (
            None if state.current_voters is None
            else [{"voterId": voter} for voter in state.current_voters]
        )
        fields = {
            "clusterId": state.cluster_id,
            "leaderId": state.leader_id,
            "leaderEpoch": state.leader_epoch,
            "votedId": state.voted_id,
            "appliedOffset": state.applied_offset,
            "currentVoters": voters,
        }
    else:
        fields = {
            "leaderId": state.leader_id,
            "leaderEpoch": state.leader_epoch,
            "votedId": state.voted_id,
            "votedDirectoryId": uuid_to_str(state.voted_directory_id),
        }
    fields[DATA_VERSION_KEY] = state.data_version
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_quorum_state(data: bytes, source: str) -> QuorumStateData:
    """Parse the file's bytes; any malformation is a :class:`StateFileError` naming
    ``source``."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise StateFileError(source, f"corrupt quorum state, not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise StateFileError(source, "corrupt quorum state, expected a JSON object")
    fields = _Fields(document, source)
    version = fields.integer(DATA_VERSION_KEY, _INT32)
    if version not in (0, 1):
        raise StateFileError(source, f"unknown quorum state data_version {version}")
    leader_id = fields.integer("leaderId", _INT32)
    leader_epoch = fields.integer("leaderEpoch", _INT32)
    voted_id = fields.integer("votedId", _INT32)
    if version == 1:
        return QuorumStateData(
            leader_id, leader_epoch, voted_id, fields.uuid("votedDirectoryId"), data_version=1
        )
    return QuorumStateData(
        leader_id,
        leader_epoch,
        voted_id,
        cluster_id=fields.string("clusterId"),
        applied_offset=fields.integer("appliedOffset", _INT64),
        current_voters=fields.voters("currentVoters"),
        data_version=0,
    )


def read_quorum_state(path: Path) -> QuorumStateData:
    """The stored state, or :data:`FRESH_STATE` when the file does not exist yet."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return FRESH_STATE
    except OSError as exc:
        raise StateFileError(path, f"cannot read: {exc.strerror or exc}") from None
    return decode_quorum_state(data, str(path))


def write_quorum_state(path: Path, state: QuorumStateData) -> None:
    """Durably replace the file; a crash leaves either the old or the new state."""
    atomic_write(path, encode_quorum_state(state))


class _Fields:
    """Typed access to the JSON object's mandatory fields with precise error messages."""

    def __init__(self, document: dict[str, Any], source: str) -> None:
        self._document = document
        self._source = source

    def _get(self, key: str) -> Any:
        if key not in self._document:
            raise StateFileError(self._source, f"quorum state field {key!r} is missing")
        return self._document[key]

    def _invalid(self, key: str, value: Any, expected: str) -> StateFileError:
        return StateFileError(self._source,
                              f"quorum state field {key!r} is {value!r}, expected {expected}")

    def integer(self, key: str, bounds: tuple[int, int]) -> int:
        value = self._get(key)
        if type(value) is not int or not bounds[0] <= value <= bounds[1]:
            raise self._invalid(key, value, f"an integer in {bounds[0]}..{bounds[1]}")
        return value

    def string(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str):
            raise self._invalid(key, value, "a string")
        return value

    def uuid(self, key: str) -> uuid.UUID:
        try:
            return uuid_from_str(self.string(key))
        except InvalidUuidError as exc:
            raise StateFileError(self._source, f"quorum state field {key!r}: {exc}") from None

    def voters(self, key: str) -> tuple[int, ...] | None:
        value = self._get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self._invalid(key, value, "a list of {\"voterId\": n} objects")
        voters: list[int] = []
        for entry in value:
            voter = entry.get("voterId") if isinstance(entry, dict) else None
            if type(voter) is not int or not _INT32[0] <= voter <= _INT32[1]:
                raise self._invalid(key, value, "a list of {\"voterId\": n} objects")
            voters.append(voter)
        return tuple(voters)
