"""``pykraft consumer-groups``: Kafka's table layouts, the reset arithmetic, and each action
against a fake coordinator (answers built as the brokers' are, checked by attribute)."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.errors import UsageError
from pykraft.ids import TopicPartition as Tp
from pykraft.messages import encode
from pykraft.messages.kafka.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
    TopicPartition,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import ClusterMetadata, PartitionMetadata, TopicMetadata
from pykraft.tools.consumer_groups_report import (
    Coordinator,
    GroupDescription,
    Member,
    clamp,
    list_table,
    members_table,
    offset_rows,
    offsets_table,
    parse_datetime,
    shifted,
    state_table,
)
from pykraft.tools.consumer_groups_tool import GroupOptions, check_options, run
from pykraft.tools.group_admin import GroupClient

COORDINATOR = Coordinator(1, "localhost", 9092)
Ns = SimpleNamespace  # a broker's answer, read by attribute as the generated classes are


def _out(lines: list[tuple[str, str]]) -> list[str]:
    return [line for stream, line in lines if stream == "out"]


def _group(state: str = "Stable", *members: Member) -> GroupDescription:
    return GroupDescription("my-group", state, "range", members, COORDINATOR)


C1 = Member("consumer1-3fc8d6f1", None, "consumer1", "/127.0.0.1",
            (Tp("topic1", 0), Tp("topic2", 0)))
C2 = Member("consumer2-e76ea8c3", None, "consumer2", "/127.0.0.1", (Tp("topic3", 1),))
C3 = Member("consumer3-ecea43e4", None, "consumer3", "/127.0.0.1", ())


# -- tables ---------------------------------------------------------------------------------

def test_offsets_table_is_kafkas() -> None:
    group = _group("Stable", C2, C1, C3)
    committed = {Tp("topic1", 0): 5, Tp("topic2", 0): 7, Tp("topic3", 2): 1}
    ends = {Tp("topic1", 0): 9, Tp("topic3", 1): 4, Tp("topic3", 2): 3}
    rows = offset_rows(group, committed, ends)
    lines = offsets_table(group, rows)
    assert lines[0] == ("out", "")
    assert _out(lines)[1:] == [
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG     "
        "        CONSUMER-ID        HOST            CLIENT-ID",
        # the member with the most partitions first; "-" for what is unknown
        "my-group        topic1          0          5               9               4       "
        "        consumer1-3fc8d6f1 /127.0.0.1      consumer1",
        "my-group        topic2          0          7               -               -       "
        "        consumer1-3fc8d6f1 /127.0.0.1      consumer1",
        "my-group        topic3          1          -               4               -       "
        "        consumer2-e76ea8c3 /127.0.0.1      consumer2",
        # committed, held by no member
        "my-group        topic3          2          1               3               2       "
        "        -                  -               -",
    ]


def test_group_state_notices_go_to_stderr_and_dead_groups_print_no_table() -> None:
    empty = offsets_table(_group("Empty"), offset_rows(_group("Empty"), {Tp("t", 0): 1}, {}))
    assert empty[:2] == [("err", ""), ("err", "Consumer group 'my-group' has no active members.")]
    assert len(_out(empty)) == 3
    dead = offsets_table(_group("Dead"), [])
    assert dead == [("out", ""), ("out", "Error: Consumer group 'my-group' does not exist.")]
    rebalancing = offsets_table(_group("PreparingRebalance"), [])
    assert rebalancing == [
        ("err", ""), ("err", "Warning: Consumer group 'my-group' is rebalancing.")]


def test_members_table_plain_and_verbose() -> None:
    group = _group("Stable", C1, C3)
    assert _out(members_table(group, verbose=False)) == [
        "",
        "GROUP           CONSUMER-ID        HOST            CLIENT-ID       #PARTITIONS     ",
        "my-group        consumer1-3fc8d6f1 /127.0.0.1      consumer1       2               ",
        "my-group        consumer3-ecea43e4 /127.0.0.1      consumer3       0               ",
    ]
    verbose = _out(members_table(group, verbose=True))
    assert verbose[1].endswith("#PARTITIONS     ASSIGNMENT")
    assert verbose[2].endswith("2               topic1(0), topic2(0)")
    assert verbose[3].endswith("0               -")


def test_members_table_shows_instance_ids_when_any() -> None:
    static = Member("m-1", "instance-a", "c", "/10.0.0.1", (Tp("t", 0), Tp("t", 1)))
    lines = _out(members_table(_group("Stable", static), verbose=False))
    assert lines[1] == ("GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            "
                        "CLIENT-ID       #PARTITIONS     ")
    assert lines[2] == ("my-group        m-1             instance-a        /10.0.0.1       "
                        "c               2               ")


def test_state_table() -> None:
    assert _out(state_table(_group("Stable", C1, C2))) == [
        "",
        "GROUP                     COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE       "
        "    #MEMBERS",
        "my-group                  localhost:9092  (1)       range                Stable      "
        "    2",
    ]


def test_list_table() -> None:
    assert list_table({"b": "Empty", "a": "Stable"}, with_state=False) == [
        ("out", "a"), ("out", "b")]
    assert _out(list_table({"a": "Stable"}, with_state=True)) == [
        "GROUP" + " " * 20 + " STATE" + " " * 15,
        "a" + " " * 24 + " Stable" + " " * 14,
    ]


# -- reset arithmetic -----------------------------------------------------------------------

def test_clamp_keeps_offsets_within_the_log() -> None:
    assert clamp(50, 10, 40) == 40
    assert clamp(5, 10, 40) == 10
    assert clamp(20, 10, 40) == 20
    assert clamp(20, None, None) == 20


def test_shift_needs_a_committed_offset() -> None:
    assert shifted([Tp("t", 0)], {Tp("t", 0): 10}, -3) == {Tp("t", 0): 7}
    with pytest.raises(UsageError, match="Cannot shift offset for partition t-1 since there "
                                         "is no current committed offset"):
        shifted([Tp("t", 1)], {Tp("t", 0): 10}, 1)


def test_parse_datetime() -> None:
    assert parse_datetime("2024-01-02T03:04:05.678Z") == 1704164645678
    assert parse_datetime("2024-01-02T03:04:05.678+01:00") == 1704164645678 - 3_600_000
    utc = datetime.UTC
    assert parse_datetime("2024-01-02T03:04:05.678", local=utc) == 1704164645678
    with pytest.raises(UsageError, match="does not contain a 'T'"):
        parse_datetime("2024-01-02 03:04:05")
    with pytest.raises(UsageError, match="Unparseable date"):
        parse_datetime("2024-01-02T03:04")


# -- argument rules -------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "message"), [
    (GroupOptions(actions=()), "exactly one action"),
    (GroupOptions(actions=("list", "describe")), "exactly one action"),
    (GroupOptions(actions=("describe",)), "Option [describe] takes one of these options"),
    (GroupOptions(actions=("describe",), groups=("g",), members=True, state=True),
     "at most one of these options"),
    (GroupOptions(actions=("reset-offsets",), groups=("g",), all_topics=True),
     "requires one of the following scenarios"),
    (GroupOptions(actions=("reset-offsets",), groups=("g",),
                  scenarios=(("to-latest", None),)), "One of the reset scopes"),
    (GroupOptions(actions=("reset-offsets",), groups=("g",), all_topics=True, execute=True,
                  dry_run=True, scenarios=(("to-latest", None),)), "only accepts one of"),
    (GroupOptions(actions=("delete-offsets",), groups=("g",)), "[group], [topic]"),
])
def test_argument_rules(options: GroupOptions, message: str) -> None:
    with pytest.raises(UsageError) as info:
        check_options(options)
    assert message in str(info.value)


# -- actions against a fake coordinator -----------------------------------------------------

def _assignment(*tps: tuple[str, int]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in tps:
        by_topic.setdefault(topic, []).append(partition)
    body = ConsumerProtocolAssignment(tuple(
        TopicPartition(t, tuple(ps)) for t, ps in by_topic.items()))
    return b"\x00\x00" + encode(body, 0)


class FakeCluster:
    """One broker (id 1) that coordinates every group and leads topic ``t`` (3 partitions,
    log start 10, log end 40, offset 20 at timestamp 1000, nothing after it)."""

    def __init__(self, state: str = "Empty", unavailable_answers: int = 0) -> None:
        self.state = state
        self.committed: dict[tuple[str, int], int] = {("t", 0): 15, ("t", 1): 30}
        self.commits: list[Any] = []
        self.unavailable = unavailable_answers
        self.members = [Ns(member_id="m-1", group_instance_id=None, client_id="c",
                           client_host="/127.0.0.1", member_metadata=b"",
                           member_assignment=_assignment(("t", 0), ("t", 1)))]

    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMetadata:
        parts = tuple(PartitionMetadata(i, 1, 0, (1,), (1,), ()) for i in range(3))
        return ClusterMetadata("c", 1, {1: ("localhost", 9092)},
                               {"t": TopicMetadata("t", uuid.UUID(int=1), False, parts)})

    async def request_to(self, broker_id: int, body: Any) -> Any:
        name = type(body).__name__
        if name == "FindCoordinatorRequest":
            code = ErrorCode.NONE
            if self.unavailable:
                self.unavailable -= 1
                code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            return Ns(coordinators=(Ns(error_code=code, node_id=1, host="localhost", port=9092),))
        if name == "DescribeGroupsRequest" and self.state == "Unknown":
            return Ns(groups=(Ns(error_code=ErrorCode.GROUP_ID_NOT_FOUND, group_id=body.groups[0],
                                 group_state="", protocol_type="", protocol_data="",
                                 members=()),))
        if name == "DescribeGroupsRequest":
            members = () if self.state in ("Empty", "Dead") else tuple(self.members)
            return Ns(groups=(Ns(error_code=ErrorCode.NONE, group_id=body.groups[0],
                                 group_state=self.state, protocol_type="consumer",
                                 protocol_data="range", members=members),))
        if name == "OffsetFetchRequest":
            topics: dict[str, list[Any]] = {}
            for (topic, partition), offset in self.committed.items():
                topics.setdefault(topic, []).append(Ns(
                    partition_index=partition, committed_offset=offset,
                    error_code=ErrorCode.NONE))
            return Ns(groups=(Ns(error_code=ErrorCode.NONE, topics=tuple(
                Ns(name=t, partitions=tuple(ps)) for t, ps in topics.items())),))
        if name == "ListOffsetsRequest":
            return Ns(topics=tuple(Ns(name=t.name, partitions=tuple(
                Ns(partition_index=p.partition_index, error_code=ErrorCode.NONE,
                   offset=_log_offset(int(p.timestamp))) for p in t.partitions))
                for t in body.topics))
        if name == "OffsetCommitRequest":
            self.commits.append(body)
            return Ns(topics=tuple(Ns(name=t.name, partitions=tuple(
                Ns(partition_index=p.partition_index, error_code=ErrorCode.NONE)
                for p in t.partitions)) for t in body.topics))
        if name == "DeleteGroupsRequest":
            code = ErrorCode.NONE if self.state == "Empty" else ErrorCode.NON_EMPTY_GROUP
            return Ns(results=(Ns(group_id=body.groups_names[0], error_code=code),))
        if name == "OffsetDeleteRequest":
            return Ns(error_code=ErrorCode.NONE, topics=tuple(Ns(name=t.name, partitions=tuple(
                Ns(partition_index=p.partition_index,
                   error_code=ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if p.partition_index == 1
                   else ErrorCode.NONE) for p in t.partitions)) for t in body.topics))
        if name == "ListGroupsRequest":
            return Ns(error_code=ErrorCode.NONE, groups=(
                Ns(group_id="g", protocol_type="consumer", group_state=self.state),
                Ns(group_id="connect-x", protocol_type="connect", group_state="Stable")))
        raise AssertionError(name)


def _log_offset(timestamp: int) -> int:
    """Topic ``t``'s offset for a ListOffsets timestamp (earliest, latest or a time)."""
    return {-2: 10, -1: 40}.get(timestamp, 20 if timestamp <= 1000 else -1)


