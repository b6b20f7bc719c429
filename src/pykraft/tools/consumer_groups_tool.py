"""``pykraft consumer-groups``: Kafka's ``kafka-consumer-groups.sh`` (ConsumerGroupCommand).

Interface (the CLI in :mod:`pykraft.cli.consumer_groups` is a thin shell over it)::

    options = GroupOptions(action="describe", groups=("g",), members=True)
    check_options(options)                          # Kafka's argument rules, or UsageError
    async with BrokerClients(admin_settings(bootstrap)) as brokers:
        status = await run(GroupClient(brokers), options, emit)   # emit(stream, line)

Actions as Kafka's: ``--list`` (``--state`` adds the state column), ``--describe`` of
``--group``s or ``--all-groups`` (offsets by default, or ``--members [--verbose]`` or
``--state``), ``--delete``, ``--reset-offsets`` (``--to-earliest``, ``--to-latest``,
``--to-offset``, ``--to-datetime``, ``--shift-by`` over ``--topic t[:p,...]`` or
``--all-topics``; a dry run unless ``--execute``; only groups with no members) and
``--delete-offsets``. The exit status is 1 when an error was printed (Kafka's tool exits 0
after printing some of them; scripts are better served this way).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pykraft.errors import UsageError
from pykraft.ids import TopicPartition
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import ApiError
from pykraft.tools.broker_clients import tp_name
from pykraft.tools.consumer_groups_report import (
    GroupDescription,
    Line,
    OffsetRow,
    clamp,
    delete_offsets_table,
    list_table,
    members_table,
    offset_rows,
    offsets_table,
    parse_datetime,
    reset_table,
    shifted,
    state_table,
)
from pykraft.tools.get_offsets_tool import EARLIEST, LATEST
from pykraft.tools.group_admin import GroupClient, exception_text

ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
SCENARIOS = ("to-datetime", "to-earliest", "to-latest", "shift-by", "to-offset")
Emit = Callable[[str, str], None]
_INACTIVE = ("Empty", "Dead")
_DRY_RUN_WARNING = (
    "WARN: No action will be performed as the --execute option is missing.In a future major "
    "release, the default behavior of this command will be to prompt the user before "
    "executing the reset rather than doing a dry run. You should add the --dry-run option "
    "explicitly if you are scripting this command and want to keep the current default "
    "behavior without prompting.")
_DELETE_OFFSETS_ERRORS = {
    ErrorCode.INVALID_GROUP_ID: "'{g}' is not valid.",
    ErrorCode.GROUP_ID_NOT_FOUND: "'{g}' does not exist.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Access to '{g}' is not authorized.",
    ErrorCode.NON_EMPTY_GROUP:
        "Deleting offsets of a consumer group '{g}' is forbidden if the group is not empty.",
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC:
        "Encounter some partition level error, see the follow-up details:",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED:
        "Encounter some partition level error, see the follow-up details:",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        "Encounter some partition level error, see the follow-up details:",
}


@dataclass(frozen=True, slots=True)
class GroupOptions:
    """The command line, as ConsumerGroupCommandOptions holds it."""

    actions: tuple[str, ...]
    groups: tuple[str, ...] = ()
    all_groups: bool = False
    members: bool = False
    state: bool = False
    offsets: bool = False
    verbose: bool = False
    topics: tuple[str, ...] = ()
    all_topics: bool = False
    scenarios: tuple[tuple[str, str | None], ...] = ()  # (name, value)
    execute: bool = False
    dry_run: bool = False

    @property
    def action(self) -> str:
        return self.actions[0]


def _error(message: str) -> list[Line]:
    """Kafka's ``printError``: a blank line, then ``Error: <message>`` on stdout."""
    return [("out", ""), ("out", f"Error: {message}")]


def check_options(options: GroupOptions) -> list[Line]:
    """Kafka's argument rules (UsageError); the warnings they print."""
    if len(options.actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, "
                         "--delete, --reset-offsets, --delete-offsets")
    action = options.action
    selects = options.groups or options.all_groups
    if action in ("describe", "delete", "reset-offsets") and not selects:
        raise UsageError(f"Option [{action}] takes one of these options: [all-groups], [group]")
    if action == "describe" and sum((options.members, options.offsets, options.state)) > 1:
        raise UsageError("Option [describe] takes at most one of these options: [members], "
                         "[offsets], [state]")
    if action == "delete" and options.topics:
        raise UsageError("The consumer does not support topic-specific offset deletion from a "
                         "consumer group.")
    if action == "delete-offsets" and (len(options.groups) != 1 or not options.topics):
        raise UsageError("Option [delete-offsets] takes the following options: [group], [topic]")
    if action != "reset-offsets":
        return []
    if options.execute and options.dry_run:
        raise UsageError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
    if len(options.scenarios) != 1:
        raise UsageError("Option '[reset-offsets]' requires one of the following scenarios: "
                         + ", ".join(f"[{s}]" for s in SCENARIOS))
    if not options.all_topics and not options.topics:
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    return [] if options.execute or options.dry_run else [("err", _DRY_RUN_WARNING)]


