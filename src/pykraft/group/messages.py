"""The group APIs' messages as types: the requests a group shard answers, their responses,
and FindCoordinator's (which the runtime answers), so the code that routes any of them
is typed by the one generated class of each API (:mod:`pykraft.messages.kafka`)."""

from __future__ import annotations

from pykraft.messages.kafka.consumer_group_describe_request import ConsumerGroupDescribeRequest
from pykraft.messages.kafka.consumer_group_describe_response import (
    ConsumerGroupDescribeResponse,
)
from pykraft.messages.kafka.consumer_group_heartbeat_request import (
    ConsumerGroupHeartbeatRequest,
)
from pykraft.messages.kafka.consumer_group_heartbeat_response import (
    ConsumerGroupHeartbeatResponse,
)
from pykraft.messages.kafka.delete_groups_request import DeleteGroupsRequest
from pykraft.messages.kafka.delete_groups_response import DeleteGroupsResponse
from pykraft.messages.kafka.describe_groups_request import DescribeGroupsRequest
from pykraft.messages.kafka.describe_groups_response import DescribeGroupsResponse
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.find_coordinator_response import FindCoordinatorResponse
from pykraft.messages.kafka.heartbeat_request import HeartbeatRequest
from pykraft.messages.kafka.heartbeat_response import HeartbeatResponse
from pykraft.messages.kafka.join_group_request import JoinGroupRequest
from pykraft.messages.kafka.join_group_response import JoinGroupResponse
from pykraft.messages.kafka.leave_group_request import LeaveGroupRequest
from pykraft.messages.kafka.leave_group_response import LeaveGroupResponse
from pykraft.messages.kafka.list_groups_request import ListGroupsRequest
from pykraft.messages.kafka.list_groups_response import ListGroupsResponse
from pykraft.messages.kafka.offset_commit_request import OffsetCommitRequest
from pykraft.messages.kafka.offset_commit_response import OffsetCommitResponse
from pykraft.messages.kafka.offset_delete_request import OffsetDeleteRequest
from pykraft.messages.kafka.offset_delete_response import OffsetDeleteResponse
from pykraft.messages.kafka.offset_fetch_request import OffsetFetchRequest
from pykraft.messages.kafka.offset_fetch_response import OffsetFetchResponse
from pykraft.messages.kafka.sync_group_request import SyncGroupRequest
from pykraft.messages.kafka.sync_group_response import SyncGroupResponse
from pykraft.messages.kafka.txn_offset_commit_request import TxnOffsetCommitRequest
from pykraft.messages.kafka.txn_offset_commit_response import TxnOffsetCommitResponse

#: A request a group shard answers.
ShardRequest = (OffsetCommitRequest | OffsetFetchRequest | JoinGroupRequest | HeartbeatRequest
                | LeaveGroupRequest | SyncGroupRequest | DescribeGroupsRequest
                | ListGroupsRequest | DeleteGroupsRequest | OffsetDeleteRequest
                | ConsumerGroupHeartbeatRequest | ConsumerGroupDescribeRequest
                | TxnOffsetCommitRequest)
#: Its answer.
ShardResponse = (OffsetCommitResponse | OffsetFetchResponse | JoinGroupResponse
                 | HeartbeatResponse | LeaveGroupResponse | SyncGroupResponse
                 | DescribeGroupsResponse | ListGroupsResponse | DeleteGroupsResponse
                 | OffsetDeleteResponse | ConsumerGroupHeartbeatResponse
                 | ConsumerGroupDescribeResponse | TxnOffsetCommitResponse)
#: A group API's request (FindCoordinator's too), and its answer.
GroupRequest = ShardRequest | FindCoordinatorRequest
GroupResponse = ShardResponse | FindCoordinatorResponse
