"""DescribeCluster's endpoint types (KIP-919) and the refusal of one a listener does not
describe: brokers describe broker endpoints, controllers controller endpoints.

Kafka's ``AuthHelper.computeDescribeClusterResponse`` answers a type it does not know
UNSUPPORTED_ENDPOINT_TYPE and the other listener's type MISMATCHED_ENDPOINT_TYPE, each
INVALID_REQUEST at v0 (which cannot carry them), with its message and every other field
at the schema's default; clients (and pykraft's tools) tell a broker from a controller by it.
"""

from __future__ import annotations

from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.messages.kafka.describe_cluster_response import DescribeClusterResponse
from pykraft.protocol.errors import ErrorCode

BROKER_ENDPOINTS = 1
CONTROLLER_ENDPOINTS = 2
_NAMES = {BROKER_ENDPOINTS: "BROKER", CONTROLLER_ENDPOINTS: "CONTROLLER"}


def endpoint_type_refusal(request: DescribeClusterRequest, version: int,
                          served: int) -> DescribeClusterResponse | None:
    """The answer refusing ``request`` (any version) on a listener describing ``served``
    endpoints, or None when it asks for those (v0 has no endpoint type: its default, brokers)."""
    wanted = request.endpoint_type
    if wanted == served:
        return None
    if wanted in _NAMES:
        code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
        message = (f"The request was sent to an endpoint of type {_NAMES[served]}, but we "
                   f"wanted an endpoint of type {_NAMES[wanted]}")
    else:
        code, message = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {wanted}"
    return DescribeClusterResponse(
        error_code=ErrorCode.INVALID_REQUEST if version == 0 else code, error_message=message)
