"""Finalized features (UpdateFeatures) and producer id blocks (AllocateProducerIds).

UpdateFeatures rules, deliberately simple:

* known features only: ``metadata.version`` (levels :data:`MINIMUM_METADATA_VERSION` to the
  newest pykraft knows), ``group.version`` (0-1) and ``transaction.version`` (0-2);
  ``kraft.version`` is a control record, not changed here;
* ``UPGRADE`` must not lower a level; ``SAFE_DOWNGRADE``/``UNSAFE_DOWNGRADE`` may, except for
  metadata.version, which never goes down (its records could become unreadable);
* level 0 removes a feature, which metadata.version cannot be;
* every registered broker must declare support for the new level;
* all-or-nothing like Kafka: if any update fails, nothing is written, and the others report
  success without effect.
"""

from __future__ import annotations

from collections.abc import Mapping

from kio.schema.allocate_producer_ids.v0.request import AllocateProducerIdsRequest
from kio.schema.allocate_producer_ids.v0.response import AllocateProducerIdsResponse
from kio.schema.types import ProducerId
from kio.schema.update_features.v1.request import FeatureUpdateKey, UpdateFeaturesRequest
from kio.schema.update_features.v1.response import UpdatableFeatureResult, UpdateFeaturesResponse
from kio.static.primitive import i32

from pykraft.controller.context import PRODUCER_ID_BLOCK_SIZE, ControllerContext, ControllerResult
from pykraft.controller.responses import NO_THROTTLE
from pykraft.features import METADATA_VERSION_FEATURE, METADATA_VERSIONS, MINIMUM_METADATA_VERSION
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import FeatureLevelRecord, ProducerIdsRecord

UPGRADE = 1
SAFE_DOWNGRADE = 2
UNSAFE_DOWNGRADE = 3

SUPPORTED_FEATURES: Mapping[str, tuple[int, int]] = {
    METADATA_VERSION_FEATURE: (MINIMUM_METADATA_VERSION.level, METADATA_VERSIONS[-1].level),
    "group.version": (0, 1),
    "transaction.version": (0, 2),
}
_LONG_MAX = 2**63 - 1


def _problem(ctx: ControllerContext, update: FeatureUpdateKey) -> str | None:
    name, level = update.feature, int(update.max_version_level)
    supported = SUPPORTED_FEATURES.get(name)
    if supported is None:
        return f"The controller does not support the feature {name!r}"
    if update.upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return f"Unknown upgrade type {update.upgrade_type}"
    current = ctx.image.features.finalized.get(name, 0)
    if name == METADATA_VERSION_FEATURE and level < current:
        return "Downgrading metadata.version is not supported"
    if level < current and update.upgrade_type == UPGRADE:
        return f"Can't downgrade {name} from {current} to {level} with upgrade type UPGRADE"
    low = supported[0] if name == METADATA_VERSION_FEATURE else 0
    if not low <= level <= supported[1]:
        return f"Invalid update version {level} for feature {name}: supported {low}-{supported[1]}"
    if level == 0:
        return None
    for broker in ctx.image.cluster.brokers.values():
        declared = broker.supported_range(name) or (0, 0)
        if not declared[0] <= level <= declared[1]:
            return f"Broker {broker.broker_id} does not support {name} level {level}"
    return None


def update_features(ctx: ControllerContext, req: UpdateFeaturesRequest) -> ControllerResult:
    names = [u.feature for u in req.feature_updates]
    if len(set(names)) != len(names):
        return ControllerResult((), UpdateFeaturesResponse(
            throttle_time=NO_THROTTLE, error_code=ErrorCode.invalid_request,
            error_message="The request contains a feature more than once", results=()))
    problems = [_problem(ctx, u) for u in req.feature_updates]
    results = tuple(
        UpdatableFeatureResult(
            feature=u.feature,
            error_code=ErrorCode.none if p is None else ErrorCode.invalid_update_version,
            error_message=p)
        for u, p in zip(req.feature_updates, problems, strict=True)
    )
    records: tuple[object, ...] = ()
    if not req.validate_only and all(p is None for p in problems):
        finalized = ctx.image.features.finalized
        records = tuple(
            FeatureLevelRecord(name=u.feature, feature_level=u.max_version_level)
            for u in req.feature_updates
            if finalized.get(u.feature, 0) != u.max_version_level
        )
    failed = next((p for p in problems if p is not None), None)  # v2 answers: top level only
    return ControllerResult(records, UpdateFeaturesResponse(
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none if failed is None else ErrorCode.invalid_update_version,
        error_message=failed, results=results))


def allocate_producer_ids(ctx: ControllerContext,
                          req: AllocateProducerIdsRequest) -> ControllerResult:
    """The next block of 1000 ids; the record stores where the following block starts."""
    broker = ctx.image.cluster.brokers.get(req.broker_id)
    if broker is None or broker.epoch != req.broker_epoch:
        return ControllerResult((), AllocateProducerIdsResponse(
            throttle_time=NO_THROTTLE, error_code=ErrorCode.stale_broker_epoch,
            producer_id_start=ProducerId(-1), producer_id_len=i32(0)))
    start = max(ctx.image.producer_ids.next_producer_id, 0)
    if start > _LONG_MAX - PRODUCER_ID_BLOCK_SIZE:
        return ControllerResult((), AllocateProducerIdsResponse(
            throttle_time=NO_THROTTLE, error_code=ErrorCode.unknown_server_error,
            producer_id_start=ProducerId(-1), producer_id_len=i32(0)))
    record = ProducerIdsRecord(broker_id=broker.broker_id, broker_epoch=broker.epoch,
                               next_producer_id=start + PRODUCER_ID_BLOCK_SIZE)
    return ControllerResult((record,), AllocateProducerIdsResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none,
        producer_id_start=ProducerId(start), producer_id_len=i32(PRODUCER_ID_BLOCK_SIZE)))
