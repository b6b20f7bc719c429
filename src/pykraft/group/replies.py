"""The classic coordinator's responses, at each API's latest version, with Kafka's defaults
for the fields an error leaves unset (generation -1, empty member id, no protocol)."""

from __future__ import annotations

import datetime

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.response import HeartbeatResponse
from kio.schema.join_group.v9.response import JoinGroupResponse, JoinGroupResponseMember
from kio.schema.sync_group.v5.response import SyncGroupResponse
from kio.static.primitive import i32, i32Timedelta

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


def millis(duration: datetime.timedelta) -> int:
    """A kio duration field as Kafka's int32 milliseconds."""
    return int(duration / datetime.timedelta(milliseconds=1))


def join_error(error: int, member_id: str = "") -> JoinGroupResponse:
    return JoinGroupResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode(error), protocol_name=None,
        leader="", member_id=member_id, members=())


def join_success(*, member_id: str, generation: int, protocol_type: str | None,
                 protocol_name: str | None, leader: str | None,
                 members: tuple[JoinGroupResponseMember, ...] = (),
                 skip_assignment: bool = False) -> JoinGroupResponse:
    return JoinGroupResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode.none, generation_id=i32(generation),
        protocol_type=protocol_type, protocol_name=protocol_name, leader=leader or "",
        skip_assignment=skip_assignment, member_id=member_id, members=members)


def sync_reply(error: int, assignment: bytes = b"", protocol_type: str | None = None,
               protocol_name: str | None = None) -> SyncGroupResponse:
    return SyncGroupResponse(
        throttle_time=NO_THROTTLE, error_code=ErrorCode(error), protocol_type=protocol_type,
        protocol_name=protocol_name, assignment=assignment)


def heartbeat_reply(error: int) -> HeartbeatResponse:
    return HeartbeatResponse(throttle_time=NO_THROTTLE, error_code=ErrorCode(error))
