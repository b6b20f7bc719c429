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
    Difference("DescribeLogDirs", "*", r"\.results\[0\]\.usable_bytes",
               "the free space of the file system both clusters' log directories share, read "
               "by each at its own instant while the other writes",
               "core/src/main/scala/kafka/server/ReplicaManager.scala describeLogDirs "
               "(fileStore.getUsableSpace)"),
    Difference("DescribeLogDirs", "all_partitions", r"\.results\[0\]\.topics.*",
               "Kafka lists a log dir's topics in its HashMap's order, not in any order a "
               "client may rely on",
               "core/src/main/scala/kafka/server/ReplicaManager.scala describeLogDirs"),
    Difference("DescribeProducers", "after_a_marker",
               r"\.topics\[0\]\.partitions\[0\]\.active_producers\[0\]\.last_timestamp",
               "the time each broker wrote the marker (the coordinator's request carries none)",
               "storage/src/main/java/org/apache/kafka/storage/internals/log/"
               "ProducerAppendInfo.java appendEndTxnMarker"),
    Difference("ListGroups", "lists_a_stable_group", r"\[0\]\.groups.*",
               "the listing holds every group the earlier rows left, in the coordinator's "
               "hash order, each in the state its members' session timers left it",
               "group-coordinator/src/main/java/org/apache/kafka/coordinator/group/"
               "GroupMetadataManager.java listGroups"),
]

_CLUSTER_MIN_ISR = (
    "min.insync.replicas comes from a cluster default in Kafka's answer "
    "(DYNAMIC_DEFAULT_BROKER_CONFIG, written by Kafka 4's controller when the cluster "
    "bootstraps with eligible.leader.replicas.version 1, and listed as the first synonym, "
    "before the default); pykraft's controller writes it on the same condition, but "
    "pykraft finalizes no eligible.leader.replicas.version level")
_ELR_SAFETY = ("metadata/src/main/java/org/apache/kafka/controller/"
               "ConfigurationControlManager.java maybeGenerateElrSafetyRecords")
KNOWN_DEFECTS = [
    Difference("ApiVersions", "*", r"\.api_keys.*",
               "pykraft serves 61 of the 77 APIs Kafka 4.4 serves, some at fewer versions "
               "(issue 25: later issues serve them)"),
    Difference("CreateTopics", "*",  # a row may answer a list of bodies: [i].topics...
               r"(\[\d+\])?\.topics\[\d+\]\.configs\[\d+\]\.config_source",
               _CLUSTER_MIN_ISR, _ELR_SAFETY, values=(3, 5)),
    Difference("DescribeConfigs", "*",
               r"\.results\[\d+\]\.configs\[\d+\]\.(config_source|synonyms\[0\]\.source)",
               _CLUSTER_MIN_ISR, _ELR_SAFETY, values=(3, 5)),
    Difference("DescribeConfigs", "*",
               r"\.results\[\d+\]\.configs\[\d+\]\.synonyms\[1\]\.\w+",
               _CLUSTER_MIN_ISR, _ELR_SAFETY),
    Difference("ApiVersions", "*", r"\.(finalized|supported)_features.*",
               "pykraft supports metadata.version, kraft.version and transaction.version "
               "(finalized at format from 4.0-IV2 only, as Kafka); Kafka also supports and "
               "finalizes group.version, streams.version, share.version, ..."),
]

_MISMATCHED = ("MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST at v0) with Kafka's message and "
               "default fields")
