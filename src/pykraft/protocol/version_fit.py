"""Responses as Kafka writes them at an older version of their API.

pykraft builds one generated class for every version; Kafka's response constructors take
the request's version and leave out what an older version has no room for. The fields
here are not ignorable in Kafka's schemas, so writing them at such a version would fail:
they are cleared before encoding instead, as Kafka never sets them there. An error code an
old version does not know is answered as Kafka answers that version.
"""

from __future__ import annotations

import dataclasses

from pykraft.messages.kafka.create_delegation_token_response import (
    CreateDelegationTokenResponse,
)
from pykraft.messages.kafka.delete_topics_response import DeleteTopicsResponse
from pykraft.messages.kafka.describe_delegation_token_response import (
    DescribeDelegationTokenResponse,
)
from pykraft.messages.kafka.elect_leaders_response import ElectLeadersResponse
from pykraft.protocol.error_codes import ErrorCode

#: ElectLeadersResponse(throttle, error, results, version): the top-level error from v1.
FIRST_ELECTION_ERROR_VERSION = 1
#: Create's and Describe's token answers name the requester from v3 (KIP-373).
FIRST_REQUESTER_VERSION = 3
#: DeleteTopics knows TOPIC_DELETION_DISABLED from v3; Kafka answers older versions
#: INVALID_REQUEST ("This version does not support topic deletion.", not sent).
FIRST_DELETION_DISABLED_VERSION = 3


def fitted(body: object, version: int) -> object:
    """``body`` without the fields Kafka leaves out at ``version``."""
    if isinstance(body, ElectLeadersResponse) and version < FIRST_ELECTION_ERROR_VERSION:
        return dataclasses.replace(body, error_code=0)
    if isinstance(body, DeleteTopicsResponse) and version < FIRST_DELETION_DISABLED_VERSION:
        return dataclasses.replace(body, responses=tuple(
            dataclasses.replace(topic, error_code=ErrorCode.INVALID_REQUEST)
            if topic.error_code == ErrorCode.TOPIC_DELETION_DISABLED else topic
            for topic in body.responses))
    if version >= FIRST_REQUESTER_VERSION:
        return body
    if isinstance(body, CreateDelegationTokenResponse):
        return dataclasses.replace(body, token_requester_principal_type="",
                                   token_requester_principal_name="")
    if isinstance(body, DescribeDelegationTokenResponse):
        return dataclasses.replace(body, tokens=tuple(
            dataclasses.replace(token, token_requester_principal_type="",
                                token_requester_principal_name="")
            for token in body.tokens))
    return body