def _run(cluster: FakeCluster, options: GroupOptions) -> tuple[int, list[tuple[str, str]]]:
    lines: list[tuple[str, str]] = []
    status = asyncio.run(run(GroupClient(cluster, timeout_s=5), options,
                             lambda stream, line: lines.append((stream, line))))
    return status, lines


def _reset(scenario: str, value: str | None = None, **kw: Any) -> GroupOptions:
    return GroupOptions(actions=("reset-offsets",), groups=("g",),
                        scenarios=((scenario, value),), **{"all_topics": True, **kw})


def test_reset_dry_run_prints_the_plan_and_commits_nothing() -> None:
    cluster = FakeCluster()
    status, lines = _run(cluster, _reset("to-earliest"))
    assert status == 0 and cluster.commits == []
    assert lines[0][0] == "err" and "--execute option is missing" in lines[0][1]
    assert _out(lines) == [
        "",
        "GROUP           TOPIC           PARTITION  NEW-OFFSET",
        "g               t               0          10",
        "g               t               1          10",
    ]


def test_reset_execute_commits_as_a_standalone_member() -> None:
    cluster = FakeCluster()
    status, _ = _run(cluster, _reset("shift-by", "-10", execute=True))
    assert status == 0
    (commit,) = cluster.commits
    assert commit.generation_id_or_member_epoch == -1 and commit.member_id == ""
    # 15-10 is below the log start (10): clamped; 30-10 kept
    assert [(p.partition_index, p.committed_offset) for p in commit.topics[0].partitions] == [
        (0, 10), (1, 20)]