_EMPTY_MESSAGE = "an empty error message where Kafka sets none, not null"
_WORDED = "Kafka's error message, word for word"
_EMPTY_CONFIGS = "an empty configs array with a topic's error, as Kafka's"
FIXED = [
    Fixed("ApiVersions", "unsupported_version", "the KIP-511 reply to an unsupported "
          "ApiVersions version lists ApiVersions' own range only, as Kafka's does"),
    *(Fixed(api, case, what) for api, case, what in (
        ("CreateAcls", "creates", _EMPTY_MESSAGE),
        ("DescribeAcls", "lists_created", _EMPTY_MESSAGE),
        ("DescribeConfigs", "topic_key", _EMPTY_MESSAGE),
        ("DescribeConfigs", "unknown_topic", _EMPTY_MESSAGE),
        ("DescribeUserScramCredentials", "all_users", _EMPTY_MESSAGE),
        ("DescribeUserScramCredentials", "unknown_user", _EMPTY_MESSAGE),
        ("DescribeUserScramCredentials", "upserted_user", _EMPTY_MESSAGE),
        ("DescribeUserScramCredentials", "user_twice", _EMPTY_MESSAGE),
        ("FindCoordinator", "batched_group_keys", _EMPTY_MESSAGE),
        ("SaslAuthenticate", "valid_plain", _EMPTY_MESSAGE),
        ("FindCoordinator", "group_key",
         "Kafka's message: empty in a v4+ coordinator, the error's name ('NONE') at v1-3"),
        ("AddRaftVoter", "wrong_cluster_id", _WORDED),
        ("RemoveRaftVoter", "wrong_cluster_id", _WORDED),
        ("ConsumerGroupDescribe", "unknown_group", _WORDED),
        ("ConsumerGroupHeartbeat", "first_heartbeat_joins", "member epoch 2: a new group "
         "starts at epoch 1, as Kafka 4.4's, and its first subscription bumps it"),
        ("AlterConfigs", "unknown_topic", _WORDED),
        ("IncrementalAlterConfigs", "unknown_topic", _WORDED),
        ("CreatePartitions", "fewer_partitions", _WORDED),
        ("CreatePartitions", "unknown_topic", _WORDED + " (none: Kafka's exception has none)"),
        ("CreateTopics", "already_exists", _EMPTY_CONFIGS),
        ("CreateTopics", "invalid_partitions", _EMPTY_CONFIGS),
        ("CreateTopics", "invalid_replication_factor", _WORDED + "; " + _EMPTY_CONFIGS),
        ("CreateTopics", "more_records_than_one_operation_may_write",
         "the partition total refused first, in Kafka's words; " + _EMPTY_CONFIGS),
        ("Fetch", "unknown_topic", "an empty aborted_transactions array for a partition "
         "refused before reading, as Kafka's FetchResponse.partitionResponse"),
        ("AllocateProducerIds", "unknown_broker", "producer_id_start 0 with the error"),
        ("AlterPartition", "unknown_broker", "a request naming no topic is answered NONE "
         "before the broker epoch is checked, as Kafka's QuorumController"),
        ("ControllerRegistration", "no_incarnation_id",
         "a zero incarnation id is registered, as Kafka's"),
        ("DescribeCluster", "controller_endpoints_on_a_broker", _MISMATCHED),
        ("DescribeCluster", "broker_endpoints_on_a_controller", _MISMATCHED),
        ("FetchSnapshot", "wrong_cluster_id", "a top-level error lists no topics"),
        ("ListOffsets", "duplicate_partition", "a partition named twice is answered once"),
        ("DescribeProducers", "unknown_topic", _WORDED + " (a topic's error carries one)"),
        ("DescribeProducers", "invalid_topic_name", "Kafka 4.4's Topic.validate message"),
        ("InitProducerId", "transactional_id", "NOT_COORDINATOR until __transaction_state "
         "exists, from the transaction coordinator"),
        ("WriteTxnMarkers", "same_producer_epoch_without_a_transaction",
         "a TV2 marker at the current epoch with no transaction open is the coordinator's "
         "retry: written again, as Kafka 4.4's ProducerAppendInfo"),
    )),
]


def excepted(api: str, case: str, path: str, values: Values) -> Difference | None:
    return next((e for e in EXCEPTIONS if e.covers(api, case, path, values)), None)


def known_defect(api: str, case: str, path: str, values: Values) -> Difference | None:
    return next((d for d in KNOWN_DEFECTS if d.covers(api, case, path, values)), None)


def fixed(api: str, case: str) -> Fixed | None:
    return next((f for f in FIXED if f.covers(api, case)), None)
