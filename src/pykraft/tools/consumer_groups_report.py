"""What ``pykraft consumer-groups`` prints, and the offsets ``--reset-offsets`` picks: pure
functions over what the brokers answered, laid out as Kafka's ``ConsumerGroupCommand``
lays them out (``%-Ns`` columns at least 15 wide, ``-`` for a missing value, a blank line
before each table), so scripts written against ``kafka-consumer-groups.sh`` read them.

Each printer returns ``(stream, line)`` pairs, ``stream`` being ``"out"`` or ``"err"``:
Kafka writes its notices about group state to stderr and its tables to stdout.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pykraft.errors import UsageError
from pykraft.ids import TopicPartition
from pykraft.tools.broker_clients import tp_name

MISSING = "-"
Line = tuple[str, str]

_REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")



@dataclass(frozen=True, slots=True)
class Member:
    """A member as DescribeGroups reports it, its assignment decoded."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class Coordinator:
    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        """Kafka's ``host:port  (id)`` (two spaces, as its Java tool prints)."""
        return f"{self.host}:{self.port}  ({self.node_id})"


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """DescribeGroups' answer for one consumer group (an unknown group is ``Dead``)."""

    group_id: str
    state: str
    assignor: str
    members: tuple[Member, ...]
    coordinator: Coordinator


@dataclass(frozen=True, slots=True)
class OffsetRow:
    """One line of ``--describe --offsets``; None prints as ``-``."""

    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    log_end_offset: int | None
    consumer_id: str
    host: str
    client_id: str

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset == -1 or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.offset


def _cell(value: object) -> str:
    return MISSING if value is None else str(value)


def offset_rows(
    group: GroupDescription,
    committed: Mapping[TopicPartition, int],
    log_end: Mapping[TopicPartition, int],
) -> list[OffsetRow]:
    """Kafka's ``collectGroupsOffsets``: the partitions of each member with any (members
    with the most partitions first), then committed partitions no member holds."""

    def rows(tps: Iterable[TopicPartition], member: Member | None) -> list[OffsetRow]:
        return [
            OffsetRow(
                group.group_id, topic, partition, committed.get(TopicPartition(topic, partition)),
                log_end.get(TopicPartition(topic, partition)),
                member.member_id if member else MISSING, member.host if member else MISSING,
                member.client_id if member else MISSING,
            )
            for topic, partition in sorted(tps)
        ]

    out: list[OffsetRow] = []
    assigned: set[TopicPartition] = set()
    holders = [m for m in group.members if m.assignment]
    for member in sorted(holders, key=lambda m: -len(set(m.assignment))):
        assigned.update(member.assignment)
        out += rows(set(member.assignment), member)
    return out + rows(set(committed) - assigned, None)


def state_notice(group_id: str, state: str, rows: int) -> tuple[list[Line], bool]:
    """Kafka's ``shouldPrintMemberState``: what it says of the group's state, and whether
    the group's table follows."""
    if state == "Dead":
        return [("out", ""), ("out", f"Error: Consumer group '{group_id}' does not exist.")], False
    if state == "Empty":
        return [("err", ""), ("err", f"Consumer group '{group_id}' has no active members.")], (
            rows > 0
        )
    if state in _REBALANCING:
        return [("err", ""), ("err", f"Warning: Consumer group '{group_id}' is rebalancing.")], (
            rows > 0
        )
    if state == "Stable":
        return [], rows > 0
    raise UsageError(f"Expected a valid consumer group state, but found '{state}'.")


def offsets_table(group: GroupDescription, rows: list[OffsetRow]) -> list[Line]:
    """``--describe`` / ``--describe --offsets`` for one group."""
    lines, show = state_notice(group.group_id, group.state, len(rows))
    if not show:
        return lines
    g = max([15, *(len(r.group) for r in rows)])
    t = max([15, *(len(_cell(r.topic)) for r in rows)])
    c = max([15, *(len(r.consumer_id) for r in rows)])
    h = max([15, *(len(r.host) for r in rows)])

    def line(*cells: str) -> Line:
        group_, topic, partition, offset, end, lag, consumer, host, client = cells
        return ("out", f"{group_:<{g}} {topic:<{t}} {partition:<10} {offset:<15} {end:<15} "
                f"{lag:<15} {consumer:<{c}} {host:<{h}} {client}")

    lines += [("out", ""), line("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")]
    for r in rows:
        lines.append(line(r.group, _cell(r.topic), _cell(r.partition), _cell(r.offset),
                          _cell(r.log_end_offset), _cell(r.lag), r.consumer_id, r.host,
                          r.client_id))
    return lines


