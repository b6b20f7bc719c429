"""The runs of pykraft's own cluster tools that tests/oracle/test_pykraft_tools_on_kafka.py
makes against both clusters, in order: each run finds the state the runs before it left (the
same on both clusters).

Every operation of every tool that talks to a cluster: topics (create, alter, list, describe
and its filters, delete), configs (topic, broker, broker defaults, user SCRAM and client quotas:
describe, alter, delete; the entity types the tool does not serve), acls (add, list, remove, with an
authorizer on both clusters), the console producer (each codec, headers, ``--sync``) and
consumer, consumer-groups (list, describe, the offset resets, delete-offsets, delete),
get-offsets (each ``--time``), log-dirs, delete-records, leader-election, reassign-partitions
(list, verify, execute with a throttle, cancel, refusals), metadata-quorum
(describe, remove-controller) and features (describe, upgrade); then (:data:`TXN`, once
:func:`txn_tool_runs.open_transactions` has left transactions open) transactions (list,
describe, describe-producers, find-hanging, abort, forceTerminateTransaction). A run is a
:class:`kafka_tools.ToolRun` whose arguments are the ``pykraft`` CLI's (the first is the
command); its masks are those of :mod:`kafka_tools`' normalisation, each said where it is
used.
"""

from __future__ import annotations

from kafka_tool_runs import (
    BATCH_SIZE_JSON,
    FEATURES_EPOCH,
    GROUP,
    QUORUM_REPLICATION,
    QUORUM_STATUS,
    REASSIGN_RUNS,
    RECORDS,
    TOPIC,
)
from kafka_tools import ToolRun
from txn_tool_runs import READS, READS_AFTER, WRITES, pykraft_runs

PYKRAFT_CLI = "pykraft.cli.main"
BS = ("--bootstrap-server", "{bootstrap}")
BC = ("--bootstrap-controller", "{controller}")
PACKED = "packed"  # one partition: its records in the order sent, one batch per codec
CODECS = ("gzip", "snappy", "lz4", "zstd")
#: the metadata log's offsets in quorum's JSON (see QUORUM_STATUS)
QUORUM_JSON = (r'(?<="highWatermark": )\d+', r'(?<="logEndOffset": )\d+')
#: the coordinator's port in consumer-groups' JSON (its host:port is <bootstrap> elsewhere)
COORDINATOR_PORT = r'(?<="port": )\d+'
#: the static voter's directory id (DescribeQuorum's Uuid.ZERO: a static voter has none)
NO_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAA"
OTHER_DIRECTORY = "QUwzLCqcD2KpWSd62HgoLA"  # no voter's


def tool(command: str, operation: str, *args: str, stdin: str | None = None,
         unordered: bool = False, masks: tuple[str, ...] = ()) -> ToolRun:
    return ToolRun(f"pykraft {command}", operation, PYKRAFT_CLI, (command, *args),
                   stdin=stdin, unordered=unordered, masks=masks)


def topics(operation: str, *args: str) -> ToolRun:
    return tool("topics", operation, *BS, *args)


def configs(operation: str, *args: str) -> ToolRun:
    return tool("configs", operation, *BS, *args)


def acls(operation: str, *args: str) -> ToolRun:
    return tool("acls", operation, *BS, *args)


def groups(operation: str, *args: str, masks: tuple[str, ...] = ()) -> ToolRun:
    return tool("consumer-groups", operation, *BS, *args, masks=masks)


def consume(operation: str, topic: str, *args: str, unordered: bool = False) -> ToolRun:
    return tool("console-consumer", operation, *BS, "--topic", topic, "--timeout-ms", "30000",
                *args, unordered=unordered)


def offsets(operation: str, *args: str) -> ToolRun:
    return tool("get-offsets", operation, *BS, *args)


def lines(*texts: str) -> str:
    return "".join(f"{text}\n" for text in texts)


