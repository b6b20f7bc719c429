"""DescribeCluster's endpoint types (KIP-919) and the refusal of one a listener does not
describe: brokers describe broker endpoints, controllers controller endpoints.

Kafka's ``AuthHelper.computeDescribeClusterResponse`` answers a type it does not know
UNSUPPORTED_ENDPOINT_TYPE and the other listener's type MISMATCHED_ENDPOINT_TYPE, each
INVALID_REQUEST at v0 (which cannot carry them), with its message and every other field
at the schema's default; clients (and pykraft's tools) tell a broker from a controller by it.
"""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.describe_cluster.v2 import response as dc
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i32Timedelta

from pykraft.protocol.errors import ErrorCode

BROKER_ENDPOINTS = 1
CONTROLLER_ENDPOINTS = 2
_NAMES = {BROKER_ENDPOINTS: "BROKER", CONTROLLER_ENDPOINTS: "CONTROLLER"}
#: Kafka's AUTHORIZED_OPERATIONS_OMITTED, the schema's default.
_OPERATIONS_OMITTED = -(2**31)


def endpoint_type_refusal(request: Any, version: int,
                          served: int) -> dc.DescribeClusterResponse | None:
    """The answer refusing ``request`` (any version) on a listener describing ``served``
    endpoints, or None when it asks for those (v0 always asks for brokers)."""
    wanted = int(getattr(request, "endpoint_type", BROKER_ENDPOINTS))
    if wanted == served:
        return None
    if wanted in _NAMES:
        code = ErrorCode.mismatched_endpoint_type
        message = (f"The request was sent to an endpoint of type {_NAMES[served]}, but we "
                   f"wanted an endpoint of type {_NAMES[wanted]}")
    else:
        code, message = ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {wanted}"
    return dc.DescribeClusterResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=ErrorCode.invalid_request if version == 0 else code, error_message=message,
        endpoint_type=i8(BROKER_ENDPOINTS), cluster_id="", controller_id=BrokerId(-1),
        brokers=(), cluster_authorized_operations=i32(_OPERATIONS_OMITTED))