def test_reset_to_offset_and_to_datetime_over_named_partitions() -> None:
    cluster = FakeCluster()
    _, lines = _run(cluster, _reset("to-offset", "99", all_topics=False, topics=("t:0,2",)))
    assert _out(lines)[2:] == ["g               t               0          40",
                               "g               t               2          40"]
    _, lines = _run(cluster, _reset("to-datetime", "1970-01-01T00:00:01.000Z",
                                    all_topics=False, topics=("t:1",)))
    assert _out(lines)[-1] == "g               t               1          20"
    _, lines = _run(cluster, _reset("to-datetime", "1970-01-01T00:00:02.000Z",
                                    all_topics=False, topics=("t:1",)))
    assert "Warn: Partition 1 from topic t is empty. Falling back to latest known offset." in (
        _out(lines))
    assert _out(lines)[-1] == "g               t               1          40"


def test_reset_refuses_an_active_group() -> None:
    cluster = FakeCluster(state="Stable")
    status, lines = _run(cluster, _reset("to-latest", execute=True))
    assert status == 1 and cluster.commits == []
    assert _out(lines) == [
        "", "Error: Assignments can only be reset if the group 'g' is inactive, but the "
        "current state is Stable.",
        "", "GROUP           TOPIC           PARTITION  NEW-OFFSET"]