TOPICS = [
    topics("create", "--create", "--topic", TOPIC, "--partitions", "2",
           "--replication-factor", "1"),
    # before the cluster default below: Kafka 4.4's controller wrote min.insync.replicas=1
    topics("describe before the cluster default", "--describe", "--topic", TOPIC),
    configs("set cluster min.insync.replicas", "--alter", "--broker-defaults",
            "--add-config", "min.insync.replicas=1"),
    topics("create existing", "--create", "--topic", TOPIC, "--partitions", "2"),
    topics("create if not exists", "--create", "--topic", TOPIC, "--if-not-exists"),
    topics("create with config", "--create", "--topic", "other", "--partitions", "1",
           "--config", "cleanup.policy=compact"),
    topics("create with replica assignment", "--create", "--topic", "assigned",
           "--replica-assignment", "1000,1000"),
    topics("alter partitions", "--alter", "--topic", "other", "--partitions", "3"),
    topics("alter with replica assignment", "--alter", "--topic", "assigned", "--partitions",
           "3", "--replica-assignment", "1000,1000,1000"),
    topics("alter missing", "--alter", "--topic", "missing", "--partitions", "4"),
    topics("list", "--list"),
    topics("list --exclude-internal", "--list", "--exclude-internal"),
    topics("describe", "--describe", "--topic", TOPIC),
    topics("describe with config", "--describe", "--topic", "other"),
    topics("describe --json", "--describe", "--topic", TOPIC, "--json"),
    topics("describe --table", "--describe", "--topic", "assigned", "--table"),
    topics("describe --topics-with-overrides", "--describe", "--topics-with-overrides",
           "--exclude-internal"),
    topics("describe --under-replicated-partitions", "--describe",
           "--under-replicated-partitions"),
    topics("describe --unavailable-partitions", "--describe", "--unavailable-partitions"),
    topics("describe --under-min-isr-partitions", "--describe", "--under-min-isr-partitions"),
    topics("describe --at-min-isr-partitions", "--describe", "--at-min-isr-partitions",
           "--exclude-internal"),
    topics("describe missing", "--describe", "--topic", "missing"),
    topics("describe missing --if-exists", "--describe", "--topic", "missing", "--if-exists"),
    topics("delete", "--delete", "--topic", "other"),
    topics("delete missing", "--delete", "--topic", "missing"),
    topics("create packed", "--create", "--topic", PACKED, "--partitions", "1"),
    topics("create headed", "--create", "--topic", "headed", "--partitions", "1"),
]

