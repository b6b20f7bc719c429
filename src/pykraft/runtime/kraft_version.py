"""UpdateFeatures for ``kraft.version``: turning a static quorum into a dynamic one.

kraft.version is not a metadata record but a control record of the raft log: the raft core
writes it (KRaftVersion and the first VotersRecord, once every static voter told the leader
its directory id), not the QuorumController. The answer waits until those records commit,
so a tool that sees success can go on and add or remove controllers.
"""

from __future__ import annotations

from pykraft.controller.features_control import UPGRADE
from pykraft.features import KRAFT_VERSION_FEATURE
from pykraft.messages.kafka.update_features_request import UpdateFeaturesRequest
from pykraft.messages.kafka.update_features_response import (
    UpdatableFeatureResult,
    UpdateFeaturesResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.reconfig import Refusal
from pykraft.runtime.node import RaftNode


def names_kraft_version(request: UpdateFeaturesRequest) -> bool:
    return any(update.feature == KRAFT_VERSION_FEATURE for update in request.feature_updates)


def _answer(error: ErrorCode, message: str | None) -> UpdateFeaturesResponse:
    """The error is top-level too: UpdateFeatures v2 has no per-feature results."""
    return UpdateFeaturesResponse(
        error_code=error, error_message=message,
        results=(UpdatableFeatureResult(KRAFT_VERSION_FEATURE, error, message),))


async def update_kraft_version(node: RaftNode,
                               request: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    """Finalize the requested kraft.version on the leader; answered once committed."""
    if len(request.feature_updates) != 1:
        return UpdateFeaturesResponse(error_code=ErrorCode.INVALID_REQUEST,
                                      error_message="kraft.version must be updated on its own")
    update = request.feature_updates[0]
    level, core = update.max_version_level, node.core
    if level < core.kraft_version or update.upgrade_type != UPGRADE:
        return _answer(ErrorCode.INVALID_UPDATE_VERSION,
                       f"kraft.version cannot go from {core.kraft_version} to {level}")
    outcome: list[int | Refusal | None] = []

    def upgrade(now_ms: int) -> None:
        if core.leader_and_epoch.leader_id == core.node_id and core.state.name == "Leader":
            outcome.append(core.upgrade_kraft_version(
                now_ms, level, validate_only=request.validate_only))

    node.step(upgrade)
    if not outcome:
        return _answer(ErrorCode.NOT_CONTROLLER, f"node {core.node_id} is not the leader")
    result = outcome[0]
    if isinstance(result, Refusal):
        return _answer(result.error, result.message)
    if result is not None and not await node.machine.wait_committed(result):
        return _answer(ErrorCode.NOT_CONTROLLER, "leadership moved before the upgrade committed")
    return _answer(ErrorCode.NONE, None)
