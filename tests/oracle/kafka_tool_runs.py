"""The runs of Kafka's tools that tests/oracle/test_kafka_tools.py makes against both clusters,
in order: each run finds the state the runs before it left (the same on both clusters).

First the admin tools (topics, configs, acls, the console producer and consumer, consumer
groups, get-offsets, log-dirs, delete-records, leader-election, reassign-partitions,
metadata-quorum, features),
then dump-log over the files they wrote (the broker's segments and indexes, the consumer
offsets, the metadata log), then the perf and verifiable tools, then kafka-transactions.sh
over the transactions txn_tool_runs leaves open; once the clusters have stopped, dump-log
over the files written at shutdown and at format (a producer snapshot, the bootstrap
metadata snapshot) and the metadata shell over the metadata log (it locks the directory it
reads, which a running controller holds).
"""

from __future__ import annotations

from pathlib import Path

from kafka_tools import ToolRun
from txn_tool_runs import READS, READS_AFTER, WRITES, kafka_runs

from pykraft.group.partitioning import partition_for

TOPICS = "org.apache.kafka.tools.TopicCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
ACLS = "org.apache.kafka.tools.AclCommand"
GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"
LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
METADATA_SHELL = "org.apache.kafka.shell.MetadataShell"
VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"
E2E_LATENCY = "org.apache.kafka.tools.EndToEndLatency"

BS = ("--bootstrap-server", "{bootstrap}")
TOPIC = "lines"
RECORDS = [f"k{i}:value {i}" for i in range(8)]
#: one batch per partition, whatever the machine's speed: the producer lingers until stdin
#: ends and it closes (the files dump-log reads are then alike on both clusters)
ONE_BATCH = ("--producer-property", "linger.ms=60000", "--producer-property", "batch.size=65536")
SEGMENT = "00000000000000000000"
GROUP = "g1"
#: the __consumer_offsets partition of GROUP (50 partitions: Kafka's default and pykraft's)
OFFSETS_PARTITION = partition_for(GROUP, 50)


def topics(operation: str, *args: str, until: str | None = None) -> ToolRun:
    return ToolRun("kafka-topics", operation, TOPICS, (*BS, *args), until=until)


def configs(operation: str, *args: str, until: str | None = None,
            until_gone: str | None = None) -> ToolRun:
    return ToolRun("kafka-configs", operation, CONFIGS, (*BS, *args), until=until,
                   until_gone=until_gone)


def groups(operation: str, *args: str) -> ToolRun:
    return ToolRun("kafka-consumer-groups", operation, GROUPS, (*BS, *args))


#: a batch's size, which depends on its records' timestamp deltas (varints: a record sent
#: 64 ms or more after the batch's first takes a byte more), so on the machine's pace
BATCH_SIZE = r"(?<= size: )\d+"
BATCH_SIZE_JSON = r'(?<="size":)\d+'
#: the metadata log's offsets (its length depends on how many records, NoOps and
#: registrations, each cluster's controller wrote) and the followers' lag at the instant asked
QUORUM_STATUS = (r"(?<=HighWatermark:)\s+\d+", r"(?<=MaxFollowerLag:)\s+\d+",
                 r"(?<=MaxFollowerLagTimeMs:)\s+-?\d+")
#: a replica's LogEndOffset and Lag columns (after its directory id), as QUORUM_STATUS
QUORUM_REPLICATION = (r"(?<=<uuid>\t)\d+ *\t\d+ *",)
#: the finalized features' epoch: the metadata log offset that finalized them
FEATURES_EPOCH = r"(?<=Epoch: )\d+"


#: the member id a coordinator gives a classic member: its client id and a random UUID
MEMBER_ID = r"(?<=console-consumer-)[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"


def election(operation: str, *args: str) -> ToolRun:
    return ToolRun("kafka-leader-election", operation, LEADER_ELECTION, (*BS, *args))


def reassign(operation: str, *args: str) -> ToolRun:
    return ToolRun("kafka-reassign-partitions", operation, REASSIGN, (*BS, *args))


