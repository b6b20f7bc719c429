"""The classic coordinator's responses, at each API's latest version, with Kafka's defaults
for the fields an error leaves unset (generation -1, empty member id, no protocol)."""

from __future__ import annotations

from pykraft.messages.kafka.heartbeat_response import HeartbeatResponse
from pykraft.messages.kafka.join_group_response import JoinGroupResponse, JoinGroupResponseMember
from pykraft.messages.kafka.sync_group_response import SyncGroupResponse


def join_error(error: int, member_id: str = "") -> JoinGroupResponse:
    return JoinGroupResponse(error_code=error, protocol_name=None, member_id=member_id)


def join_success(*, member_id: str, generation: int, protocol_type: str | None,
                 protocol_name: str | None, leader: str | None,
                 members: tuple[JoinGroupResponseMember, ...] = (),
                 skip_assignment: bool = False) -> JoinGroupResponse:
    return JoinGroupResponse(
        generation_id=generation, protocol_type=protocol_type, protocol_name=protocol_name,
        leader=leader or "", skip_assignment=skip_assignment, member_id=member_id,
        members=members)


def sync_reply(error: int, assignment: bytes = b"", protocol_type: str | None = None,
               protocol_name: str | None = None) -> SyncGroupResponse:
    return SyncGroupResponse(error_code=error, protocol_type=protocol_type,
                             protocol_name=protocol_name, assignment=assignment)


def heartbeat_reply(error: int) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=error)
