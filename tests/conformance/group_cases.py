"""Conformance rows for the group coordinator's APIs (issue 16).

Every run uses a group of its own (:func:`group_of`), so rows never see each other's
members. A row's API is sent at the row's version; the steps that set a group up (find the
coordinator, join, sync, commit) go at each API's latest version, so a failure names the
API under test. The requests are pykraft's generated classes, one class for every version
(:meth:`Run.generated`): kafka-python's group classes encode a different field set per
version.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

from conformance.cases import NO_SUCH_TOPIC, Case, Meaning, code, settled, topic_id_of
from conformance.harness import Run
from pykraft.messages.kafka import offset_commit_request as oc
from pykraft.messages.kafka import offset_delete_request as od
from pykraft.messages.kafka import offset_fetch_request as of
from pykraft.messages.kafka.consumer_group_describe_request import ConsumerGroupDescribeRequest
from pykraft.messages.kafka.consumer_group_heartbeat_request import (
    ConsumerGroupHeartbeatRequest,
)
from pykraft.messages.kafka.delete_groups_request import DeleteGroupsRequest
from pykraft.messages.kafka.describe_groups_request import DescribeGroupsRequest
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.heartbeat_request import HeartbeatRequest
from pykraft.messages.kafka.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from pykraft.messages.kafka.leave_group_request import LeaveGroupRequest, MemberIdentity
from pykraft.messages.kafka.list_groups_request import ListGroupsRequest
from pykraft.messages.kafka.sync_group_request import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from pykraft.protocol.apis import API_SPECS, ApiKey

PROTOCOL = "range"
SESSION_MS = 30_000
_RETRIED = frozenset({"COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS",
                      "NOT_COORDINATOR"})
#: Offsets committed by the rows (to the shared topic's partition 0).
COMMITTED = 42
#: OffsetCommit and OffsetFetch name topics by id from v10 (Kafka 4.1).
FIRST_TOPIC_ID = 10
#: OffsetFetch names groups (several) from v8.
FIRST_BATCHED_FETCH = 8
#: ListGroups lists each group's state from v4.
FIRST_LISTED_STATE = 4


def group_of(run: Run, suffix: str = "") -> str:
    return f"g-{run.api_name}-{run.case}-v{run.version}{suffix}".lower()


def latest(run: Run, api_key: int) -> Run:
    """``run`` moved to ``api_key``'s latest version (for set-up steps)."""
    return dataclasses.replace(run, version=API_SPECS[api_key].max_version)


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: int16 version, topics (int32 count, int16-long
    strings), user_data (int32 -1: null)."""
    body = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        body += struct.pack(">h", len(topic)) + topic.encode()
    return body + struct.pack(">i", -1)


def retried(send: Callable[[], Any], errors: Callable[[Any], list[str]]) -> Any:
    """``send()`` again while the answer says the coordinator is not ready yet (the offsets
    topic is being created or loaded), for up to :data:`SETTLE_S`."""
    return settled(send, lambda body: not _RETRIED & set(errors(body)))


# -- FindCoordinator -------------------------------------------------------------------------

def find_coordinator(run: Run, keys: list[str], key_type: int = 0) -> Any:
    request = (FindCoordinatorRequest(key=keys[0], key_type=key_type) if run.version < 4
               else FindCoordinatorRequest(key_type=key_type, coordinator_keys=tuple(keys)))
    return retried(lambda: run.generated(ApiKey.FIND_COORDINATOR, request), coordinator_errors)


def coordinator_errors(body: Any) -> list[str]:
    if body.coordinators:
        return [code(c.error_code) for c in body.coordinators]
    return [code(body.error_code)]


def coordinators(body: Any, run: Run) -> list[tuple[str, bool]]:
    """(error, is this broker) per key, for either shape (v0-3: the top level)."""
    found = body.coordinators or [body]
    return [(code(c.error_code), c.node_id == run.cluster.broker_id) for c in found]


def ready(run: Run, group: str) -> None:
    """Wait until ``group``'s coordinator answers (the offsets topic exists and loaded)."""
    (found,) = coordinators(find_coordinator(latest(run, ApiKey.FIND_COORDINATOR), [group]),
                            run)
    assert found == ("NONE", True), found