CONFIGS = [
    configs("alter topic", "--alter", "--entity-type", "topics", "--entity-name", TOPIC,
            "--add-config", "retention.ms=86400000,max.message.bytes=100000"),
    configs("describe topic", "--describe", "--entity-type", "topics", "--entity-name", TOPIC),
    configs("delete topic config", "--alter", "--topic", TOPIC, "--delete-config",
            "max.message.bytes"),
    configs("describe topic --all", "--describe", "--all", "--topic", TOPIC),
    configs("describe topic --json", "--describe", "--topic", TOPIC, "--json"),
    configs("describe every topic", "--describe", "--entity-type", "topics"),
    configs("refuse unknown key", "--alter", "--topic", TOPIC, "--add-config",
            "no.such.key=1"),
    configs("describe broker", "--describe", "--entity-type", "brokers", "--entity-name",
            "1000"),
    configs("alter broker", "--alter", "--broker", "1000", "--add-config",
            "log.retention.bytes=1073741824"),
    configs("describe broker after alter", "--describe", "--broker", "1000"),
    configs("alter broker defaults", "--alter", "--broker-defaults", "--add-config",
            "log.retention.ms=604800000"),
    configs("describe broker defaults", "--describe", "--broker-defaults"),
    configs("describe every broker", "--describe", "--entity-type", "brokers"),
    configs("describe broker --all", "--describe", "--all", "--broker", "1000"),
    configs("alter user SCRAM", "--alter", "--entity-type", "users", "--entity-name", "alice",
            "--add-config", "SCRAM-SHA-256=[iterations=8192,password=secret]"),
    configs("describe user", "--describe", "--entity-type", "users", "--entity-name", "alice"),
    configs("alter user defaults refused", "--alter", "--user-defaults", "--add-config",
            "SCRAM-SHA-256=[password=x]"),
    configs("delete user SCRAM", "--alter", "--user", "alice", "--delete-config",
            "SCRAM-SHA-256"),
    configs("describe user after delete", "--describe", "--user", "alice"),
    configs("describe every user", "--describe", "--entity-type", "users"),
    configs("describe broker-loggers", "--describe", "--entity-type", "broker-loggers",
            "--entity-name", "1000"),
    configs("alter client quota", "--alter", "--client", "c1", "--add-config",
            "producer_byte_rate=1048576"),
    configs("alter quota of a user's client", "--alter", "--user", "bob", "--client", "c2",
            "--add-config", "consumer_byte_rate=2048,request_percentage=12.5"),
    configs("describe a user's client quotas", "--describe", "--entity-type", "users",
            "--entity-name", "bob", "--entity-type", "clients"),
    configs("alter ip quota", "--alter", "--ip", "10.1.2.4", "--add-config",
            "connection_creation_rate=10"),
    configs("describe ip quota", "--describe", "--ip", "10.1.2.4"),
    configs("refuse a fractional quota", "--alter", "--client", "c1", "--add-config",
            "producer_byte_rate=1.5"),
    configs("refuse an ip key for a client", "--alter", "--client", "c1", "--add-config",
            "connection_creation_rate=1"),
    configs("delete client quota", "--alter", "--client", "c1", "--delete-config",
            "producer_byte_rate"),
    configs("describe every client quota", "--describe", "--entity-type", "clients"),
    configs("describe default user quotas", "--describe", "--user-defaults"),
    configs("describe group configs", "--describe", "--entity-type", "groups",
            "--entity-name", GROUP),
]

ACLS = [
    acls("add", "--add", "--allow-principal", "User:alice", "--operation", "Read",
         "--topic", TOPIC),
    acls("add --producer", "--add", "--allow-principal", "User:bob", "--producer",
         "--topic", TOPIC),
    acls("add --consumer", "--add", "--allow-principal", "User:dan", "--consumer", "--topic",
         PACKED, "--group", "g2"),
    acls("add cluster deny", "--add", "--deny-principal", "User:eve", "--operation",
         "Alter", "--cluster"),
    acls("add prefixed group", "--add", "--allow-principal", "User:carol", "--operation",
         "Read", "--group", "team-", "--resource-pattern-type", "PREFIXED"),
    acls("add transactional id from a host", "--add", "--allow-principal", "User:dan",
         "--operation", "Write", "--transactional-id", "tx-1", "--allow-host", "10.0.0.1"),
    acls("list", "--list"),
    acls("list topic", "--list", "--topic", TOPIC),
    acls("list cluster", "--list", "--cluster"),
    acls("list MATCH", "--list", "--group", "team-a", "--resource-pattern-type", "MATCH"),
    acls("list --json", "--list", "--json"),
    acls("remove", "--remove", "--allow-principal", "User:alice", "--operation", "Read",
         "--topic", TOPIC, "--force"),
    acls("remove prefixed", "--remove", "--group", "team-", "--resource-pattern-type",
         "PREFIXED", "--force"),
    acls("list principal", "--list", "--principal", "User:bob"),
]

