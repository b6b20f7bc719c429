"""The KRaft controller state machine (Kafka's QuorumController and its managers)."""

from pykraft.controller.context import ControllerConfig, ControllerContext, ControllerResult
from pykraft.controller.quorum_controller import QuorumController, RecordWriter

__all__ = [
    "ControllerConfig",
    "ControllerContext",
    "ControllerResult",
    "QuorumController",
    "RecordWriter",
]