# -- JoinGroup / SyncGroup -------------------------------------------------------------------

def join(run: Run, group: str, member_id: str = "", *, session: int = SESSION_MS,
         topics: tuple[str, ...] | None = None, first_call_only: bool = False) -> Any:
    """JoinGroup at ``run``'s version; from v4 an unknown member is first told its id
    (MEMBER_ID_REQUIRED) and joins again with it, as clients do."""
    if group:  # the empty id is refused by any broker, coordinator or not
        ready(run, group)
    subscribed = topics if topics is not None else (run.cluster.topic,)

    def send(member: str) -> Any:
        return retried(lambda: run.generated(ApiKey.JOIN_GROUP, JoinGroupRequest(
            group_id=group, session_timeout_ms=session, rebalance_timeout_ms=session,
            member_id=member, protocol_type="consumer", protocols=(JoinGroupRequestProtocol(
                name=PROTOCOL, metadata=subscription(*subscribed)),))),
            lambda b: [code(b.error_code)])

    body = send(member_id)
    if code(body.error_code) == "MEMBER_ID_REQUIRED" and not first_call_only:
        body = send(body.member_id)
    return body


def joined(body: Any, _run: Run) -> Meaning:
    return (code(body.error_code), body.generation_id, body.leader == body.member_id,
            len(body.members), body.protocol_name)


def join_error(body: Any, _run: Run) -> Meaning:
    return code(body.error_code)


def sync(run: Run, group: str, generation: int, member_id: str,
         assignment: bytes | None = None) -> Any:
    assignments = () if assignment is None else (
        SyncGroupRequestAssignment(member_id=member_id, assignment=assignment),)
    return run.generated(ApiKey.SYNC_GROUP, SyncGroupRequest(
        group_id=group, generation_id=generation, member_id=member_id,
        protocol_type="consumer", protocol_name=PROTOCOL, assignments=assignments))


def stable_member(run: Run, group: str, topics: tuple[str, ...] | None = None
                  ) -> tuple[int, str]:
    """A group of one member that joined and synced: (generation, member id)."""
    joined_body = join(latest(run, ApiKey.JOIN_GROUP), group, topics=topics)
    assert code(joined_body.error_code) == "NONE", joined_body
    synced = sync(latest(run, ApiKey.SYNC_GROUP), group, joined_body.generation_id,
                  joined_body.member_id, b"assignment")
    assert code(synced.error_code) == "NONE", synced
    return joined_body.generation_id, joined_body.member_id


def leader_syncs(run: Run) -> Any:
    group = group_of(run)
    body = join(latest(run, ApiKey.JOIN_GROUP), group)
    return sync(run, group, body.generation_id, body.member_id, b"the-assignment")


def synced(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), body.assignment


def sync_wrong_generation(run: Run) -> Any:
    group = group_of(run)
    body = join(latest(run, ApiKey.JOIN_GROUP), group)
    return sync(run, group, body.generation_id + 5, body.member_id, b"x")


# -- Heartbeat / LeaveGroup ------------------------------------------------------------------

def heartbeat(run: Run, generation_delta: int = 0) -> Any:
    group = group_of(run)
    generation, member = stable_member(run, group)
    return run.generated(ApiKey.HEARTBEAT, HeartbeatRequest(
        group_id=group, member_id=member, generation_id=generation + generation_delta))


def leave(run: Run, group: str, member_id: str) -> Any:
    request = (LeaveGroupRequest(group_id=group, member_id=member_id) if run.version < 3
               else LeaveGroupRequest(group_id=group,
                                      members=(MemberIdentity(member_id=member_id),)))
    return run.generated(ApiKey.LEAVE_GROUP, request)


