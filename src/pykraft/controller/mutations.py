"""Topic mutations with who asked, for the controller mutation quota (KIP-599).

Kafka's ControllerApis looks a CreateTopics, CreatePartitions or DeleteTopics request's quota
up by the principal and client id of the client that sent it (a forwarded request's are the
Envelope's: the client's, not the broker's), strict from the versions whose clients know
THROTTLING_QUOTA_EXCEEDED, permissive below (:mod:`pykraft.quota.mutation`). A request to the
controller listener itself goes the same way, as its own client's. The controller charges it
per topic (:mod:`pykraft.controller.replication_control`) and answers with the throttle time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pykraft.messages.kafka.create_partitions_request import CreatePartitionsRequest
from pykraft.messages.kafka.create_partitions_response import CreatePartitionsResponse
from pykraft.messages.kafka.create_topics_request import CreateTopicsRequest
from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest
from pykraft.messages.kafka.delete_topics_response import DeleteTopicsResponse
from pykraft.protocol.errors import ErrorCode

MutationBody = CreateTopicsRequest | CreatePartitionsRequest | DeleteTopicsRequest
MutationResponse = CreateTopicsResponse | CreatePartitionsResponse | DeleteTopicsResponse
#: Kafka's ``newQuotaFor(..., strictSinceVersion)`` in ControllerApis.
STRICT_SINCE: dict[type[MutationBody], int] = {
    CreateTopicsRequest: 6, CreatePartitionsRequest: 3, DeleteTopicsRequest: 5}
#: A topic refused by a strict quota: Kafka's ThrottlingQuotaExceededException carries the
#: error's own message, which ``ApiError.fromThrowable`` drops, so the topic has none.
THROTTLED = ErrorCode.THROTTLING_QUOTA_EXCEEDED


@dataclass(frozen=True, slots=True)
class Mutation:
    """A topic mutation as the controller takes it: the request's body, the principal's name
    (``user``), the header's client id and the request's version."""

    body: MutationBody
    user: str
    client_id: str
    version: int

    @property
    def strict(self) -> bool:
        return self.version >= STRICT_SINCE[type(self.body)]


def throttled(response: object, throttle_ms: int) -> object:
    """``response`` with ``throttle_time_ms`` (a mutation's answer; others unchanged)."""
    if throttle_ms > 0 and isinstance(response, MutationResponse):
        return dataclasses.replace(response, throttle_time_ms=throttle_ms)
    return response