def assignment_text(assignment: Iterable[TopicPartition]) -> str:
    """``--members --verbose``'s ASSIGNMENT: ``topic(0,1), other(2)``, or ``-``."""
    by_topic: dict[str, list[str]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(str(partition))
    if not by_topic:
        return MISSING
    return ", ".join(sorted(f"{t}({','.join(sorted(ps))})" for t, ps in by_topic.items()))


def members_table(group: GroupDescription, verbose: bool) -> list[Line]:
    """``--describe --members [--verbose]`` for one group (Kafka prints the header even
    when the group is gone)."""
    lines, show = state_notice(group.group_id, group.state, len(group.members))
    g, c, i, h, cl = 15, 15, 17, 15, 15
    with_instance = False
    if show:
        for m in group.members:
            g, c = max(g, len(group.group_id)), max(c, len(m.member_id))
            i, h = max(i, len(m.group_instance_id or "")), max(h, len(m.host))
            cl = max(cl, len(m.client_id))
            with_instance = with_instance or bool(m.group_instance_id)

    def line(group_id: str, member: str, instance: str, host: str, client: str,
             count: str, tail: str) -> Line:
        middle = f"{instance:<{i}} " if with_instance else ""
        return ("out", f"{group_id:<{g}} {member:<{c}} {middle}{host:<{h}} {client:<{cl}} "
                f"{count:<15} {tail}")

    lines += [("out", ""), line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST",
                                "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT" if verbose else "")]
    for m in group.members:
        tail = assignment_text(m.assignment) if verbose else ""
        lines.append(line(group.group_id, m.member_id, m.group_instance_id or "", m.host,
                          m.client_id, str(len(set(m.assignment))), tail))
    return lines


def state_table(group: GroupDescription) -> list[Line]:
    """``--describe --state`` for one group (the GROUP column takes the coordinator's
    width, as Kafka's format does)."""
    lines, _ = state_notice(group.group_id, group.state, 1)
    if group.state == "Dead":
        return lines
    coordinator = str(group.coordinator)
    w = max(25, len(coordinator))
    return [*lines, ("out", ""),
            ("out", f"{'GROUP':<{w}} {'COORDINATOR (ID)':<25} {'ASSIGNMENT-STRATEGY':<20} "
                    f"{'STATE':<15} #MEMBERS"),
            ("out", f"{group.group_id:<{w}} {coordinator:<25} {group.assignor:<20} "
                    f"{group.state:<15} {len(group.members)}")]


def list_table(groups: Mapping[str, str], with_state: bool) -> list[Line]:
    """``--list``: the ids, or with ``--state`` a GROUP/STATE table."""
    if not with_state:
        return [("out", g) for g in sorted(groups)]
    w = max([15, *(len(g) for g in groups)]) + 10
    return [("out", f"{g:<{w}} {s:<20}") for g, s in [("GROUP", "STATE"), *sorted(groups.items())]]


def reset_table(plan: Mapping[str, Mapping[TopicPartition, int]]) -> list[Line]:
    """The NEW-OFFSET table ``--reset-offsets`` prints (dry run or executed)."""
    if not plan:
        return []
    g = max([15, *(len(group) for group in plan)])
    t = max([15, *(len(tp[0]) for offsets in plan.values() for tp in offsets)])

    def line(*cells: str) -> Line:
        return ("out", f"{cells[0]:<{g}} {cells[1]:<{t}} {cells[2]:<10} {cells[3]}")

    lines = [("out", ""), line("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
    for group in sorted(plan):
        for (topic, partition), offset in sorted(plan[group].items()):
            lines.append(line(group, topic, str(partition), str(offset)))
    return lines


def delete_offsets_table(results: Mapping[TopicPartition, str | None]) -> list[Line]:
    """The TOPIC/PARTITION/STATUS table of ``--delete-offsets`` (None: success), in Kafka's
    order (topic name and partition number compared as one string)."""
    lines = [("out", ""), ("out", f"{'TOPIC':<30} {'PARTITION':<15} STATUS")]
    for (topic, partition), error in sorted(results.items(), key=lambda e: e[0][0] + str(e[0][1])):
        status = "Successful" if error is None else f"Error: :{error}"
        shown = str(partition) if partition >= 0 else "Not Provided"
        lines.append(("out", f"{topic:<30} {shown:<15} {status}"))
    return lines


# -- reset arithmetic -----------------------------------------------------------------------

def clamp(requested: int, earliest: int | None, latest: int | None) -> int:
    """Kafka's ``checkOffsetsRange``: above the log end goes to the log end, below the log
    start to the log start."""
    if latest is not None and requested > latest:
        return latest
    if earliest is not None and requested < earliest:
        return earliest
    return requested


def shifted(
    partitions: Iterable[TopicPartition], committed: Mapping[TopicPartition, int], shift: int
) -> dict[TopicPartition, int]:
    """``--shift-by``: each committed offset moved by ``shift`` (before clamping)."""
    out = {}
    for tp in partitions:
        if tp not in committed:
            raise UsageError(f"Cannot shift offset for partition {tp_name(tp)} since there is "
                             "no current committed offset")
        out[tp] = committed[tp] + shift
    return out


def parse_datetime(text: str, local: datetime.tzinfo | None = None) -> int:
    """``--to-datetime``: Kafka's ``Utils.getDateTime`` (``YYYY-MM-DDTHH:mm:SS.sss``, with an
    optional zone, else the local one) as epoch milliseconds."""
    parts = text.split("T")
    if len(parts) != 2:
        raise UsageError("Error parsing timestamp. It does not contain a 'T' according to "
                         "ISO8601 format")
    has_zone = any(mark in parts[1] for mark in "+-Z")
    try:
        if has_zone:
            moment = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z")
        else:
            naive = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f")
            moment = naive.replace(tzinfo=local) if local else naive.astimezone()
    except ValueError:
        raise UsageError(f'Unparseable date: "{text}"') from None
    return int(moment.timestamp() * 1000)