def left(body: Any, _run: Run) -> Meaning:
    """The member's error: top level before v3, per member from v3."""
    if hasattr(body, "members") and body.members:
        return code(body.error_code), [code(m.error_code) for m in body.members]
    return "NONE", [code(body.error_code)]


def member_leaves(run: Run) -> Any:
    group = group_of(run)
    _, member = stable_member(run, group)
    return leave(run, group, member)


def stranger_leaves(run: Run) -> Any:
    group = group_of(run)
    stable_member(run, group)
    return leave(run, group, "stranger")


# -- OffsetCommit / OffsetFetch / OffsetDelete -----------------------------------------------

def by_name_or_id(run: Run, topic: str) -> dict[str, Any]:
    """A topic by name, or from OffsetCommit/OffsetFetch v10 by id (a random one for a
    topic that is not)."""
    return {"name": topic} if run.version < FIRST_TOPIC_ID else {
        "topic_id": topic_id_of(run, topic)}


def commit(run: Run, group: str, *, offset: int = COMMITTED, metadata: str = "",
           generation: int = -1, member_id: str = "", topics: tuple[str, ...] = ()) -> Any:
    ready(run, group)
    request = oc.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
        topics=tuple(oc.OffsetCommitRequestTopic(**by_name_or_id(run, topic), partitions=(
            oc.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                         committed_metadata=metadata),))
            for topic in topics or (run.cluster.topic,)))
    return retried(lambda: run.generated(ApiKey.OFFSET_COMMIT, request), commit_errors)


def commit_stale_generation(run: Run) -> Any:
    group = group_of(run)
    generation, member = stable_member(run, group)
    return commit(run, group, generation=generation + 1, member_id=member)


def commit_errors(body: Any) -> list[str]:
    return [code(p.error_code) for t in body.topics for p in t.partitions]


def committed(body: Any, _run: Run) -> Meaning:
    return commit_errors(body)


def fetch_offsets(run: Run, group: str, *, all_topics: bool = False,
                  named: tuple[str, ...] = ()) -> Any:
    wanted = named or (run.cluster.topic,)
    if run.version < FIRST_BATCHED_FETCH:
        return run.generated(ApiKey.OFFSET_FETCH, of.OffsetFetchRequest(
            group_id=group, topics=None if all_topics else tuple(
                of.OffsetFetchRequestTopic(name=topic, partition_indexes=(0,))
                for topic in wanted)))
    return run.generated(ApiKey.OFFSET_FETCH, of.OffsetFetchRequest(groups=(
        of.OffsetFetchRequestGroup(group_id=group, topics=None if all_topics else tuple(
            of.OffsetFetchRequestTopics(**by_name_or_id(run, topic), partition_indexes=(0,))
            for topic in wanted)),)))


def fetched(body: Any, run: Run) -> Meaning:
    """(group error, [(partition error, offset)]) for either shape (the group error is
    NONE before v2, which had none)."""
    if run.version >= FIRST_BATCHED_FETCH:
        (group,) = body.groups
        error, topics = code(group.error_code), group.topics
    else:
        error, topics = code(body.error_code), body.topics
    return error, [(code(p.error_code), p.committed_offset)
                   for t in topics for p in t.partitions]


def commit_then_fetch(run: Run, *, all_topics: bool = False,
                      named: tuple[str, ...] = ()) -> Any:
    group = group_of(run)
    assert committed(commit(latest(run, ApiKey.OFFSET_COMMIT), group), run) == ["NONE"]
    return fetch_offsets(run, group, all_topics=all_topics, named=named)


def delete_offsets(run: Run, group: str) -> Any:
    return run.generated(ApiKey.OFFSET_DELETE, od.OffsetDeleteRequest(group_id=group, topics=(
        od.OffsetDeleteRequestTopic(name=run.cluster.topic, partitions=(
            od.OffsetDeleteRequestPartition(partition_index=0),)),)))


