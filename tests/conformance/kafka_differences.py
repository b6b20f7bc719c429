"""Every justified difference between Kafka's answer and pykraft's to a conformance row,
with the place in Kafka's source that explains it (paths in apache/kafka); the known defects
of pykraft the oracle found and that are not fixed yet; and those it found and were fixed.

A difference listed here is a field (a path of :func:`conformance.differential.leaves`) of
one API's rows on which the two clusters may disagree without either being wrong: the
value comes from state the two implementations keep differently (their metadata logs hold
different records, so offsets into them differ). A row whose every difference is listed is
"excepted". A known defect is a difference that is pykraft's fault: a row whose remaining
differences are all known defects is an xfail naming them (and fails once none is left, so
the entry goes when the defect is fixed). Anything else that differs fails the row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

Values = tuple[object, object]


@dataclass(frozen=True)
class Difference:
    """Rows of ``api`` whose case matches ``cases`` may differ at paths matching ``paths``
    (and, when ``values`` is given, only with Kafka's value then pykraft's being those)."""

    api: str
    cases: str
    paths: str
    why: str
    kafka_source: str = ""
    values: Values | None = None

    def covers(self, api: str, case: str, path: str, values: Values) -> bool:
        return (fnmatchcase(api, self.api) and fnmatchcase(case, self.cases)
                and re.fullmatch(self.paths, path) is not None
                and (self.values is None or self.values == values))

    def __str__(self) -> str:
        return f"{self.why} ({self.kafka_source})" if self.kafka_source else self.why


@dataclass(frozen=True)
class Fixed:
    """A difference the oracle found in ``api``'s rows and pykraft no longer has."""

    api: str
    cases: str
    what: str

    def covers(self, api: str, case: str) -> bool:
        return api == self.api and fnmatchcase(case, self.cases)


_METADATA_LOG = ("each cluster's metadata log holds its own controller's records (Kafka's "
                 "QuorumController writes records pykraft's does not, and vice versa), so "
                 "offsets into it, its bytes and the times it was read at differ")
EXCEPTIONS = [
    Difference("DescribeQuorum", "*",
               r".*\.(high_watermark|log_end_offset|last_fetch_timestamp"
               r"|last_caught_up_timestamp)", _METADATA_LOG,
               "raft/src/main/java/org/apache/kafka/raft/LeaderState.java describeQuorum"),
    Difference("Fetch", "observer_reads_the_metadata_log",
               r".*\.(high_watermark|records)", _METADATA_LOG,
               "metadata/src/main/java/org/apache/kafka/controller/QuorumController.java"),
    Difference("DescribeLogDirs", "*", r"\.results\[0\]\.log_dir",
               "each cluster's broker has its own log directory",
               "core/src/main/scala/kafka/log/LogManager.scala liveLogDirs"),
    Difference("DescribeLogDirs", "all_partitions", r"\.results\[0\]\.topics.*",
               "Kafka lists a log dir's topics in its HashMap's order, not in any order a "
               "client may rely on",
               "core/src/main/scala/kafka/server/ReplicaManager.scala describeLogDirs"),
    Difference("ListGroups", "lists_a_stable_group", r"\[0\]\.groups.*",
               "the listing holds every group the earlier rows left, in the coordinator's "
               "hash order, each in the state its members' session timers left it",
               "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/"
               "GroupMetadataManager.java listGroups"),
]

_NULL_MESSAGE = "pykraft sends a null error message where Kafka sends ''"
_WORDS = "pykraft's error message is not in Kafka's words"


def _words(api: str, cases: str = "*") -> Difference:
    return Difference(api, cases, r".*error_message", _WORDS)


