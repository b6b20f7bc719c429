"""Finalized features (UpdateFeatures) and producer id blocks (AllocateProducerIds).

UpdateFeatures follows Kafka's FeatureControlManager, in its order and words:

* a known upgrade type (v0 has none but ``AllowDowngrade``, which Kafka's QuorumController
  does not read: a v0 update is an upgrade), a level not below 0;
* a level this controller supports (:data:`SUPPORTED_FEATURES`; level 0, the removal, is in
  every range), and every registered broker and other controller declared it;
* ``UPGRADE`` does not lower a level, the downgrade types do not raise it; metadata.version
  never goes down (its records could become unreadable) nor below the minimum;
* a level's dependencies hold once the whole request applies (eligible leader replicas
  need metadata.version 4.0-IV1: :data:`~pykraft.features.METADATA_VERSION_NEEDED`);
* turning eligible leader replicas on also writes Kafka's safety records: a cluster-level
  ``min.insync.replicas`` if none exists and the removal of every broker's own;
* all-or-nothing: the updates are checked in order, the first that fails ends the request
  (its reason, at the top level, with no per-feature results: Kafka's answer) and nothing is
  written; so a request naming 200,000 unknown features is refused after its first.

``kraft.version`` is a control record of the raft log: such updates go to
``runtime/kraft_version.py`` and never reach this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pykraft.controller.activation import static_min_insync_replicas
from pykraft.controller.config_control import MIN_INSYNC_REPLICAS
from pykraft.controller.context import PRODUCER_ID_BLOCK_SIZE, ControllerContext, ControllerResult
from pykraft.controller.responses import error_response
from pykraft.features import (
    ELIGIBLE_LEADER_REPLICAS_FEATURE,
    METADATA_VERSION_FEATURE,
    SUPPORTED_FEATURES,
    dependency_problem,
)
from pykraft.image.configs import ConfigResourceType
from pykraft.messages.kafka.allocate_producer_ids_request import AllocateProducerIdsRequest
from pykraft.messages.kafka.allocate_producer_ids_response import AllocateProducerIdsResponse
from pykraft.messages.kafka.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest
from pykraft.messages.kafka.update_features_response import (
    UpdatableFeatureResult,
    UpdateFeaturesResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    BrokerFeature,
    ConfigRecord,
    ControllerFeature,
    FeatureLevelRecord,
    ProducerIdsRecord,
)

UPGRADE = 1
SAFE_DOWNGRADE = 2
UNSAFE_DOWNGRADE = 3

#: Kafka's QuorumController: a failed UpdateFeatures answers at the top level only.
_FAILED = "The update failed for all features since the following feature had an error: "
_LONG_MAX = 2**63 - 1
_DISABLED = (0, 0)  # Kafka's QuorumFeatures.DISABLED: what a node that names nothing supports


def _not_supported(level: int, who: str, supported: tuple[int, int]) -> str | None:
    """Kafka's QuorumFeatures.reasonNotSupported."""
    low, high = supported
    if low <= level <= high:
        return None
    if high == 0:
        return f"{who} does not support this feature."
    return f"{who} only supports versions {low if low == high else f'{low}-{high}'}"


def _declared(features: Iterable[BrokerFeature | ControllerFeature],
              name: str) -> tuple[int, int]:
    """The range a broker's or controller's registration declared for ``name``."""
    return next(((f.min_supported_version, f.max_supported_version)
                 for f in features if f.name == name), _DISABLED)


def _reason_not_supported(ctx: ControllerContext, name: str, level: int) -> str | None:
    """This controller first, then every registered broker and other controller."""
    me, cluster = ctx.config.node_id, ctx.image.cluster
    nodes = [(f"Local controller {me}", SUPPORTED_FEATURES.get(name, _DISABLED))]
    nodes += [(f"Broker {b}", _declared(cluster.brokers[b].features, name))
              for b in sorted(cluster.brokers)]
    nodes += [(f"Controller {c}", _declared(cluster.controllers[c].features, name))
              for c in sorted(cluster.controllers) if c != me]
    reasons = (_not_supported(level, who, supported) for who, supported in nodes)
    return next((r for r in reasons if r is not None), None)


def _reason(ctx: ControllerContext, update: FeatureUpdateKey, current: int) -> str | None:
    level, kind = update.max_version_level, update.upgrade_type
    if kind not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return "The controller does not support the given upgrade type."
    if level < 0:
        return "A feature version cannot be less than 0."
    reason = _reason_not_supported(ctx, update.feature, level)
    if reason is not None:
        return reason
    if level < current and kind == UPGRADE:
        return ("Can't downgrade the version of this feature without setting the upgrade "
                "type to either safe or unsafe downgrade.")
    if level > current and kind != UPGRADE:
        return "Can't downgrade to a newer version."
    return None