def offsets_deleted(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), [code(p.error_code) for t in body.topics
                                   for p in t.partitions]


def delete_subscribed_offsets(run: Run) -> Any:
    group = group_of(run)
    stable_member(run, group)
    return delete_offsets(run, group)


def committed_group(run: Run) -> str:
    group = group_of(run)
    assert committed(commit(latest(run, ApiKey.OFFSET_COMMIT), group), run) == ["NONE"]
    return group


# -- ListGroups / DescribeGroups / DeleteGroups ----------------------------------------------

def list_groups(run: Run) -> Any:
    group = group_of(run)
    stable_member(run, group)
    return run.generated(ApiKey.LIST_GROUPS, ListGroupsRequest()), group


def listed_group(answer: tuple[Any, str], run: Run) -> Meaning:
    """The group's protocol type and state (v4+; "Stable" before, which lists no state)."""
    body, group = answer
    mine = [(g.protocol_type, g.group_state if run.version >= FIRST_LISTED_STATE else "Stable")
            for g in body.groups if g.group_id == group]
    return code(body.error_code), mine


def describe(run: Run, group: str) -> Any:
    return run.generated(ApiKey.DESCRIBE_GROUPS, DescribeGroupsRequest(groups=(group,)))


def described(body: Any, _run: Run) -> Meaning:
    (group,) = body.groups
    return code(group.error_code), group.group_state, group.protocol_type, len(group.members)


def describe_stable(run: Run) -> Any:
    group = group_of(run)
    stable_member(run, group)
    return describe(run, group)


def delete_groups(run: Run, group: str) -> Any:
    """DeleteGroups of ``group`` once its coordinator is up (FindCoordinator creates the
    offsets topic: before it, Kafka and pykraft both answer NOT_COORDINATOR)."""
    ready(run, group)
    return retried(lambda: run.generated(ApiKey.DELETE_GROUPS,
                                         DeleteGroupsRequest(groups_names=(group,))),
                   lambda b: [code(r.error_code) for r in b.results])


def groups_deleted(body: Any, _run: Run) -> Meaning:
    """Each group's error and, from v3, its message (Kafka's is null but for its streams
    topology plugin's failures; decoded below v3 as the field's default, null)."""
    return [(code(r.error_code), r.error_message) for r in body.results]


def delete_live_group(run: Run) -> Any:
    group = group_of(run)
    stable_member(run, group)
    return delete_groups(run, group)


# -- ConsumerGroupHeartbeat / ConsumerGroupDescribe (KIP-848) ---------------------------------

def consumer_joins(run: Run) -> Any:
    """A member's first heartbeat (epoch 0) with the id it made itself (Kafka 4's clients)."""
    group = group_of(run)
    ready(run, group)
    return retried(lambda: run.generated(ApiKey.CONSUMER_GROUP_HEARTBEAT, (
        ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=f"{group}-member", member_epoch=0,
            rebalance_timeout_ms=SESSION_MS, subscribed_topic_names=(run.cluster.topic,),
            topic_partitions=()))), lambda b: [code(b.error_code)])


def consumer_joined(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), body.member_epoch >= 1, body.assignment is not None


def describe_consumer_group(run: Run, group: str | None = None) -> Any:
    """ConsumerGroupDescribe of ``group`` (a fresh id by default; the empty id is refused by
    any broker, coordinator or not)."""
    if group is None:
        group = group_of(run)
        ready(run, group)
    return retried(lambda: run.generated(ApiKey.CONSUMER_GROUP_DESCRIBE,
                                         ConsumerGroupDescribeRequest(group_ids=(group,))),
                   lambda b: [code(g.error_code) for g in b.groups])


