"""pykraft's own cluster tools against Kafka and against pykraft in the same state (issue 25,
item 4).

One Kafka cluster and one pykraft cluster (a controller and a broker each, the
StandardAuthorizer on both with ANONYMOUS as super user, so that the acls tool has ACLs to
add, list and remove) get the same runs of the ``pykraft`` CLI (:mod:`pykraft_tool_runs`),
in process through typer's CliRunner (most runs take milliseconds, a fresh interpreter a
second or more), one cluster after the other. After each run every broker has applied the
metadata the controller had committed (:func:`brokers_caught_up`), so that the next run
finds the change acknowledged to the tool on both softwares. Then the transactions runs
(:data:`pykraft_tool_runs.TXN`) over the transactions :mod:`txn_tool_runs` leaves open.
Every run's exit code, stdout and stderr must agree after :func:`kafka_tools.normalise`,
whose rules (and each run's masks) are the only differences forgiven:

* the cluster's own strings (its addresses, data directories, cluster id, scratch directory)
  become placeholders: they name the cluster, not what the tool did;
* base64 UUIDs (topic ids, directory ids) become ``<uuid>``: each cluster draws its own;
* epoch milliseconds become ``<ms>``: record timestamps, the quorum's fetch times;
* masks: the metadata log's offsets and the followers' lag (metadata-quorum's
  HighWatermark, LogEndOffset, Lag; the features' epoch): each controller writes its own
  registrations and NoOps; log-dirs' partition sizes: a batch's size depends on its records'
  timestamp deltas (varints), so on the machine's pace; the coordinator's port in
  consumer-groups' JSON (elsewhere it is part of ``<bootstrap>``);
* the lines of a consumer reading two partitions are sorted (they interleave as fetches
  return).

A difference that is Kafka's and pykraft's servers answering differently is a strict xfail
naming it (:data:`KNOWN`); the tool's own refusals are ``unsupported`` in the matrix
(:data:`UNSUPPORTED_RUNS`). :func:`test_tools_matrix` prints tool x operation (``-s``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import txn_tool_runs
from kafka_tool_runs import write_files
from kafka_tools import (
    DIFFERS,
    SAME,
    ClusterTools,
    Outcome,
    ToolRun,
    difference,
    matrix,
    run_in_process,
    verdict,
)
from oracle_cluster import (
    KAFKA,
    PYKRAFT,
    ClusterSpec,
    KafkaInstall,
    Kind,
    OracleCluster,
    call,
    running,
)
from oracle_kafka import skip_module_off_ci
from pykraft_tool_runs import RUNS, TXN

from pykraft.protocol.apis import ApiKey
from pykraft.raft import rpc

skip_module_off_ci()

ALL = [*RUNS, *TXN]

CATCH_UP_TIMEOUT_S = 30.0
CATCH_UP_POLL_S = 0.01

#: both clusters: ACLs need an authorizer; a new group's first rebalance needs no delay; a
#: hanging transaction needs a leader that does not ask the coordinator (txn_tool_runs)
PROPERTIES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "group.initial.rebalance.delay.ms": "0",
    **txn_tool_runs.PROPERTIES,
}
UNSUPPORTED = "unsupported"
#: run name -> how Kafka's server and pykraft's answer differently
KNOWN = {
    "pykraft topics.describe before the cluster default":
        "Kafka 4.4's controller writes a cluster-level min.insync.replicas=1 at bootstrap "
        "(eligible leader replicas on at 4.4-IV2), which the topic shows; pykraft's does "
        "only with ELR on, which its default metadata.version 3.9-IV0 leaves off (the "
        "next run sets it on both)",
    "pykraft configs.describe broker --all": (
        "Kafka 4.4's keys and defaults, but pykraft also lists its own keys (metrics.*, "
        "pykraft.*), has no default for listeners (Kafka: PLAINTEXT://:9092) nor "
        "security.inter.broker.protocol (it follows inter.broker.listener.name) and no "
        "cluster-level min.insync.replicas (ELR)"),
    "pykraft metadata-quorum.remove-controller static voter":
        "Kafka refuses a zero directory id first (INVALID_REQUEST 'Remove voter request "
        "didn't include a valid voter', KafkaRaftClient); pykraft checks kraft.version "
        "first (UNSUPPORTED_VERSION)",
    "pykraft metadata-quorum.remove-controller other directory":
        "UNSUPPORTED_VERSION's message: Kafka 'Cluster doesn't support removing voter "
        "because the kraft.version feature is 0' (RemoveVoterHandler), pykraft 'kraft.version "
        "0: the voter set is static (controller.quorum.voters)'",
    "pykraft features.describe": "pykraft supports metadata.version up to 4.2-IV1 and "
                                 "finalizes 3.9-IV0, and none of eligible.leader.replicas, "
                                 "group, share, streams, transaction.version; Kafka 4.4 "
                                 "finalizes 4.4-IV2 and all of them",
    "pykraft features.describe (controller)": "as features.describe",
    "pykraft features.describe --json": "as features.describe",
    "pykraft features.upgrade group.version dry run": "pykraft's controller knows no "
                                                      "group.version",
}
#: run name -> what the tool does not serve (it refuses, alike on both clusters)
UNSUPPORTED_RUNS = {
    "pykraft configs.describe broker-loggers": "no dynamic logger levels (BROKER_LOGGER)",
    "pykraft configs.describe group configs": "no group configs",
}
#: operations of the tools no run makes, and why
NOT_RUN = [("pykraft metadata-quorum", "add-controller",
            "needs a new controller running as an observer (a third node per cluster)")]


@dataclass(frozen=True, slots=True)
class Results:
    outcomes: dict[Kind, dict[str, Outcome]]
    seconds: dict[Kind, float]


def brokers_caught_up(cluster: OracleCluster, timeout_s: float = CATCH_UP_TIMEOUT_S) -> None:
    """Until every broker has applied the metadata the controller had committed: a change
    the tool made is acknowledged once committed, and the next run must not find a broker
    that has not applied it yet (on either software). A broker's ApiVersions answer gives
    its image's offset as the finalized features' epoch (Kafka's and pykraft's alike)."""
    controller = cluster.controllers[0].listener("controller")
    quorum = call(controller, ApiKey.DESCRIBE_QUORUM, 2, rpc.describe_quorum_request())
    committed = int(quorum.topics[0].partitions[0].high_watermark) - 1
    deadline = time.monotonic() + timeout_s
    for broker in cluster.brokers:
        while int(call(broker.address, ApiKey.API_VERSIONS, 4, rpc.api_versions_request(
                "oracle")).finalized_features_epoch) < committed:
            assert time.monotonic() < deadline, (
                f"broker {broker.node_id} has not applied metadata offset {committed} "
                f"after {timeout_s:.0f} s")
            time.sleep(CATCH_UP_POLL_S)  # another process: polling is the only way to see it


@pytest.fixture(scope="module")
def results(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[Results]:
    base = tmp_path_factory.mktemp("pykraft-tools")
    started = time.monotonic()
    specs = [ClusterSpec(controllers=(kind,), brokers=(kind,), properties=PROPERTIES)
             for kind in (KAFKA, PYKRAFT)]
    with running(base, kafka, *specs) as clusters:
        outcomes, seconds = {}, {}
        for cluster in clusters:
            kind = cluster.spec.brokers[0]
            tools = ClusterTools(cluster, base / f"{kind}-files")
            write_files(tools.files)
            began = time.monotonic()
            outcomes[kind] = run_in_process(
                tools, RUNS, after_each=lambda c=cluster: brokers_caught_up(c))
            txn_tool_runs.open_transactions(cluster.bootstrap_servers)
            outcomes[kind].update(run_in_process(tools, TXN))
            seconds[kind] = time.monotonic() - began
    print(f"\n{len(ALL)} pykraft tool runs: {seconds[KAFKA]:.1f} s on Kafka, "
          f"{seconds[PYKRAFT]:.1f} s on pykraft; module set-up "
          f"{time.monotonic() - started:.1f} s")
    yield Results(outcomes, seconds)


@pytest.mark.parametrize("run", [
    pytest.param(run, id=run.name, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[run.name])]
                 if run.name in KNOWN else []) for run in ALL])
def test_pykraft_tool_gives_the_same_output_on_kafka(results: Results, run: ToolRun) -> None:
    kafka, pykraft = (results.outcomes[kind][run.name] for kind in (KAFKA, PYKRAFT))
    assert "Traceback" not in kafka.stderr + pykraft.stderr, (kafka.stderr, pykraft.stderr)
    assert (kafka.code, kafka.stdout, kafka.stderr) == (
        pykraft.code, pykraft.stdout, pykraft.stderr), difference(run, kafka, pykraft)


def test_tools_matrix(results: Results) -> None:
    rows = []
    for run in ALL:
        result = verdict(run, *(results.outcomes[kind][run.name] for kind in (KAFKA, PYKRAFT)))
        if run.name in UNSUPPORTED_RUNS and result == SAME:
            result = UNSUPPORTED
        rows.append((run.tool, run.operation, result,
                     KNOWN.get(run.name, UNSUPPORTED_RUNS.get(run.name, ""))))
    rows += [(name, operation, "not run", why) for name, operation, why in NOT_RUN]
    print("\n" + matrix(rows))
    counts = {label: sum(row[2] == label for row in rows)
              for label in (SAME, DIFFERS, UNSUPPORTED, "not run")}
    print(f"{counts}; {len(ALL)} runs per cluster: "
          + ", ".join(f"{kind} {s:.1f} s" for kind, s in results.seconds.items()))
    assert {f"{tool}.{operation}" for tool, operation, result, _ in rows
            if result == DIFFERS} == KNOWN.keys()
    assert {f"{tool}.{operation}" for tool, operation, result, _ in rows
            if result == UNSUPPORTED} == UNSUPPORTED_RUNS.keys()


def test_features_names_kafkas_metadata_version(results: Results, kafka: KafkaInstall) -> None:
    """``features describe`` against Kafka names the metadata.version Kafka finalizes by its
    release (4.4-IV2 for Kafka 4.4.0), as kafka-features.sh does, though pykraft supports
    no such level."""
    described = results.outcomes[KAFKA]["pykraft features.describe"]
    release = ".".join(kafka.version.split(".")[:2])
    assert f"FinalizedVersionLevel: {release}-IV" in described.stdout, described
    assert "UNKNOWN" not in described.stdout, described