#: kafka-reassign-partitions.sh's runs, and pykraft's (pykraft_tool_runs): on one broker, a
#: partition reassigned where it is (done at once) with a throttle, verified (clearing the
#: throttles) and cancelled; the files a refusal reads; error lines only where Kafka's tool
#: prints a stack trace after them
REASSIGN_RUNS = (
    ("list", ("--list",)),
    ("verify nothing in progress", ("--verify", "--reassignment-json-file",
                                    "{files}/reassign.json")),
    ("execute in place with a throttle", ("--execute", "--reassignment-json-file",
                                          "{files}/reassign.json", "--throttle", "1000000")),
    ("verify after execute", ("--verify", "--reassignment-json-file", "{files}/reassign.json")),
    ("cancel", ("--cancel", "--reassignment-json-file", "{files}/reassign.json")),
    ("cancel --preserve-throttles", ("--cancel", "--reassignment-json-file",
                                     "{files}/reassign.json", "--preserve-throttles")),
    ("list after", ("--list",)),
    ("execute an unknown broker", ("--execute", "--reassignment-json-file",
                                   "{files}/reassign-unknown.json")),
    ("execute an empty list", ("--execute", "--reassignment-json-file",
                               "{files}/reassign-empty.json")),
)
#: the lines before a stack trace (Kafka's tool prints ``Error: ...`` and its trace)
FIRST_LINE = r"(?s)(?<=\n)\s+at .*"


def dump(operation: str, path: str, *args: str, masks: tuple[str, ...] = ()) -> ToolRun:
    return ToolRun("kafka-dump-log", operation, DUMP_LOG, ("--files", path, *args),
                   masks=(BATCH_SIZE, *masks))


