"""The KRaft consensus core: pure protocol logic, driven by a runtime or the simulator.

Public surface: :class:`RaftClient` (inputs and ``ready()``), its outputs (messages and
application events) and the listener drivers hand the events to (:mod:`pykraft.raft.api`),
:class:`QuorumConfig`, and the two storage interfaces with their in-memory implementations.
"""

from pykraft.raft.api import (
    Committed,
    FlushRequest,
    LeaderAndEpoch,
    LeaderChange,
    LoadSnapshot,
    OutboundRequest,
    OutboundResponse,
    RaftEvent,
    RaftListener,
    Ready,
    deliver,
)
from pykraft.raft.config import QuorumConfig
from pykraft.raft.core import RaftClient
from pykraft.raft.log import OffsetAndEpoch, RaftLog
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.quorum_state import ElectionState, MemoryQuorumStateStore, QuorumStateStore

__all__ = [
    "Committed",
    "ElectionState",
    "FlushRequest",
    "LeaderAndEpoch",
    "LeaderChange",
    "LoadSnapshot",
    "MemoryLog",
    "MemoryQuorumStateStore",
    "OffsetAndEpoch",
    "OutboundRequest",
    "OutboundResponse",
    "QuorumConfig",
    "QuorumStateStore",
    "RaftClient",
    "RaftEvent",
    "RaftListener",
    "RaftLog",
    "Ready",
    "deliver",
]
