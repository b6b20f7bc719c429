"""ApiVersions: what a listener advertises, the KIP-511 fallback reply, and negotiation.

Every Kafka client (and KRaft's own NetworkClient) opens a connection with ApiVersions and
then uses, per API, the highest version both sides support, so this is the first thing a
pykraft listener must answer correctly.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kio.index import load_payload_module
from kio.static.constants import EntityType

from pykraft.features import KRAFT_VERSION_FEATURE, SUPPORTED_FEATURES
from pykraft.protocol.apis import ApiKey, Listener, specs_for_listener
from pykraft.protocol.codec import Body, encode_response
from pykraft.protocol.errors import ErrorCode

#: Per api key, the inclusive (min, max) version range.
VersionRanges = Mapping[int, tuple[int, int]]

_FIRST_FEATURES_VERSION = 3
# ApiVersions v0-v3 responses leave out supported features whose minimum is 0 (KAFKA-17011),
# because clients of those versions treat a 0 minimum as invalid.
_FIRST_ZERO_MIN_FEATURES_VERSION = 4


@dataclass(frozen=True, slots=True)
class FeatureRange:
    """A feature's version range: supported (min/max version) or finalized (min/max level)."""

    name: str
    min_version: int
    max_version: int


def node_features(finalized: Mapping[str, int], kraft_version: int,
                  epoch: int) -> dict[str, Any]:
    """ApiVersions' feature fields as a Kafka node fills them: the features this software
    implements (:data:`SUPPORTED_FEATURES`: metadata.version and kraft.version), the levels
    finalized in the metadata log plus the kraft.version in force, and the epoch of those
    levels."""
    supported = tuple(FeatureRange(name, low, high)
                      for name, (low, high) in sorted(SUPPORTED_FEATURES.items()))
    levels = {**finalized, KRAFT_VERSION_FEATURE: kraft_version}
    return {
        "supported_features": supported,
        "finalized_features": tuple(FeatureRange(name, level, level)
                                    for name, level in sorted(levels.items())),
        "finalized_features_epoch": epoch,
    }


def listener_ranges(listener: Listener) -> dict[int, tuple[int, int]]:
    """The version ranges ``listener`` advertises."""
    return {spec.key: spec.advertised_range for spec in specs_for_listener(listener)}


#: The last OffsetCommit and OffsetFetch versions naming topics (v10 names them by id only).
LAST_NAMED_OFFSETS_VERSION = 9


def offsets_by_name(ranges: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """``ranges`` for a client whose OffsetCommit and OffsetFetch bodies name topics: a
    named body converted up to v10 would reach the broker without its topics, and answers
    would come back without names."""
    return {**ranges, **{key: (ranges[key][0], min(ranges[key][1], LAST_NAMED_OFFSETS_VERSION))
                         for key in (ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH) if key in ranges}}


def api_versions_response(
    listener: Listener,
    version: int,
    *,
    throttle_time_ms: int = 0,
    supported_features: Sequence[FeatureRange] = (),
    finalized_features_epoch: int = -1,
    finalized_features: Sequence[FeatureRange] = (),
) -> Body:
    """The ApiVersionsResponse body (kio entity) at ``version`` for ``listener``.

    Feature fields only exist from v3 on (tagged fields); below that they are dropped.
    """
    schema = load_payload_module(ApiKey.API_VERSIONS, version, EntityType.response)
    fields: dict[str, object] = {
        "error_code": ErrorCode.none,
        "api_keys": _api_keys(schema, listener),
    }
    if version >= 1:
        fields["throttle_time"] = datetime.timedelta(milliseconds=throttle_time_ms)
    if version >= _FIRST_FEATURES_VERSION:
        fields["supported_features"] = tuple(
            schema.SupportedFeatureKey(
                name=feature.name,
                min_version=feature.min_version,
                max_version=feature.max_version,
            )
            for feature in supported_features
            if feature.min_version > 0 or version >= _FIRST_ZERO_MIN_FEATURES_VERSION
        )
        fields["finalized_features_epoch"] = finalized_features_epoch
        fields["finalized_features"] = tuple(
            schema.FinalizedFeatureKey(
                name=feature.name,
                max_version_level=feature.max_version,
                min_version_level=feature.min_version,
            )
            for feature in finalized_features
            if feature.max_version != 0  # Kafka lists no feature finalized at level 0
        )
    return schema.ApiVersionsResponse(**fields)


def unsupported_version_response(listener: Listener) -> Body:
    """KIP-511 reply to an ApiVersions request of a version we do not speak: v0 body format,
    UNSUPPORTED_VERSION, and ApiVersions' own range only, so the client can retry with a
    version we have (Kafka's ``ApiVersionsRequest.getErrorResponse`` lists no other API)."""
    schema = load_payload_module(ApiKey.API_VERSIONS, 0, EntityType.response)
    low, high = listener_ranges(listener)[ApiKey.API_VERSIONS]
    return schema.ApiVersionsResponse(
        error_code=ErrorCode.unsupported_version,
        api_keys=(schema.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=low,
                                    max_version=high),),
    )


def encode_unsupported_version_reply(correlation_id: int, listener: Listener) -> bytes:
    """The complete response (header v0 + v0 body) for :func:`unsupported_version_response`."""
    return encode_response(
        correlation_id, ApiKey.API_VERSIONS, 0, unsupported_version_response(listener)
    )


def ranges_from_response(body: Body) -> dict[int, tuple[int, int]]:
    """A peer's advertised ranges, from its ApiVersionsResponse body (any version)."""
    return {entry.api_key: (entry.min_version, entry.max_version) for entry in body.api_keys}


def negotiate(ours: VersionRanges, theirs: VersionRanges) -> dict[int, int | None]:
    """For each of our APIs, the highest version both sides support, or None if none is."""
    result: dict[int, int | None] = {}
    for api_key, (our_min, our_max) in ours.items():
        their_range = theirs.get(api_key)
        if their_range is None:
            result[api_key] = None
            continue
        low, high = max(our_min, their_range[0]), min(our_max, their_range[1])
        result[api_key] = high if low <= high else None
    return result


def _api_keys(schema: ModuleType, listener: Listener) -> tuple[Body, ...]:
    return tuple(
        schema.ApiVersion(api_key=api_key, min_version=low, max_version=high)
        for api_key, (low, high) in listener_ranges(listener).items()
    )