DATA = [
    tool("console-producer", "keyed lines", *BS, "--topic", TOPIC, "--property",
         "parse.key=true", "--property", "key.separator=:", stdin=lines(*RECORDS)),
    *(tool("console-producer", f"{codec}", *BS, "--topic", PACKED, "--compression-codec",
           codec, stdin=lines(*(f"{codec} {i}" for i in range(3)))) for codec in CODECS),
    tool("console-producer", "--sync", *BS, "--topic", PACKED, "--sync",
         stdin=lines("sync 0", "sync 1")),
    tool("console-producer", "headers and null marker", *BS, "--topic", "headed",
         "--property", "parse.headers=true", "--property", "parse.key=true", "--property",
         "null.marker=<null>", stdin=lines("h1:v1,h2:v2\tk1\tone", "h3:v3\t<null>\t<null>")),
    tool("console-producer", "missing topic", *BS, "--topic", "missing", stdin=lines("x")),
    # two partitions: their records interleave as fetches return
    consume("group from beginning", TOPIC, "--from-beginning", "--group", GROUP,
            "--max-messages", str(len(RECORDS)), "--property", "print.key=true", "--property",
            "print.partition=true", "--property", "print.offset=true", unordered=True),
    consume("one partition from offset", TOPIC, "--partition", "0", "--offset", "1",
            "--max-messages", "2", "--property", "print.key=true"),
    consume("every codec, timestamps", PACKED, "--from-beginning", "--group", "g2",
            "--max-messages", str(3 * len(CODECS) + 2), "--property", "print.timestamp=true",
            "--property", "print.offset=true"),
    consume("partition earliest", PACKED, "--partition", "0", "--offset", "earliest",
            "--max-messages", "1"),
    consume("headers", "headed", "--from-beginning", "--max-messages", "2", "--property",
            "print.headers=true", "--property", "print.key=true", "--property",
            "null.literal=NULL"),
    consume("missing topic", "missing", "--max-messages", "1"),
]

GROUPS = [
    groups("list", "--list"),
    groups("list --state", "--list", "--state"),
    groups("list --json", "--list", "--json"),
    groups("describe", "--describe", "--group", GROUP),
    groups("describe --state", "--describe", "--group", GROUP, "--state"),
    groups("describe --members", "--describe", "--group", GROUP, "--members"),
    groups("describe --members --verbose", "--describe", "--group", "g2", "--members",
           "--verbose"),
    groups("describe --json", "--describe", "--group", "g2", "--json",
           masks=(COORDINATOR_PORT,)),
    groups("describe --all-groups", "--describe", "--all-groups"),
    groups("describe missing", "--describe", "--group", "nobody"),
    groups("reset --to-earliest dry run", "--reset-offsets", "--group", GROUP, "--topic",
           TOPIC, "--to-earliest"),
    groups("reset --to-earliest", "--reset-offsets", "--group", GROUP, "--topic", TOPIC,
           "--to-earliest", "--execute"),
    groups("reset --to-latest --all-topics dry run", "--reset-offsets", "--group", "g2",
           "--all-topics", "--to-latest", "--dry-run"),
    groups("reset --shift-by", "--reset-offsets", "--group", "g2", "--topic", PACKED,
           "--shift-by", "-3", "--execute"),
    groups("reset --to-offset", "--reset-offsets", "--group", "g2", "--topic", f"{PACKED}:0",
           "--to-offset", "2", "--execute"),
    groups("reset --to-datetime", "--reset-offsets", "--group", "g2", "--topic", PACKED,
           "--to-datetime", "2000-01-01T00:00:00.000", "--execute"),
    groups("delete offsets", "--delete-offsets", "--group", GROUP, "--topic", TOPIC),
]