KNOWN_DEFECTS = [
    Difference("*", "*", r".*error_message", _NULL_MESSAGE, values=("", None)),
    Difference("SaslAuthenticate", "valid_plain", r"\[1\]", _NULL_MESSAGE, values=("", None)),
    Difference("ApiVersions", "*", r"\.api_keys.*",
               "pykraft serves 41 of the APIs Kafka 4.4 serves, some at fewer versions "
               "(issue 25: later issues serve them)"),
    *(_words(api, cases) for api, cases in (
        ("AddRaftVoter", "wrong_cluster_id"), ("RemoveRaftVoter", "wrong_cluster_id"),
        ("AlterConfigs", "unknown_topic"), ("IncrementalAlterConfigs", "unknown_topic"),
        ("CreatePartitions", "*"), ("CreateTopics", "*"), ("DescribeConfigs", "unknown_topic"),
        ("ConsumerGroupDescribe", "unknown_group"), ("UpdateFeatures", "unknown_feature"),
        ("DescribeCluster", "*"))),
    Difference("CreateTopics", "*", r"\.topics\[\d+\]\.configs", "pykraft sends a null "
               "configs array with a topic's error where Kafka sends an empty one",
               values=([], None)),
    Difference("CreateTopics", "*", r"\.topics\[\d+\]\.configs\[\d+\]\.config_source",
               "min.insync.replicas comes from a cluster default in Kafka's answer "
               "(DYNAMIC_DEFAULT_BROKER_CONFIG, written by Kafka 4's controller when the "
               "cluster bootstraps); pykraft's controller writes none", values=(3, 5)),
    Difference("Fetch", "*", r".*\.aborted_transactions", "pykraft sends a null "
               "aborted_transactions array where Kafka sends an empty one", values=([], None)),
    Difference("AllocateProducerIds", "unknown_broker", r"\.producer_id_start",
               "pykraft answers producer_id_start -1 with the error, Kafka 0"),
    Difference("AlterPartition", "unknown_broker", r"\.error_code",
               "pykraft answers a top-level STALE_BROKER_EPOCH from v2 where Kafka answers NONE"),
    Difference("ConsumerGroupHeartbeat", "first_heartbeat_joins", r"\.member_epoch",
               "a first heartbeat gets member epoch 1 where Kafka's gets 2"),
    Difference("ControllerRegistration", "no_incarnation_id", r"\.error_(code|message)",
               "pykraft refuses a zero incarnation id (INVALID_REQUEST); Kafka registers it"),
    Difference("ApiVersions", "*", r"\.(finalized|supported)_features.*",
               "pykraft supports and finalizes metadata.version only; Kafka also "
               "group.version, streams.version, transaction.version, ..."),
    Difference("FindCoordinator", "group_key", r"\.error_message",
               "Kafka sends its error's name ('NONE') as the v1-3 message, pykraft null",
               values=("NONE", None)),
    Difference("CreateTopics", "validate_only", r"\.topics\[0\]\.topic_id",
               "Kafka answers a validate-only creation with a topic id, pykraft with none"),
    Difference("Fetch", "observer_reads_the_metadata_log", r"\.node_endpoints.*",
               "pykraft's controller lists its endpoint in a Fetch answer to an observer; "
               "Kafka's lists none"),
    Difference("UpdateFeatures", "unknown_feature", r"\.results.*",
               "pykraft's controller lists the feature's result beside the top-level error; "
               "Kafka's lists none"),
    Difference("DescribeCluster", "*", r"\.(error_code|endpoint_type)",
               "pykraft answers UNSUPPORTED_ENDPOINT_TYPE (115) and echoes no endpoint type "
               "where Kafka answers MISMATCHED_ENDPOINT_TYPE (114)"),
    Difference("FetchSnapshot", "wrong_cluster_id", r"\.topics.*",
               "pykraft lists the partition beside a wrong cluster id; Kafka lists none"),
    Difference("InitProducerId", "transactional_id", r"\.error_code",
               "pykraft has no transaction coordinator (53 where Kafka answers NOT_COORDINATOR "
               "until __transaction_state exists)"),
    Difference("ListOffsets", "duplicate_partition", r"\.topics\[0\]\.partitions\[1\].*",
               "pykraft answers each duplicate partition; Kafka answers it once"),
]

FIXED = [
    Fixed("ApiVersions", "unsupported_version", "the KIP-511 reply to an unsupported "
          "ApiVersions version lists ApiVersions' own range only, as Kafka's does"),
]


def excepted(api: str, case: str, path: str, values: Values) -> Difference | None:
    return next((e for e in EXCEPTIONS if e.covers(api, case, path, values)), None)


def known_defect(api: str, case: str, path: str, values: Values) -> Difference | None:
    return next((d for d in KNOWN_DEFECTS if d.covers(api, case, path, values)), None)


def fixed(api: str, case: str) -> Fixed | None:
    return next((f for f in FIXED if f.covers(api, case)), None)
