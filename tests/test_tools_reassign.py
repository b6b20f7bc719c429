"""``pykraft reassign-partitions``' pure half and usage checks: its JSON files and refusals,
the throttles a move sets, and the lines it prints, as Kafka 4.4's
ReassignPartitionsCommand (its strings read from kafka-tools-4.4.0.jar)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.ids import TopicPartition
from pykraft.tools.reassign_moves import LogDirs, active_moves, move_lines
from pykraft.tools.reassign_plan import (
    Move,
    Ongoing,
    PartitionState,
    ReassignError,
    follower_throttles,
    leader_throttles,
    ongoing_lines,
    parse_broker_list,
    parse_execute,
    parse_reassignment,
    parse_topics,
    proposed_moves,
    reassigning_brokers,
    reassignment_json,
    status_lines,
)

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_the_json_is_jacksons_compact_form_sorted_by_partition() -> None:
    text = reassignment_json({B0: [3], A1: [1, 2], A0: [2]}, {("a", 1, 2): "/d"})
    assert text == ('{"version":1,"partitions":['
                    '{"topic":"a","partition":0,"replicas":[2],"log_dirs":["any"]},'
                    '{"topic":"a","partition":1,"replicas":[1,2],"log_dirs":["any","/d"]},'
                    '{"topic":"b","partition":0,"replicas":[3],"log_dirs":["any"]}]}')


@given(st.dictionaries(st.tuples(st.sampled_from("abc"), st.integers(0, 5)),
                       st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True),
                       max_size=6))
def test_what_is_written_reads_back(assignment: dict[tuple[str, int], list[int]]) -> None:
    parts = {TopicPartition(*tp): replicas for tp, replicas in assignment.items()}
    parsed, dirs = parse_reassignment(reassignment_json(parts, {}))
    assert dict(parsed) == parts and dirs == {}


def test_parsing_keeps_the_log_dirs_named_and_defaults_to_any() -> None:
    parts, dirs = parse_reassignment(json.dumps({"partitions": [
        {"topic": "a", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "/x"]},
        {"topic": "b", "partition": 0, "replicas": [3]}]}))
    assert parts == [(A0, [1, 2]), (B0, [3])]
    assert dirs == {("a", 0, 2): "/x"}


@pytest.mark.parametrize(("document", "message"), [
    ("{", "The input string is not a valid JSON"),
    ('{"version": 2, "partitions": []}', "Not supported version field value 2"),
    ('{"partitions": [{"partition": 0, "replicas": [1]}]}', "No such field exists: `topic`"),
    ('{"partitions": [{"topic": "a", "partition": 0, "replicas": [1], "log_dirs": []}]}',
     "Size of replicas list [1] is different from size of log dirs list [] for partition "
     "a-0"),
    ('{"partitions": []}', "Partition reassignment list cannot be empty"),
    ('{"partitions": [{"topic": "a", "partition": 0, "replicas": []}]}',
     "Partition replica list cannot be empty"),
    ('{"partitions": [{"topic": "a", "partition": 0, "replicas": [1]},'
     ' {"topic": "a", "partition": 0, "replicas": [2]}]}',
     "Partition reassignment contains duplicate topic partitions: a-0"),
    ('{"partitions": [{"topic": "a", "partition": 0, "replicas": [1, 1, 2, 2]}]}',
     "Partition replica lists may not contain duplicate entries: a-0 contains multiple "
     "entries for 1,2"),
])
def test_execute_refuses_bad_files(document: str, message: str) -> None:
    with pytest.raises(ReassignError) as refused:
        parse_execute(document)
    assert str(refused.value).startswith(message)


def test_topics_and_broker_lists() -> None:
    assert parse_topics('{"topics": [{"topic": "a"}, {"topic": "b"}], "version": 1}') == [
        "a", "b"]
    assert parse_broker_list("3,1,2") == [3, 1, 2]
    with pytest.raises(ReassignError, match=r"Broker list contains duplicate entries: \[1\]"):
        parse_broker_list("1,2,1")


def test_a_move_throttles_its_sources_on_the_leader_side_and_new_replicas_on_the_follower(
        ) -> None:
    moves = proposed_moves({}, {A0: [2, 3, 4], A1: [1, 2]}, {A0: [1, 2, 3], A1: [1, 2]})
    assert moves == {"a": {0: Move(frozenset({1, 2, 3}), frozenset({4})),
                           1: Move(frozenset({1, 2}), frozenset())}}
    assert leader_throttles(moves) == {"a": "0:1,0:2,0:3,1:1,1:2"}
    assert follower_throttles(moves) == {"a": "0:4"}
    assert reassigning_brokers(moves) == [1, 2, 3, 4]


def test_an_ongoing_reassignment_keeps_its_sources() -> None:
    ongoing = {A0: Ongoing((4, 2, 3, 1), adding=(4,), removing=(1,)),
               B0: Ongoing((5, 6), adding=(6,), removing=())}
    moves = proposed_moves(ongoing, {A0: [2, 3, 5]}, {A0: (4, 2, 3, 1)})
    assert moves["a"][0] == Move(frozenset({1, 2, 3}), frozenset({5}))
    assert moves["b"][0] == Move(frozenset({5}), frozenset({6}))


def test_the_lines_printed() -> None:
    assert status_lines({
        A1: PartitionState((1, 2), (1, 2), done=True),
        A0: PartitionState((1, 2, 3), (2, 3, 4), done=False),
        B0: PartitionState((1,), (2,), done=True)}) == [
        "Status of partition reassignment:",
        "Reassignment of partition a-0 is still in progress.",
        "Reassignment of partition a-1 is completed.",
        "There is no active reassignment of partition b-0, but replica set is 1 rather "
        "than 2."]
    assert ongoing_lines({}) == ["No partition reassignments found."]
    assert ongoing_lines({A0: Ongoing((2, 3, 4, 1), (4,), (1,)), B0: Ongoing((1,), (), ())}) == [
        "Current partition reassignments:",
        "a-0: replicas: 2,3,4,1. adding: 4. removing: 1.",
        "b-0: replicas: 1."]


def test_the_log_dir_moves_reported() -> None:
    """Kafka's findLogDirMoveStates and replicaMoveStatesToString, by broker then topic
    and partition; a move is ongoing while a future log exists."""
    targets = {("a", 0, 2): "/x", ("a", 1, 1): "/x", ("b", 0, 1): "/x", ("a", 0, 1): "/x",
               ("c", 0, 1): "/x", ("d", 0, 3): "/x"}
    where = {("a", 0, 2): LogDirs("/y", "/x"), ("a", 1, 1): LogDirs("/y", "/z"),
             ("b", 0, 1): LogDirs("/x"), ("a", 0, 1): LogDirs("/y"), ("c", 0, 1): LogDirs()}
    assert move_lines(targets, where) == ([
        "Partition a-0 on broker 1 is not being moved from log dir /y to /x.",
        "Partition a-1 on broker 1 is being moved to log dir /z instead of /x.",
        "Reassignment of replica b-0-1 completed successfully.",
        "Partition c-0 is not found in any live log dir on broker 1. There is likely an "
        "offline log directory on the broker.",
        "Reassignment of replica a-0-2 is still in progress.",
        "Partition d-0 cannot be found in any live log directory on broker 3."], True)
    assert move_lines({("b", 0, 1): "/x"}, where) == (
        ["Reassignment of replica b-0-1 completed successfully."], False)
    assert active_moves(targets, where) == {("a", 0, 2): "/y", ("a", 1, 1): "/y"}


@pytest.mark.parametrize(("args", "message"), [
    (["--list", "--verify"], "Command must include exactly one action: --generate, "
     "--execute, --verify, --cancel, --list"),
    (["--list"], "Please specify either --bootstrap-server or --bootstrap-controller"),
    (["--bootstrap-server", "h:1", "--verify"], 'Missing required argument '
     '"[reassignment-json-file]"'),
    (["--bootstrap-server", "h:1", "--list", "--throttle", "5"],
     'Option "[throttle]" can\'t be used with action "[list]"'),
])
def test_usage_errors(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["reassign-partitions", *args])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == message
