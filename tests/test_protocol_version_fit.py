"""Responses fitted to the version they are written at (:mod:`pykraft.protocol.version_fit`):
an error code an old DeleteTopics does not know reaches it as Kafka answers that version."""

from __future__ import annotations

import pytest

from pykraft.messages.kafka.delete_topics_response import (
    DeletableTopicResult,
    DeleteTopicsResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.version_fit import FIRST_DELETION_DISABLED_VERSION, fitted

DISABLED = DeleteTopicsResponse(responses=(
    DeletableTopicResult(name="a", error_code=ErrorCode.TOPIC_DELETION_DISABLED),
    DeletableTopicResult(name="b", error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
))


@pytest.mark.parametrize("version", range(1, FIRST_DELETION_DISABLED_VERSION))
def test_deletion_disabled_is_invalid_request_before_v3(version: int) -> None:
    codes = [t.error_code for t in fitted(DISABLED, version).responses]  # type: ignore[attr-defined]
    assert codes == [ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


@pytest.mark.parametrize("version", range(FIRST_DELETION_DISABLED_VERSION, 7))
def test_deletion_disabled_is_kept_from_v3(version: int) -> None:
    assert fitted(DISABLED, version) == DISABLED