ADMIN = [
    topics("create", "--create", "--topic", TOPIC, "--partitions", "2",
           "--replication-factor", "1"),
    topics("create existing", "--create", "--topic", TOPIC, "--partitions", "2"),
    topics("create other", "--create", "--topic", "other", "--partitions", "1",
           "--config", "cleanup.policy=compact"),
    # kafka-e2e-latency's own creation races its consumer's first metadata (either cluster)
    topics("create for e2e-latency", "--create", "--topic", "latency", "--partitions", "1"),
    topics("alter partitions", "--alter", "--topic", "other", "--partitions", "3"),
    topics("list", "--list", until="latency"),
    topics("describe", "--describe", "--topic", TOPIC),
    topics("describe other", "--describe", "--topic", "other"),
    topics("delete", "--delete", "--topic", "other"),
    topics("describe missing", "--describe", "--topic", "missing"),
    configs("alter topic", "--alter", "--entity-type", "topics", "--entity-name", TOPIC,
            "--add-config", "retention.ms=86400000,max.message.bytes=100000"),
    configs("describe topic", "--describe", "--entity-type", "topics", "--entity-name", TOPIC,
            until="retention.ms=86400000"),
    configs("delete topic config", "--alter", "--entity-type", "topics", "--entity-name",
            TOPIC, "--delete-config", "max.message.bytes"),
    configs("describe broker", "--describe", "--entity-type", "brokers", "--entity-name",
            "1000"),
    configs("alter broker", "--alter", "--entity-type", "brokers", "--entity-name", "1000",
            "--add-config", "log.retention.bytes=1073741824"),
    configs("alter broker cleaner threads", "--alter", "--entity-type", "brokers",
            "--entity-name", "1000", "--add-config", "log.cleaner.threads=2"),
    configs("describe broker --all", "--describe", "--all", "--entity-type", "brokers",
            "--entity-name", "1000", until="log.retention.bytes=1073741824"),
    configs("alter client quota", "--alter", "--entity-type", "clients", "--entity-name",
            "c1", "--add-config", "producer_byte_rate=1048576"),
    configs("describe client quota", "--describe", "--entity-type", "clients",
            "--entity-name", "c1", until="producer_byte_rate"),
    configs("alter quota of a user's default client", "--alter", "--entity-type", "users",
            "--entity-name", "alice", "--entity-type", "clients", "--entity-default",
            "--add-config", "consumer_byte_rate=2048,request_percentage=12.5"),
    configs("describe a user's client quotas", "--describe", "--entity-type", "users",
            "--entity-name", "alice", "--entity-type", "clients", until="consumer_byte_rate"),
    configs("alter ip quota", "--alter", "--entity-type", "ips", "--entity-name", "10.1.2.3",
            "--add-config", "connection_creation_rate=10"),
    configs("describe ip quotas", "--describe", "--entity-type", "ips",
            until="connection_creation_rate"),
    configs("delete client quota", "--alter", "--entity-type", "clients", "--entity-name",
            "c1", "--delete-config", "producer_byte_rate"),
    configs("describe client quotas", "--describe", "--entity-type", "clients",
            until_gone="producer_byte_rate"),
    configs("refuse unknown key", "--alter", "--entity-type", "topics", "--entity-name",
            TOPIC, "--add-config", "no.such.key=1"),
    ToolRun("kafka-acls", "add (no authorizer)", ACLS,
            (*BS, "--add", "--allow-principal", "User:alice", "--operation", "Read",
             "--topic", TOPIC)),
    ToolRun("kafka-acls", "list (no authorizer)", ACLS, (*BS, "--list")),
    ToolRun("kafka-console-producer", "keyed lines", PRODUCER,
            (*BS, "--topic", TOPIC, "--property", "parse.key=true", "--property",
             "key.separator=:", *ONE_BATCH),
            stdin="".join(f"{line}\n" for line in RECORDS)),
    ToolRun("kafka-console-consumer", "group from beginning", CONSUMER,
            (*BS, "--topic", TOPIC, "--from-beginning", "--group", GROUP, "--max-messages",
             str(len(RECORDS)), "--timeout-ms", "30000", "--property", "print.key=true",
             "--property", "print.partition=true", "--property", "print.offset=true"),
            unordered=True),
    ToolRun("kafka-console-consumer", "one partition from offset", CONSUMER,
            (*BS, "--topic", TOPIC, "--partition", "0", "--offset", "1", "--max-messages",
             "2", "--timeout-ms", "30000", "--property", "print.key=true")),
    groups("list", "--list"),
    groups("describe", "--describe", "--group", GROUP),
    groups("describe state", "--describe", "--group", GROUP, "--state"),
    groups("describe members", "--describe", "--group", GROUP, "--members"),
    groups("describe missing", "--describe", "--group", "nobody"),
    groups("reset to earliest", "--reset-offsets", "--group", GROUP, "--topic", TOPIC,
           "--to-earliest", "--execute"),
    groups("delete offsets", "--delete-offsets", "--group", GROUP, "--topic", f"{TOPIC}:1"),
    ToolRun("kafka-get-offsets", "latest", GET_OFFSETS, (*BS, "--topic", TOPIC)),
    ToolRun("kafka-get-offsets", "earliest", GET_OFFSETS,
            (*BS, "--topic", TOPIC, "--time", "-2")),
    ToolRun("kafka-log-dirs", "describe", LOG_DIRS,
            (*BS, "--describe", "--topic-list", TOPIC), masks=(BATCH_SIZE_JSON,)),
    ToolRun("kafka-delete-records", "delete before 1", DELETE_RECORDS,
            (*BS, "--offset-json-file", "{files}/delete.json")),
    ToolRun("kafka-get-offsets", "earliest after delete", GET_OFFSETS,
            (*BS, "--topic", TOPIC, "--time", "-2")),
    # one broker: every partition is led by its preferred replica already
    election("preferred --topic --partition", "--election-type", "preferred",
             "--topic", TOPIC, "--partition", "0"),
    election("preferred --all-topic-partitions", "--election-type", "PREFERRED",
             "--all-topic-partitions"),
    election("unclean --path-to-json-file", "--election-type", "unclean",
             "--path-to-json-file", "{files}/election.json"),
    election("unknown partition", "--election-type", "preferred", "--topic", TOPIC,
             "--partition", "9"),
    *(ToolRun("kafka-reassign-partitions", operation, REASSIGN, (*BS, *args),
              masks=(FIRST_LINE,)) for operation, args in REASSIGN_RUNS),
    groups("delete", "--delete", "--group", GROUP),
    ToolRun("kafka-metadata-quorum", "describe status", QUORUM, (*BS, "describe", "--status"),
            masks=QUORUM_STATUS),
    ToolRun("kafka-metadata-quorum", "describe replication", QUORUM,
            ("--bootstrap-controller", "{controller}", "describe", "--replication"),
            masks=QUORUM_REPLICATION),
    ToolRun("kafka-features", "describe", FEATURES, (*BS, "describe"), masks=(FEATURES_EPOCH,)),
    ToolRun("kafka-features", "upgrade dry run", FEATURES,
            (*BS, "upgrade", "--feature", "group.version=1", "--dry-run")),
]

DELETE_RECORDS_JSON = ('{"version": 1, "partitions": '
                       f'[{{"topic": "{TOPIC}", "partition": 0, "offset": 1}}]}}')
ELECTION_JSON = f'{{"partitions": [{{"topic": "{TOPIC}", "partition": 1}}]}}'
REASSIGN_JSON = ('{"version": 1, "partitions": '
                 f'[{{"topic": "{TOPIC}", "partition": 0, "replicas": [1000]}}]}}')


