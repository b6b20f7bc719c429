"""ApiVersions: what a listener advertises, the KIP-511 fallback reply, and negotiation.

Every Kafka client (and KRaft's own NetworkClient) opens a connection with ApiVersions and
then uses, per API, the highest version both sides support, so this is the first thing a
pykraft listener must answer correctly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from pykraft.features import KRAFT_VERSION_FEATURE, SUPPORTED_FEATURES
from pykraft.messages.kafka.api_versions_request import ApiVersionsRequest
from pykraft.messages.kafka.api_versions_response import (
    ApiVersion,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)
from pykraft.protocol.apis import ApiKey, Listener, specs_for_listener
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode

__all__ = [
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "FeatureRange",
    "NodeFeatures",
    "api_versions_error",
    "api_versions_response",
    "encode_unsupported_version_reply",
    "listener_ranges",
    "negotiate",
    "node_features",
    "offsets_by_name",
    "ranges_from_response",
    "refused_api_versions",
    "unsupported_version_response",
]

#: Per api key, the inclusive (min, max) version range.
VersionRanges = Mapping[int, tuple[int, int]]

# ApiVersions v0-v3 responses leave out supported features whose minimum is 0 (KAFKA-17011),
# because clients of those versions treat a 0 minimum as invalid.
_FIRST_ZERO_MIN_FEATURES_VERSION = 4
#: The first version naming the software (KIP-511), and the first naming the cluster and
#: node the client means to reach (KIP-1242).
_FIRST_SOFTWARE_VERSION = 3
_FIRST_TARGET_VERSION = 5
#: Kafka's ``ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN``.
_SOFTWARE_NAME_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_NO_NODE = -1


@dataclass(frozen=True, slots=True)
class FeatureRange:
    """A feature's version range: supported (min/max version) or finalized (min/max level)."""

    name: str
    min_version: int
    max_version: int


class NodeFeatures(TypedDict):
    """The feature fields of :func:`api_versions_response`, as :func:`node_features` fills
    them."""

    supported_features: tuple[FeatureRange, ...]
    finalized_features: tuple[FeatureRange, ...]
    finalized_features_epoch: int


def node_features(finalized: Mapping[str, int], kraft_version: int,
                  epoch: int) -> NodeFeatures:
    """ApiVersions' feature fields as a Kafka node fills them: the features this software
    implements (:data:`SUPPORTED_FEATURES`: metadata.version and kraft.version), the levels
    finalized in the metadata log plus the kraft.version in force, and the epoch of those
    levels."""
    supported = tuple(FeatureRange(name, low, high)
                      for name, (low, high) in sorted(SUPPORTED_FEATURES.items()))
    levels = {**finalized, KRAFT_VERSION_FEATURE: kraft_version}
    return NodeFeatures(
        supported_features=supported,
        finalized_features=tuple(FeatureRange(name, level, level)
                                 for name, level in sorted(levels.items())),
        finalized_features_epoch=epoch,
    )


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
) -> ApiVersionsResponse:
    """The ApiVersionsResponse to a request of ``version`` on ``listener``.

    The throttle time (v1+) and the feature fields (v3+, tagged) are ignorable: writing the
    body at an older version drops them, as Kafka's writer does.
    """
    return ApiVersionsResponse(
        error_code=ErrorCode.NONE,
        api_keys=tuple(ApiVersion(api_key, low, high)
                       for api_key, (low, high) in listener_ranges(listener).items()),
        throttle_time_ms=throttle_time_ms,
        supported_features=tuple(
            SupportedFeatureKey(feature.name, feature.min_version, feature.max_version)
            for feature in supported_features
            if feature.min_version > 0 or version >= _FIRST_ZERO_MIN_FEATURES_VERSION
        ),
        finalized_features_epoch=finalized_features_epoch,
        finalized_features=tuple(
            FinalizedFeatureKey(feature.name, feature.max_version, feature.min_version)
            for feature in finalized_features
            if feature.max_version != 0  # Kafka lists no feature finalized at level 0
        ),
    )


def unsupported_version_response(listener: Listener) -> ApiVersionsResponse:
    """KIP-511 reply to an ApiVersions request of a version we do not speak: v0 body format,
    UNSUPPORTED_VERSION, and ApiVersions' own range only, so the client can retry with a
    version we have (Kafka's ``ApiVersionsRequest.getErrorResponse`` lists no other API)."""
    low, high = listener_ranges(listener)[ApiKey.API_VERSIONS]
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION,
                               api_keys=(ApiVersion(ApiKey.API_VERSIONS, low, high),))


def encode_unsupported_version_reply(correlation_id: int, listener: Listener) -> bytes:
    """The complete response (header v0 + v0 body) for :func:`unsupported_version_response`."""
    return encode_response(
        correlation_id, ApiKey.API_VERSIONS, 0, unsupported_version_response(listener)
    )


def refused_api_versions(request: ApiVersionsRequest, version: int,
                         target: tuple[str, int] | None) -> ErrorCode | None:
    """Why Kafka 4.4 refuses an ApiVersions request, if it does (the connection stays open).

    INVALID_REQUEST (``ApiVersionsRequest.isValid``): from v3, a software name or version
    outside ``[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?`` (KIP-511); from v5, a cluster named
    without a node or a node without a cluster (KIP-1242). REBOOTSTRAP_REQUIRED: a v5 request
    naming both, on a listener that checks them (``target``, its cluster id and node id: a
    broker's; Kafka's controllers do not check), when either is not this node's, so a client
    that a stale address led to the wrong broker or cluster bootstraps again."""
    if version >= _FIRST_SOFTWARE_VERSION and not all(
            _SOFTWARE_NAME_VERSION.fullmatch(text) for text in (
                request.client_software_name, request.client_software_version)):
        return ErrorCode.INVALID_REQUEST
    if version < _FIRST_TARGET_VERSION:
        return None
    if (request.cluster_id is None) != (request.node_id == _NO_NODE):
        return ErrorCode.INVALID_REQUEST
    if target is not None and request.cluster_id is not None and (
            (request.cluster_id, request.node_id) != target):
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return None


def api_versions_error(error: ErrorCode) -> ApiVersionsResponse:
    """The answer to a refused request (:func:`refused_api_versions`): the error and no
    APIs, as Kafka's ``ApiVersionsRequest.getErrorResponse`` builds it."""
    return ApiVersionsResponse(error_code=error)


def ranges_from_response(body: ApiVersionsResponse) -> dict[int, tuple[int, int]]:
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