GROUPS = [
    Case("FindCoordinator", 10, "group_key",
         lambda r: find_coordinator(r, [group_of(r)]), coordinators,
         lambda _r: [("NONE", True)]),
    Case("FindCoordinator", 10, "batched_group_keys",
         lambda r: find_coordinator(r, [group_of(r, "-a"), group_of(r, "-b")]), coordinators,
         lambda _r: [("NONE", True)] * 2, since=4),
    Case("JoinGroup", 11, "first_member_leads", lambda r: join(r, group_of(r)), joined,
         lambda _r: ("NONE", 1, True, 1, PROTOCOL)),
    Case("JoinGroup", 11, "member_id_required_kip_394",
         lambda r: join(r, group_of(r), first_call_only=True),
         lambda b, _r: (code(b.error_code), bool(b.member_id)),
         lambda _r: ("MEMBER_ID_REQUIRED", True), since=4),
    Case("JoinGroup", 11, "session_timeout_too_short",
         lambda r: join(r, group_of(r), session=1),
         join_error, lambda _r: "INVALID_SESSION_TIMEOUT"),
    Case("JoinGroup", 11, "unknown_member_id", lambda r: join(r, group_of(r), "stranger"),
         join_error, lambda _r: "UNKNOWN_MEMBER_ID"),
    Case("JoinGroup", 11, "empty_group_id", lambda r: join(r, ""), join_error,
         lambda _r: "INVALID_GROUP_ID"),
    Case("SyncGroup", 14, "leader_assignment", leader_syncs, synced,
         lambda _r: ("NONE", b"the-assignment")),
    Case("SyncGroup", 14, "wrong_generation", sync_wrong_generation, join_error,
         lambda _r: "ILLEGAL_GENERATION"),
    Case("Heartbeat", 12, "stable_member", heartbeat, join_error, lambda _r: "NONE"),
    Case("Heartbeat", 12, "wrong_generation", lambda r: heartbeat(r, 1), join_error,
         lambda _r: "ILLEGAL_GENERATION"),
    Case("LeaveGroup", 13, "member_leaves", member_leaves, left,
         lambda _r: ("NONE", ["NONE"])),
    Case("LeaveGroup", 13, "unknown_member", stranger_leaves, left,
         lambda _r: ("NONE", ["UNKNOWN_MEMBER_ID"])),
    Case("OffsetCommit", 8, "simple_commit_kafka_tools",
         lambda r: commit(r, group_of(r)), committed, lambda _r: ["NONE"]),
    Case("OffsetCommit", 8, "metadata_too_large",
         lambda r: commit(r, group_of(r), metadata="m" * 5000), committed,
         lambda _r: ["OFFSET_METADATA_TOO_LARGE"]),
    Case("OffsetCommit", 8, "unknown_topic",
         lambda r: commit(r, group_of(r), topics=(NO_SUCH_TOPIC,)), committed,
         lambda _r: ["UNKNOWN_TOPIC_OR_PARTITION"], until=FIRST_TOPIC_ID),
    # Kafka 4's OffsetCommitResponse.Builder: the refused partitions first, then the merge of
    # the coordinator's answer
    Case("OffsetCommit", 8, "known_then_unknown_topic",
         lambda r: commit(r, group_of(r), topics=(r.cluster.topic, NO_SUCH_TOPIC)), committed,
         lambda _r: ["UNKNOWN_TOPIC_OR_PARTITION", "NONE"], until=FIRST_TOPIC_ID),
    Case("OffsetCommit", 8, "unknown_topic_id",
         lambda r: commit(r, group_of(r), topics=(NO_SUCH_TOPIC,)), committed,
         lambda _r: ["UNKNOWN_TOPIC_ID"], since=FIRST_TOPIC_ID),
    # Kafka's builder answers the unknown id first, then merges the coordinator's answer
    Case("OffsetCommit", 8, "known_then_unknown_topic_id",
         lambda r: commit(r, group_of(r), topics=(r.cluster.topic, NO_SUCH_TOPIC)),
         committed, lambda _r: ["UNKNOWN_TOPIC_ID", "NONE"], since=FIRST_TOPIC_ID),
    Case("OffsetCommit", 8, "stale_generation_of_a_stable_group", commit_stale_generation,
         committed, lambda _r: ["ILLEGAL_GENERATION"]),
    Case("OffsetFetch", 9, "committed_offset", commit_then_fetch, fetched,
         lambda _r: ("NONE", [("NONE", COMMITTED)])),
    Case("OffsetFetch", 9, "all_topics_of_the_group",
         lambda r: commit_then_fetch(r, all_topics=True), fetched,
         lambda _r: ("NONE", [("NONE", COMMITTED)]), since=2),
    Case("OffsetFetch", 9, "unknown_group", lambda r: fetch_offsets(r, group_of(r)), fetched,
         lambda _r: ("NONE", [("NONE", -1)])),
    Case("OffsetFetch", 9, "unknown_then_known_topic_id",
         lambda r: commit_then_fetch(r, named=(NO_SUCH_TOPIC, r.cluster.topic)), fetched,
         lambda _r: ("NONE", [("NONE", COMMITTED), ("UNKNOWN_TOPIC_ID", -1)]),
         since=FIRST_TOPIC_ID),
    Case("ListGroups", 16, "lists_a_stable_group", list_groups, listed_group,
         lambda _r: ("NONE", [("consumer", "Stable")])),
    Case("DescribeGroups", 15, "unknown_group_is_dead",
         lambda r: describe(r, group_of(r)), described, lambda _r: ("NONE", "Dead", "", 0),
         until=6),
    # KIP-1043: from v6 an unknown group is an error, still described as Dead
    Case("DescribeGroups", 15, "unknown_group_not_found_kip_1043",
         lambda r: describe(r, group_of(r)), described,
         lambda _r: ("GROUP_ID_NOT_FOUND", "Dead", "", 0), since=6),
    Case("DescribeGroups", 15, "stable_group", describe_stable, described,
         lambda _r: ("NONE", "Stable", "consumer", 1)),
    Case("DeleteGroups", 42, "unknown_group", lambda r: delete_groups(r, group_of(r)),
         groups_deleted, lambda _r: [("GROUP_ID_NOT_FOUND", None)]),
    Case("DeleteGroups", 42, "empty_group_with_offsets",
         lambda r: delete_groups(r, committed_group(r)), groups_deleted,
         lambda _r: [("NONE", None)]),
    Case("DeleteGroups", 42, "group_with_members", delete_live_group, groups_deleted,
         lambda _r: [("NON_EMPTY_GROUP", None)]),
    Case("OffsetDelete", 47, "empty_group", lambda r: delete_offsets(r, committed_group(r)),
         offsets_deleted, lambda _r: ("NONE", ["NONE"])),
    Case("OffsetDelete", 47, "unknown_group", lambda r: delete_offsets(r, group_of(r)),
         offsets_deleted, lambda _r: ("GROUP_ID_NOT_FOUND", [])),
    Case("ConsumerGroupHeartbeat", 68, "first_heartbeat_joins", consumer_joins,
         consumer_joined, lambda _r: ("NONE", True, True)),
    Case("ConsumerGroupDescribe", 69, "unknown_group", describe_consumer_group,
         lambda b, _r: [code(g.error_code) for g in b.groups],
         lambda _r: ["GROUP_ID_NOT_FOUND"]),
    Case("ConsumerGroupDescribe", 69, "empty_group_id",
         lambda r: describe_consumer_group(r, ""),
         lambda b, _r: [(code(g.error_code), g.group_id, g.error_message) for g in b.groups],
         lambda _r: [("INVALID_GROUP_ID", "", None)]),
    Case("OffsetDelete", 47, "subscribed_topic", delete_subscribed_offsets,
         offsets_deleted, lambda _r: ("NONE", ["GROUP_SUBSCRIBED_TO_TOPIC"])),
]