OFFSETS = [
    offsets("latest", "--topic", TOPIC),
    offsets("earliest", "--topic", TOPIC, "--time", "-2"),
    offsets("--topic-partitions", "--topic-partitions", f"{PACKED}:0,{TOPIC}:1-"),
    offsets("--partitions", "--topic", TOPIC, "--partitions", "1"),
    offsets("max-timestamp", "--topic", PACKED, "--time", "-3"),
    offsets("earliest-local", "--topic", PACKED, "--time", "-4"),
    offsets("latest-tiered", "--topic", PACKED, "--time", "-5"),
    offsets("timestamp", "--topic", PACKED, "--time", "946684800000"),
    offsets("--exclude-internal-topics", "--exclude-internal-topics"),
    # masked: a batch's size depends on its records' timestamp deltas (varints)
    tool("log-dirs", "describe", *BS, "--describe", "--topic-list", TOPIC,
         masks=(BATCH_SIZE_JSON,)),
    tool("log-dirs", "describe --broker-list", *BS, "--describe", "--broker-list", "1000",
         "--topic-list", PACKED, masks=(BATCH_SIZE_JSON,)),
    tool("delete-records", "delete before 1", *BS, "--offset-json-file",
         "{files}/delete.json"),
    offsets("earliest after delete", "--topic", TOPIC, "--time", "-2"),
    tool("leader-election", "preferred --topic --partition", *BS, "--election-type",
         "preferred", "--topic", TOPIC, "--partition", "0"),
    tool("leader-election", "preferred --all-topic-partitions", *BS, "--election-type",
         "PREFERRED", "--all-topic-partitions"),
    tool("leader-election", "unclean --path-to-json-file", *BS, "--election-type",
         "unclean", "--path-to-json-file", "{files}/election.json"),
    tool("leader-election", "unknown partition", *BS, "--election-type", "preferred",
         "--topic", TOPIC, "--partition", "9"),
    *(tool("reassign-partitions", operation, *BS, *args) for operation, args in REASSIGN_RUNS),
    groups("delete", "--delete", "--group", GROUP),
    groups("delete missing", "--delete", "--group", GROUP),
    groups("delete --all-groups", "--delete", "--all-groups"),
]

QUORUM = [
    tool("metadata-quorum", "describe --status", *BS, "describe", "--status",
         masks=QUORUM_STATUS),
    tool("metadata-quorum", "describe --status (controller)", *BC, "describe", "--status",
         masks=QUORUM_STATUS),
    tool("metadata-quorum", "describe --replication", *BC, "describe", "--replication",
         masks=QUORUM_REPLICATION),
    tool("metadata-quorum", "describe --status --json", *BS, "describe", "--status", "--json",
         masks=QUORUM_JSON),
    tool("metadata-quorum", "describe --replication --json", *BS, "describe",
         "--replication", "--json", masks=QUORUM_JSON),
    tool("metadata-quorum", "remove-controller dry run", *BC, "remove-controller", "-i", "1",
         "-d", NO_DIRECTORY, "--dry-run"),
    tool("metadata-quorum", "remove-controller static voter", *BC, "remove-controller",
         "-i", "1", "-d", NO_DIRECTORY, "--timeout", "5"),
    tool("metadata-quorum", "remove-controller other directory", *BC, "remove-controller",
         "-i", "1", "-d", OTHER_DIRECTORY, "--timeout", "5"),
    tool("features", "describe", *BS, "describe", masks=(FEATURES_EPOCH,)),
    tool("features", "describe (controller)", *BC, "describe", masks=(FEATURES_EPOCH,)),
    tool("features", "describe --json", *BS, "describe", "--json",
         masks=(r'(?<="epoch": )\d+',)),
    tool("features", "upgrade kraft.version dry run", *BS, "upgrade", "--feature",
         "kraft.version=1", "--dry-run"),
    tool("features", "upgrade group.version dry run", *BS, "upgrade", "--feature",
         "group.version=1", "--dry-run"),
    tool("features", "downgrade metadata.version refused", *BS, "upgrade", "--feature",
         "metadata.version=20", "--dry-run", "--timeout", "5"),
]

RUNS = [*TOPICS, *CONFIGS, *ACLS, *DATA, *GROUPS, *OFFSETS, *QUORUM]
#: run once the transactions of txn_tool_runs.open_transactions are open
TXN = pykraft_runs([*READS, *WRITES, *READS_AFTER])

__all__ = ["RUNS", "TXN"]
