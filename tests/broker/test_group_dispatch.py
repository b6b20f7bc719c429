"""The broker dispatcher's group APIs on wire frames: a failing FindCoordinator answers
UNKNOWN_SERVER_ERROR in its caller's version's shape (one key, or every key), and requests
reach the coordinator service in the latest shape, their answers back in the caller's."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from pykraft.broker.coordinator_topics import GROUP_KEY, CoordinatorFinder, OffsetsTopicConfig
from pykraft.broker.dispatch import BrokerDispatcher
from pykraft.errors import NetworkError
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.leave_group_request import LeaveGroupRequest
from pykraft.messages.kafka.leave_group_response import LeaveGroupResponse, MemberResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import api_key_of, decode_response, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.security.session import anonymous

CLIENT = anonymous("127.0.0.1:5000")


class NoImage:
    """A metadata listener whose image cannot be read: FindCoordinator fails."""

    @property
    def image(self) -> Any:
        raise RuntimeError("image unavailable")


class NoController:
    """A controller channel that cannot be reached."""

    async def send(self, body: Any) -> Any:
        raise NetworkError("no active controller is known yet")


class Service:
    """Records what reaches the coordinator service; LeaveGroup's member is unknown."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int, Any, str, str]] = []

    async def handle(self, api_key: int, api_version: int, request: Any, *, client_id: str,
                     client_host: str) -> Any:
        self.seen.append((api_key, api_version, request, client_id, client_host))
        return LeaveGroupResponse(members=tuple(MemberResponse(
            member_id=m.member_id, error_code=ErrorCode.UNKNOWN_MEMBER_ID)
            for m in request.members))


def broker(service: Service) -> BrokerDispatcher:
    node = SimpleNamespace(settings=SimpleNamespace(
        node_id=1, controller=SimpleNamespace(properties={})))
    finder = CoordinatorFinder({GROUP_KEY: OffsetsTopicConfig()}, NoController(), "PLAINTEXT")
    return BrokerDispatcher(node, NoImage(), None,  # type: ignore[arg-type]
                            cluster_id="cid", listener_name="PLAINTEXT",
                            groups=(service, finder))  # type: ignore[arg-type]


def ask(dispatcher: BrokerDispatcher, body: Any, version: int) -> Any:
    """The decoded answer to ``body`` sent as ``version`` on the wire."""
    api_key = api_key_of(body)
    frame = encode_request(RequestHeader(api_key, version, 9, "test"), body)
    return decode_response(api_key, version, asyncio.run(dispatcher.handle(frame, CLIENT))).body


def test_a_failing_find_coordinator_answers_in_the_callers_shape() -> None:
    dispatcher = broker(Service())
    old = ask(dispatcher, FindCoordinatorRequest(key="g"), 1)
    assert (old.error_code, old.node_id) == (ErrorCode.UNKNOWN_SERVER_ERROR, -1)
    new = ask(dispatcher, FindCoordinatorRequest(coordinator_keys=("g", "h")), 6)
    assert [(c.key, c.error_code) for c in new.coordinators] == [
        ("g", ErrorCode.UNKNOWN_SERVER_ERROR), ("h", ErrorCode.UNKNOWN_SERVER_ERROR)]


def test_an_old_leave_group_reaches_the_service_batched_and_comes_back_single() -> None:
    service = Service()
    answer = ask(broker(service), LeaveGroupRequest(group_id="g", member_id="m-1"), 1)
    assert answer.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    ((api_key, version, request, client_id, host),) = service.seen
    assert (api_key, version, [m.member_id for m in request.members], client_id, host) == (
        ApiKey.LEAVE_GROUP, 1, ["m-1"], "test", "/127.0.0.1")