def write_files(files: Path) -> None:
    """The files the runs read from ``{files}``."""
    (files / "delete.json").write_text(DELETE_RECORDS_JSON)
    (files / "election.json").write_text(ELECTION_JSON)
    (files / "reassign.json").write_text(REASSIGN_JSON)
    (files / "reassign-unknown.json").write_text(REASSIGN_JSON.replace("1000", "7"))
    (files / "reassign-empty.json").write_text('{"version": 1, "partitions": []}')

DUMP = [
    dump("segment --deep-iteration", f"{{broker_data}}/{TOPIC}-0/{SEGMENT}.log",
         "--deep-iteration", "--print-data-log"),
    dump("offset index --index-sanity-check", f"{{broker_data}}/{TOPIC}-0/{SEGMENT}.index",
         "--index-sanity-check"),
    dump("offset index", f"{{broker_data}}/{TOPIC}-0/{SEGMENT}.index"),
    dump("time index", f"{{broker_data}}/{TOPIC}-0/{SEGMENT}.timeindex"),
    dump("__consumer_offsets --offsets-decoder",
         f"{{broker_data}}/__consumer_offsets-{OFFSETS_PARTITION}/{SEGMENT}.log",
         "--offsets-decoder", masks=(MEMBER_ID,)),
    ToolRun("kafka-dump-log", "metadata log --cluster-metadata-decoder", DUMP_LOG,
            ("--files", f"{{controller_data}}/__cluster_metadata-0/{SEGMENT}.log",
             "--cluster-metadata-decoder"), errors_only=True),
]

PERF = [
    ToolRun("kafka-verifiable-producer", "10 messages", VERIFIABLE_PRODUCER,
            (*BS, "--topic", "verifiable", "--max-messages", "10"), measures=True,
            unordered=True),
    ToolRun("kafka-verifiable-consumer", "10 messages", VERIFIABLE_CONSUMER,
            (*BS, "--topic", "verifiable", "--group-id", "vg", "--max-messages", "10",
             "--reset-policy", "earliest"), measures=True, unordered=True),
    ToolRun("kafka-producer-perf-test", "100 records", PRODUCER_PERF,
            ("--topic", "perf", "--num-records", "100", "--record-size", "100",
             "--throughput", "-1", "--producer-props", "bootstrap.servers={bootstrap}"),
            measures=True),
    ToolRun("kafka-consumer-perf-test", "100 records", CONSUMER_PERF,
            (*BS, "--topic", "perf", "--messages", "100", "--timeout", "30000"),
            measures=True),
    ToolRun("kafka-e2e-latency", "20 messages", E2E_LATENCY,
            ("--bootstrap-server", "{bootstrap}", "--topic", "latency", "--num-records", "20",
             "--producer-acks", "1", "--record-size", "100"), measures=True),
]

#: ``{bootstrap_snapshot}``: Kafka 4.4's format writes it as the metadata log's
#: 00000000000000000000-0000000000.checkpoint, pykraft's as bootstrap.checkpoint beside it
BOOTSTRAP_SNAPSHOTS = ("__cluster_metadata-0/00000000000000000000-0000000000.checkpoint",
                       "bootstrap.checkpoint")

STOPPED = [
    dump("producer snapshot", f"{{broker_data}}/{TOPIC}-0/00000000000000000004.snapshot"),
    ToolRun("kafka-dump-log", "bootstrap snapshot --cluster-metadata-decoder", DUMP_LOG,
            ("--files", "{bootstrap_snapshot}", "--cluster-metadata-decoder"),
            errors_only=True),
    # errors only: the shell runs its command once its loader's publishers are installed,
    # not once the log is replayed, so what it lists varies run to run on Kafka's log too
    *(ToolRun("kafka-metadata-shell", " ".join(command), METADATA_SHELL,
              ("--snapshot", f"{{controller_data}}/__cluster_metadata-0/{SEGMENT}.log", *command),
              errors_only=True)
      for command in (("ls", "/image/topics/byName"), ("ls", "/image/cluster/brokers"))),
]

#: kafka-transactions.sh, once txn_tool_runs.open_transactions has left transactions open: the
#: read-only runs, then the writes and what they changed (txn_tool_runs)
TXN_READS = kafka_runs(READS)
TXN_WRITES = kafka_runs([*WRITES, *READS_AFTER])
