"""error_answer() gives every API, at every version we accept, a response that encodes and
carries the error where that version has room for it (top level, or each named part)."""

from __future__ import annotations

from typing import Any

import pytest

from pykraft.broker.group_versions import GROUP_APIS
from pykraft.controller.responses import error_codes
from pykraft.messages.schema import schema_of
from pykraft.protocol.apis import all_versions
from pykraft.protocol.codec import decode_response, encode_response, request_type
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.error_answer import error_answer


def empty_request(api_key: int, version: int) -> Any:
    return request_type(api_key, version)()


#: The group APIs' error answers are the broker's (test_group_versions.py): their shapes
#: differ between versions (batched groups, members) beyond the one class's fields.
PAIRS = [(key, v) for key, v in all_versions() if key not in GROUP_APIS]


@pytest.mark.parametrize(("api_key", "version"), PAIRS,
                         ids=[f"{key.name}-v{v}" for key, v in PAIRS])
def test_every_api_version_gets_an_encodable_error_answer(api_key: int, version: int) -> None:
    answer = error_answer(api_key, empty_request(api_key, version), ErrorCode.NOT_CONTROLLER)
    body = decode_response(api_key, version, encode_response(1, api_key, version, answer)).body
    if not has_top_level_error(body, version):  # Fetch v4-6: an empty request has no part
        assert set(error_codes(body)) <= {ErrorCode.NONE}  # to carry it, as in Kafka
        return
    assert set(error_codes(body)) <= {ErrorCode.NOT_CONTROLLER}
    if hasattr(answer, "error_code"):
        assert body.error_code == ErrorCode.NOT_CONTROLLER


def has_top_level_error(body: object, version: int) -> bool:
    """Whether ``version`` of the response has a top-level error (a generated class holds
    every version's fields), or has no error code at all."""
    schema = schema_of(type(body))
    return any(f.attr == "error_code" and version in f.versions for f in schema.fields) or all(
        f.attr != "error_code" for f in schema.fields)