def _problem(ctx: ControllerContext, update: FeatureUpdateKey,
             proposed: Mapping[str, int]) -> str | None:
    """Kafka's error message for ``update``, or None if it may be applied; ``proposed``:
    every level once the whole request applies, which its dependencies are checked
    against."""
    name, level = update.feature, update.max_version_level
    current = ctx.image.features.finalized.get(name, 0)
    reason = _reason(ctx, update, current)
    if reason is None and name != METADATA_VERSION_FEATURE:
        reason = dependency_problem(name, level, proposed.get(METADATA_VERSION_FEATURE, 0))
    if reason is not None:
        return f"Invalid update version {level} for feature {name}. {reason}"
    if name == METADATA_VERSION_FEATURE and ctx.image.features.zk_migration_state.in_progress:
        return (f"Invalid metadata.version {level}. Unable to modify metadata.version while a "
                "ZK migration is in progress.")
    if name == METADATA_VERSION_FEATURE and level < current:
        # Kafka downgrades only between levels with the same records; pykraft never does
        why = ("Unsafe metadata downgrade is not supported in this version."
               if update.upgrade_type == UNSAFE_DOWNGRADE else
               "Refusing to perform the requested downgrade because it might delete "
               "metadata information.")
        return f"Invalid metadata.version {level}. {why}"
    return None


def update_features(ctx: ControllerContext, req: UpdateFeaturesRequest) -> ControllerResult:
    names = [u.feature for u in req.feature_updates]
    if len(set(names)) != len(names):
        return ControllerResult((), UpdateFeaturesResponse(
            error_code=ErrorCode.INVALID_REQUEST,
            error_message="The request contains a feature more than once"))
    proposed = {**ctx.image.features.finalized,
                **{u.feature: u.max_version_level for u in req.feature_updates}}
    for update in req.feature_updates:  # the first failure ends it, as in Kafka
        problem = _problem(ctx, update, proposed)
        if problem is not None:
            return ControllerResult((), UpdateFeaturesResponse(
                error_code=ErrorCode.INVALID_UPDATE_VERSION, error_message=_FAILED + problem))
    records: tuple[object, ...] = ()
    if not req.validate_only:
        finalized = ctx.image.features.finalized
        records = tuple(
            FeatureLevelRecord(name=u.feature, feature_level=u.max_version_level)
            for u in req.feature_updates
            if finalized.get(u.feature, 0) != u.max_version_level
        )
        if proposed.get(ELIGIBLE_LEADER_REPLICAS_FEATURE, 0) > 0 and any(
                u.feature == ELIGIBLE_LEADER_REPLICAS_FEATURE for u in req.feature_updates):
            records += _elr_safety_records(ctx)
    return ControllerResult(records, UpdateFeaturesResponse(
        error_code=ErrorCode.NONE, error_message=None,
        results=tuple(UpdatableFeatureResult(feature=u.feature, error_code=ErrorCode.NONE,
                                             error_message=None)
                      for u in req.feature_updates)))


def _elr_safety_records(ctx: ControllerContext) -> tuple[object, ...]:
    """Kafka's ``maybeGenerateElrSafetyRecords``, when an update turns eligible leader
    replicas on: one cluster-wide ``min.insync.replicas`` (this controller's static value
    unless a cluster default exists) and no broker's own, since ELR's safety rests on
    every controller reading the same value."""
    configs = ctx.image.configs
    records: list[object] = []
    if MIN_INSYNC_REPLICAS not in configs.get((ConfigResourceType.BROKER, "")):
        records.append(ConfigRecord(
            resource_type=ConfigResourceType.BROKER, resource_name="", name=MIN_INSYNC_REPLICAS,
            value=str(static_min_insync_replicas(ctx.config.properties))))
    records += [ConfigRecord(resource_type=ConfigResourceType.BROKER, resource_name=name,
                             name=MIN_INSYNC_REPLICAS, value=None)
                for (kind, name) in sorted(configs.resources)
                if kind == ConfigResourceType.BROKER and name
                and MIN_INSYNC_REPLICAS in configs.get((kind, name))]
    return tuple(records)


def allocate_producer_ids(ctx: ControllerContext,
                          req: AllocateProducerIdsRequest) -> ControllerResult:
    """The next block of 1000 ids; the record stores where the following block starts."""
    broker = ctx.image.cluster.brokers.get(req.broker_id)
    if broker is None or broker.epoch != req.broker_epoch:
        return ControllerResult((), error_response(req, ErrorCode.STALE_BROKER_EPOCH))
    start = max(ctx.image.producer_ids.next_producer_id, 0)
    if start > _LONG_MAX - PRODUCER_ID_BLOCK_SIZE:
        return ControllerResult((), error_response(req, ErrorCode.UNKNOWN_SERVER_ERROR))
    record = ProducerIdsRecord(broker_id=broker.broker_id, broker_epoch=broker.epoch,
                               next_producer_id=start + PRODUCER_ID_BLOCK_SIZE)
    return ControllerResult((record,), AllocateProducerIdsResponse(
        error_code=ErrorCode.NONE, producer_id_start=start,
        producer_id_len=PRODUCER_ID_BLOCK_SIZE))