def parse_topic_arg(arg: str) -> tuple[str, list[int] | None]:
    """``topic`` (every partition) or ``topic:0,1`` (Kafka's parseTopicsWithPartitions)."""
    if ":" not in arg:
        return arg, None
    parts = arg.split(":")
    if len(parts) != 2:
        raise UsageError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    partitions = []
    for text in parts[1].split(","):
        try:
            partitions.append(int(text))
        except ValueError:
            raise UsageError(
                f"Invalid partition '{text}' specified in topic arg '{arg}''") from None
    return parts[0], partitions


async def _partitions(client: GroupClient, args: Iterable[str]) -> list[TopicPartition]:
    named: list[TopicPartition] = []
    whole: list[str] = []
    for arg in args:
        topic, partitions = parse_topic_arg(arg)
        if partitions is None:
            whole.append(topic)
        else:
            named += [TopicPartition(topic, p) for p in partitions]
    return named + (await client.topic_partitions(whole) if whole else [])


async def _groups(client: GroupClient, options: GroupOptions) -> list[str]:
    return sorted(await client.list_groups()) if options.all_groups else sorted(options.groups)


async def describe_lines(client: GroupClient, options: GroupOptions,
                         description: GroupDescription) -> list[Line]:
    """One group's ``--describe`` output for the chosen view."""
    if options.members:
        return members_table(description, options.verbose)
    if options.state:
        return state_table(description)
    dead = description.state == "Dead"  # nothing to look up; Kafka prints only the error
    return offsets_table(description, [] if dead else await group_offsets(client, description))


async def group_offsets(client: GroupClient, description: GroupDescription) -> list[OffsetRow]:
    """The offset rows of a group: committed offsets and log end offsets of every partition
    a member holds or the group committed."""
    committed = await client.committed_offsets(description.group_id)
    held = {tp for m in description.members for tp in m.assignment}
    ends = await client.log_offsets(held | set(committed), LATEST)
    return offset_rows(description, committed, ends)


async def reset_plan(client: GroupClient, options: GroupOptions, group: str,
                     warn: list[Line]) -> dict[TopicPartition, int]:
    """The new offsets of ``group``'s partitions in scope under the chosen scenario (the
    warnings Kafka prints on the way go to ``warn``)."""
    committed = await client.committed_offsets(group)
    tps = sorted(committed) if options.all_topics else await _partitions(client, options.topics)
    scenario, value = options.scenarios[0]
    if scenario in ("to-earliest", "to-latest"):
        found = await client.log_offsets(tps, EARLIEST if scenario == "to-earliest" else LATEST)
        which = "starting" if scenario == "to-earliest" else "ending"
        return {tp: _found(found, tp, f"Error getting {which} offset of topic partition")
                for tp in tps}
    if scenario == "to-datetime":
        at = await client.log_offsets(tps, parse_datetime(value or ""))
        empty = [tp for tp in tps if at.get(tp) == -1]
        for topic, partition in empty:
            warn += [("out", ""), ("out", f"Warn: Partition {partition} from topic {topic} is "
                                          "empty. Falling back to latest known offset.")]
        at.update(await client.log_offsets(empty, LATEST))
        return {tp: _found(at, tp, "Error getting offset by timestamp of topic partition")
                for tp in tps}
    number = _long(scenario, value)
    requested = shifted(tps, committed, number) if scenario == "shift-by" else {
        tp: number for tp in tps}
    earliest = await client.log_offsets(tps, EARLIEST)
    latest = await client.log_offsets(tps, LATEST)
    return {tp: clamp(offset, earliest.get(tp), latest.get(tp))
            for tp, offset in requested.items()}


def _found(offsets: Mapping[TopicPartition, int], tp: TopicPartition, error: str) -> int:
    if tp not in offsets:
        raise UsageError(f"{error}: {tp_name(tp)}")
    return offsets[tp]


def _long(scenario: str, value: str | None) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise UsageError(f"Cannot parse argument '{value}' of option [{scenario}]") from None