def test_describe_reads_the_assignment_and_offsets() -> None:
    cluster = FakeCluster(state="Stable")
    status, lines = _run(cluster, GroupOptions(actions=("describe",), groups=("g",)))
    assert status == 0
    rows = _out(lines)[2:]
    assert [row.split()[:6] for row in rows] == [["g", "t", "0", "15", "40", "25"],
                                                 ["g", "t", "1", "30", "40", "10"]]
    assert all(row.split()[6:] == ["m-1", "/127.0.0.1", "c"] for row in rows)


def test_coordinator_not_available_is_waited_out() -> None:
    cluster = FakeCluster(state="Stable", unavailable_answers=2)
    status, lines = _run(cluster, GroupOptions(actions=("describe",), groups=("g",),
                                               state=True))
    assert status == 0
    assert _out(lines)[2].startswith("g                         localhost:9092  (1)")


@pytest.mark.parametrize("state", ["Dead", "Unknown"])
def test_describing_an_unknown_group(state: str) -> None:
    """Kafka's coordinator answers Dead (or GROUP_ID_NOT_FOUND): the group does not exist."""
    for members, show_state in ((False, False), (True, False), (False, True)):
        status, lines = _run(FakeCluster(state), GroupOptions(
            actions=("describe",), groups=("g",), members=members, state=show_state))
        assert status == 1
        assert _out(lines)[:2] == ["", "Error: Consumer group 'g' does not exist."]


def test_list_keeps_consumer_groups() -> None:
    _, lines = _run(FakeCluster(), GroupOptions(actions=("list",)))
    assert _out(lines) == ["g"]


def test_delete_reports_each_group() -> None:
    _, lines = _run(FakeCluster(), GroupOptions(actions=("delete",), groups=("g",)))
    assert _out(lines) == ["Deletion of requested consumer groups ('g') was successful."]
    status, lines = _run(FakeCluster("Stable"), GroupOptions(actions=("delete",), groups=("g",)))
    assert status == 1
    assert _out(lines) == [
        "", "Error: Deletion of some consumer groups failed:",
        "* Group 'g' could not be deleted due to: java.util.concurrent.ExecutionException: "
        "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty."]


def test_delete_offsets_reports_each_partition() -> None:
    status, lines = _run(FakeCluster(), GroupOptions(actions=("delete-offsets",), groups=("g",),
                                                     topics=("t:0,1",)))
    assert status == 1
    assert _out(lines) == [
        "", "Error: Encounter some partition level error, see the follow-up details:",
        "", "TOPIC                          PARTITION       STATUS",
        "t                              0               Successful",
        "t                              1               Error: :org.apache.kafka.common.errors."
        "GroupSubscribedToTopicException: The consumer group is actively subscribed to the "
        "topic",
    ]


# -- the command line -----------------------------------------------------------------------

def test_help_and_usage_errors_need_no_cluster() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["consumer-groups", "--help"])
    assert result.exit_code == 0 and "--reset-offsets" in result.output
    result = runner.invoke(app, ["consumer-groups", "--bootstrap-server", "localhost:1",
                                 "--describe"])
    assert result.exit_code == 1
    assert "Option [describe] takes one of these options" in result.output
