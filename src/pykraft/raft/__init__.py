"""The KRaft consensus core: pure protocol logic, driven by a runtime or the simulator.

Public surface: :class:`RaftClient` (inputs and ``ready()``), its output and listener types
(:mod:`pykraft.raft.api`), :class:`QuorumConfig`, and the two storage interfaces with their
in-memory implementations.
"""

from pykraft.raft.api import (
    FlushRequest,
    LeaderAndEpoch,
    OutboundRequest,
    OutboundResponse,
    RaftListener,
    Ready,
)
from pykraft.raft.client import RaftClient
from pykraft.raft.config import QuorumConfig
from pykraft.raft.log import OffsetAndEpoch, RaftLog
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.quorum_store import ElectionState, MemoryQuorumStateStore, QuorumStateStore

__all__ = [
    "ElectionState",
    "FlushRequest",
    "LeaderAndEpoch",
    "MemoryLog",
    "MemoryQuorumStateStore",
    "OffsetAndEpoch",
    "OutboundRequest",
    "OutboundResponse",
    "QuorumConfig",
    "QuorumStateStore",
    "RaftClient",
    "RaftListener",
    "RaftLog",
    "Ready",
]