async def run(client: GroupClient, options: GroupOptions, emit: Emit) -> int:
    """Carry out the action, emitting Kafka's output; the exit status."""
    lines = check_options(options)
    action = options.action
    if action == "list":
        lines += list_table(await client.list_groups(), options.state)
    elif action == "describe":
        for group in await _groups(client, options):
            lines += await describe_lines(client, options, await client.describe(group))
    elif action == "delete":
        lines += delete_lines(await client.delete_groups(await _groups(client, options)))
    elif action == "reset-offsets":
        plan: dict[str, dict[TopicPartition, int]] = {}
        for group in await _groups(client, options):
            state = (await client.describe(group)).state
            if state not in _INACTIVE:
                lines += _error(f"Assignments can only be reset if the group '{group}' is "
                                f"inactive, but the current state is {state}.")
                plan[group] = {}
                continue
            plan[group] = await reset_plan(client, options, group, lines)
            if options.execute:
                await client.commit_offsets(group, plan[group])
        lines += reset_table(plan)
    else:
        lines += await delete_offsets_lines(client, options.groups[0], options.topics)
    for stream, line in lines:
        emit(stream, line)
    return 1 if any(line.startswith("Error: ") for _, line in lines) else 0


def delete_lines(results: Mapping[str, int]) -> list[Line]:
    """``--delete``'s report of each group's DeleteGroups error code."""
    ok = [g for g, code in results.items() if code == ErrorCode.NONE]
    failed = {g: code for g, code in results.items() if code != ErrorCode.NONE}
    if not failed:
        return [("out", f"Deletion of requested consumer groups ('{', '.join(ok)}') was "
                        "successful.")]
    lines = _error("Deletion of some consumer groups failed:")
    lines += [("out", f"* Group '{g}' could not be deleted due to: "
                      f"java.util.concurrent.ExecutionException: {exception_text(code)}")
              for g, code in failed.items()]
    if ok:
        quoted = ", ".join(f"'{g}'" for g in ok)
        lines += [("out", ""),
                  ("out", f"These consumer groups were deleted successfully: {quoted}")]
    return lines


async def delete_offsets_lines(client: GroupClient, group: str,
                               topics: Iterable[str]) -> list[Line]:
    """``--delete-offsets``: the outcome line, then a status per partition."""
    named: list[TopicPartition] = []
    results: dict[TopicPartition, str | None] = {}
    for arg in topics:
        topic, partitions = parse_topic_arg(arg)
        if partitions is not None:
            named += [TopicPartition(topic, p) for p in partitions]
            continue
        try:
            named += await client.topic_partitions([topic])
        except ApiError as exc:  # Kafka reports a topic it cannot describe as partition -1
            results[TopicPartition(topic, -1)] = exception_text(exc.error)
    top, per = await client.delete_offsets(group, named)
    for tp, code in per.items():
        results[tp] = None if code == ErrorCode.NONE else exception_text(code)
    if top == ErrorCode.NONE:
        lines: list[Line] = [("out", f"Request succeed for deleting offsets with topic "
                                     f"{', '.join(topics)} group {group}")]
    else:
        known = _DELETE_OFFSETS_ERRORS.get(ErrorCode(top))
        lines = _error(known.format(g=group) if known else
                       f"Encounter some unknown error: {ErrorCode(top).name}")
    return lines + delete_offsets_table(results)


async def describe_json(client: GroupClient, options: GroupOptions) -> list[dict[str, object]]:
    """``--describe --json`` (pykraft's addition): each group's state, coordinator, members
    and offset rows, for machines."""
    out: list[dict[str, object]] = []
    for group in await _groups(client, options):
        d = await client.describe(group)
        rows = [] if d.state == "Dead" else await group_offsets(client, d)
        out.append({
            "group": group, "state": d.state, "assignmentStrategy": d.assignor,
            "coordinator": {"id": d.coordinator.node_id, "host": d.coordinator.host,
                            "port": d.coordinator.port},
            "members": [{"consumerId": m.member_id, "groupInstanceId": m.group_instance_id,
                         "clientId": m.client_id, "host": m.host,
                         "assignment": [{"topic": t, "partition": p} for t, p in m.assignment]}
                        for m in d.members],
            "offsets": [{"topic": r.topic, "partition": r.partition, "currentOffset": r.offset,
                         "logEndOffset": r.log_end_offset, "lag": r.lag,
                         "consumerId": r.consumer_id, "host": r.host, "clientId": r.client_id}
                        for r in rows],
        })
    return out
