"""``pykraft features``: Kafka's ``kafka-features.sh`` against the controllers or a broker.

``describe`` reads the supported and finalized feature levels from the ApiVersions answer of
the active controller (``--bootstrap-controller``) or of the broker (``--bootstrap-server``);
``upgrade`` sends UpdateFeatures there (a broker forwards it to the active controller). The
connections are secured as ``--command-config`` says (``security=``, see
:func:`pykraft.tools.admin_client.client_security`). ``kraft.version=1`` is the step
that turns a static quorum (``controller.quorum.voters``) into a dynamic one: the raft leader
writes the first VotersRecord, and the command returns once it is committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pykraft.controller.features_control import UPGRADE
from pykraft.features import METADATA_VERSION_FEATURE, kafka_metadata_version_name
from pykraft.messages.kafka.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest
from pykraft.messages.kafka.update_features_response import UpdateFeaturesResponse
from pykraft.protocol.errors import ErrorCode, error_name
from pykraft.raft import rpc
from pykraft.tools.admin_client import Address, ClientSecurity
from pykraft.tools.quorum_tool import (
    DEFAULT_API_TIMEOUT_S,
    PLAINTEXT,
    QuorumToolError,
    RefusedError,
    active_controller,
    migration_state,
    request_once,
    retrying,
)


class FeatureUpdateError(RefusedError):
    """The controller refused the update; the message names the error and the reason."""


@dataclass(frozen=True, slots=True)
class FeatureLevels:
    """One supported feature as ApiVersions names it; a feature not finalized is level 0,
    and an epoch below 0 means the node gave none (Kafka prints ``-``)."""

    name: str
    supported_min: int
    supported_max: int
    finalized: int
    epoch: int = -1


def parse_feature(text: str) -> tuple[str, int]:
    """``name=level`` as given to ``--feature``."""
    name, sep, level = text.partition("=")
    if not sep or not name.strip() or not level.strip().lstrip("-").isdigit():
        raise QuorumToolError(f"--feature {text!r}: expected name=level, e.g. kraft.version=1")
    return name.strip(), int(level)


def _level_text(name: str, level: int) -> str:
    """metadata.version levels print as Kafka's release names (3.9-IV0), the levels of Kafka
    4.4 that pykraft does not support too (a Kafka node finalizes 4.4-IV2); one Kafka does
    not know either prints as Kafka's FeatureCommand does (``UNKNOWN <level>``)."""
    if name == METADATA_VERSION_FEATURE:
        known = kafka_metadata_version_name(level)
        return f"UNKNOWN {level}" if known is None else known
    return str(level)


def describe_line(feature: FeatureLevels) -> str:
    """Kafka's FeatureCommand ``describe`` line (tab-separated fields)."""
    epoch = str(feature.epoch) if feature.epoch >= 0 else "-"
    return (f"Feature: {feature.name}\tSupportedMinVersion: "
            f"{_level_text(feature.name, feature.supported_min)}\tSupportedMaxVersion: "
            f"{_level_text(feature.name, feature.supported_max)}\tFinalizedVersionLevel: "
            f"{_level_text(feature.name, feature.finalized)}\tEpoch: {epoch}")


def upgraded_line(name: str, level: int, *, dry_run: bool) -> str:
    verb = "can be upgraded" if dry_run else "was upgraded"
    return f"{name} {verb} to {_level_text(name, level)}."


@dataclass(frozen=True, slots=True)
class FeaturesDescription:
    """``describe``'s answer: the features, and the ZooKeeper migration state while the
    controllers migrate (:func:`pykraft.tools.quorum_tool.migration_state`)."""

    features: list[FeatureLevels]
    zk_migration_state: str | None = None

    def lines(self) -> list[str]:
        """Kafka's lines, then pykraft's migration line when there is one."""
        return [*(describe_line(f) for f in self.features),
                *([] if self.zk_migration_state is None
                  else [f"ZkMigrationState: {self.zk_migration_state}"])]


async def describe_features(bootstrap: Sequence[Address], *,
                            timeout_s: float = DEFAULT_API_TIMEOUT_S,
                            security: ClientSecurity = PLAINTEXT) -> FeaturesDescription:
    async def attempt(deadline: float) -> FeaturesDescription:
        active = await active_controller(bootstrap, deadline, security)
        answer = await request_once(active.address, rpc.api_versions_request("pykraft"),
                                    deadline, security)
        if answer.error_code != ErrorCode.NONE:
            raise QuorumToolError(f"ApiVersions failed: {error_name(answer.error_code)}")
        finalized = {f.name: int(f.max_version_level) for f in answer.finalized_features}
        epoch = int(answer.finalized_features_epoch)
        features = sorted((FeatureLevels(f.name, int(f.min_version), int(f.max_version),
                                         finalized.get(f.name, 0), epoch)
                           for f in answer.supported_features), key=lambda f: f.name)
        state = (await migration_state(active, deadline, security)
                 if answer.zk_migration_ready else None)
        return FeaturesDescription(features, state)
    described: FeaturesDescription = await retrying("describe the features", attempt,
                                                    timeout_s)
    return described


async def upgrade_feature(bootstrap: Sequence[Address], name: str, level: int, *,
                          dry_run: bool = False, timeout_s: float = DEFAULT_API_TIMEOUT_S,
                          security: ClientSecurity = PLAINTEXT) -> None:
    """Finalize ``name`` at ``level`` on the active controller (validate only on a dry run)."""
    request = UpdateFeaturesRequest(
        timeout_ms=int(timeout_s * 1000),
        feature_updates=(FeatureUpdateKey(feature=name, max_version_level=level,
                                          upgrade_type=UPGRADE),),
        validate_only=dry_run)

    async def attempt(deadline: float) -> None:
        active = await active_controller(bootstrap, deadline, security)
        answer = await request_once(active.address, request, deadline, security)
        assert isinstance(answer, UpdateFeaturesResponse)
        errors = [(r.error_code, r.error_message) for r in answer.results
                  if r.error_code != ErrorCode.NONE]  # v2 answers have no per-feature list
        if answer.error_code != ErrorCode.NONE:
            errors.insert(0, (answer.error_code, answer.error_message))
        if not errors:
            return
        error, message = ErrorCode(errors[0][0]), errors[0][1]
        text = f"{error_name(error)}: {message}" if message else error_name(error)
        if error.retriable or error == ErrorCode.NOT_CONTROLLER:
            raise QuorumToolError(text)  # an election or a voter change in progress
        raise FeatureUpdateError(f"could not upgrade {name} to {level}: {text}")
    await retrying(f"upgrade {name}", attempt, timeout_s)
