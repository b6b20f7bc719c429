"""The response a request gets when it cannot be served, for any API (Kafka's
``AbstractRequest.getErrorResponse``): a failed handler answers UNKNOWN_SERVER_ERROR, a
forward with no controller NOT_CONTROLLER, instead of a silently closed connection.

Requests with parts (topics, resources) get the error on every part, as the controller's
own refusals do; the others get it in their top-level error code.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from kio.schema.metadata.v13 import request as md_req
from kio.schema.metadata.v13 import response as md
from kio.schema.types import TopicName
from kio.static.primitive import i32

from pykraft.controller.responses import error_response
from pykraft.ids import ZERO_UUID
from pykraft.protocol.apis import API_SPECS, ApiKey
from pykraft.protocol.codec import response_type
from pykraft.protocol.convert import convert, default_value
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.controller_service import CONTROLLER_REQUESTS

OPERATIONS_NOT_REQUESTED = i32(-(2**31))
"""Kafka's AUTHORIZED_OPERATIONS_OMITTED: a client did not ask for authorized operations."""


def error_answer(api_key: int, request: Any, code: ErrorCode,
                 message: str | None = None) -> Any:
    """The latest-version response of ``api_key`` refusing ``request`` (any version)."""
    controller_class = CONTROLLER_REQUESTS.get(api_key)
    if controller_class is not None:
        return error_response(convert(request, controller_class), code, message)
    if api_key == ApiKey.METADATA:
        return _metadata(convert(request, md_req.MetadataRequest), code)
    body = _defaults(response_type(api_key, API_SPECS[api_key].max_version))
    fields = {"error_code": code, "error_message": message}
    return dataclasses.replace(body, **{k: v for k, v in fields.items() if hasattr(body, k)})


def _metadata(request: md_req.MetadataRequest, code: ErrorCode) -> Any:
    """Every named topic with the error and no partitions; "all topics" gets none."""
    topics = tuple(topic_error(t.name, t.topic_id, code) for t in request.topics or ())
    return dataclasses.replace(_defaults(md.MetadataResponse), topics=topics, error_code=code)


def topic_error(name: str | None, topic_id: uuid.UUID | None, code: ErrorCode) -> Any:
    """A Metadata topic answered with an error only (unknown, or the request failed)."""
    return md.MetadataResponseTopic(
        error_code=code, name=None if name is None else TopicName(name),
        topic_id=topic_id or ZERO_UUID, is_internal=False, partitions=(),
        topic_authorized_operations=OPERATIONS_NOT_REQUESTED)


def _defaults(cls: type[Any]) -> Any:
    return cls(**{f.name: default_value(f) for f in dataclasses.fields(cls)})

