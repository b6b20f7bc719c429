"""Record a real cluster's metadata history for the analytics tests and demos.

    .venv/bin/python scripts/record_cluster_history.py [--out tests/fixtures/recorded_history]

Starts a dynamic (KIP-853) quorum on 127.0.0.1: controller 1 alone, then controllers 2
and 3 added with ``add-controller`` (two voter-set changes), then 3 brokers. Over the
Kafka protocol, through a broker, it creates topics and deletes one; SIGKILLs a broker
until the controller fences it (its partitions get new leaders) and restarts it until it
is unfenced; SIGKILLs the active controller until another one leads a later epoch, creates
a topic in that epoch, restarts the killed controller and lets it catch up. Every step
waits on a condition it observes (bounded by ``--timeout``). Then every process is stopped
by PID (brokers first: their controlled shutdowns are recorded too) and the controllers'
metadata log directories are copied to ``--out`` with ``recording.json``: what happened,
for the tests to check the analytics against.

Segments are kept tiny (several files, a copy of a few tens of KB).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pykraft.errors import PyKraftError
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import QuorumInfo, describe_quorum, parse_host_port

T = TypeVar("T")
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "recorded_history"
MANIFEST = "recording.json"
PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",  # fencing within seconds of the kill
    "pykraft.shutdown.timeout.ms": "3000",
    "metadata.max.idle.interval.ms": "2000",  # fewer NoOpRecords: a smaller fixture
    "internal.metadata.log.segment.bytes": "1024",  # several segments (below the 8 MiB floor)
    # Snapshot thresholds stay Kafka's: no snapshot in so short a run, so the recorded
    # history is all log segments (the generated history in tests/spark covers snapshots).
}

TOPICS = {"orders": 3, "payments": 2, "scratch": 1}
DELETED = "scratch"
LIVE = {name: n for name, n in TOPICS.items() if name != DELETED}
LATE_TOPIC = "audit"  # created in the epoch after the controller failover
REQUEST_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_MS = int(REQUEST_TIMEOUT_S * 1000)  # the requests' int32 timeout_ms


def now_ms() -> int:
    """Wall-clock ms, the clock the controllers stamp their batches with."""
    return int(time.time() * 1000)


class RecordingError(PyKraftError):
    """A step of the recording did not reach its condition in time."""


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float) -> T:
    """Poll ``probe`` until it returns a value; processes we do not control give no other
    signal. Raises RecordingError at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise RecordingError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.2)


def broker_call(cluster: LocalCluster, broker_id: int, body: Any) -> Any:
    """One request to a broker's client listener; None when it cannot answer."""
    async def run() -> Any:
        host, port = parse_host_port(cluster.nodes[broker_id].address)
        conn = await asyncio.wait_for(ClientConnection.open(
            host, port, client_id="record-history", ours=listener_ranges(Listener.BROKER)),
            REQUEST_TIMEOUT_S)
        try:
            return await asyncio.wait_for(conn.request(body), REQUEST_TIMEOUT_S)
        finally:
            conn.close()
    try:
        return asyncio.run(run())
    except (PyKraftError, OSError, TimeoutError):
        return None


def fenced_brokers(cluster: LocalCluster, via: int) -> dict[int, bool] | None:
    answer = broker_call(cluster, via, DescribeClusterRequest(include_fenced_brokers=True))
    return None if answer is None else {b.broker_id: b.is_fenced
                                        for b in answer.brokers}


def partition_leaders(cluster: LocalCluster, via: int) -> dict[str, list[int]] | None:
    """Topic -> leader of each partition, as broker ``via`` knows them."""
    answer = broker_call(cluster, via, MetadataRequest(
        topics=None, allow_auto_topic_creation=False,
        include_topic_authorized_operations=False))
    if answer is None:
        return None
    return {str(t.name): [int(p.leader_id) for p in sorted(
        t.partitions, key=lambda p: int(p.partition_index))] for t in answer.topics}


def create_topic(cluster: LocalCluster, via: int, name: str, partitions: int) -> bool | None:
    answer = broker_call(cluster, via, CreateTopicsRequest(
        topics=(CreatableTopic(name=name, num_partitions=partitions,
                               replication_factor=3, assignments=(), configs=()),),
        timeout_ms=REQUEST_TIMEOUT_MS, validate_only=False))
    if answer is None:
        return None
    code = answer.topics[0].error_code
    return True if code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS) else None


def delete_topic(cluster: LocalCluster, via: int, name: str) -> bool | None:
    answer = broker_call(cluster, via, DeleteTopicsRequest(
        topics=(DeleteTopicState(name=name),),
        timeout_ms=REQUEST_TIMEOUT_MS))
    if answer is None:
        return None
    code = answer.responses[0].error_code
    return True if code in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) else None


def quorum(cluster: LocalCluster) -> QuorumInfo | None:
    """The quorum as any running controller describes it, once its HWM is known."""
    for node_id in cluster.controllers:
        if not cluster.is_running(node_id):
            continue
        try:
            info = asyncio.run(describe_quorum(
                parse_host_port(cluster.nodes[node_id].address), timeout_s=1.0))
        except PyKraftError:
            continue
        if info.high_watermark > 0:
            return info
    return None


class Recorder:
    """The scripted history, step by step, with what it observed."""

    def __init__(self, cluster: LocalCluster, timeout_s: float) -> None:
        self.cluster = cluster
        self.timeout_s = timeout_s
        self.facts: dict[str, Any] = {"cluster_id": cluster.cluster_id,
                                      "controllers": cluster.controllers,
                                      "brokers": cluster.brokers}

    def wait(self, what: str, probe: Callable[[], T | None]) -> T:
        print(f"  waiting for {what}", file=sys.stderr)
        return wait_for(what, probe, self.timeout_s)

    def run(self) -> dict[str, Any]:
        self.start_quorum()
        self.start_brokers()
        self.create_topics()
        self.fence_and_unfence_a_broker()
        self.fail_over_the_controller()
        return self.facts

    def start_quorum(self) -> None:
        cluster = self.cluster
        for node_id in cluster.controllers:
            cluster.start(node_id)
        self.wait("an active controller", lambda: quorum(cluster))
        cluster.add_voters(timeout_s=self.timeout_s)
        voters = self.wait("3 voters", lambda: info if (info := quorum(cluster)) is not None
                           and len(info.voters) == 3 else None)
        ids = sorted(v.replica_id for v in voters.voters)
        # controller 1 alone, then one more per add-controller, in id order
        self.facts["voter_sets"] = [ids[:n] for n in range(1, len(ids) + 1)]

    def start_brokers(self) -> None:
        cluster = self.cluster
        for node_id in cluster.brokers:
            cluster.start(node_id)
        witness = cluster.brokers[-1]
        self.wait("3 unfenced brokers", lambda: True if (
            seen := fenced_brokers(cluster, witness)) is not None and sum(
            not fenced for fenced in seen.values()) == 3 else None)

    def create_topics(self) -> None:
        cluster, via = self.cluster, self.cluster.brokers[-1]
        for name, partitions in TOPICS.items():
            self.wait(f"topic {name} created", self._creator(via, name, partitions))
        self.wait("every partition led", lambda: self._led(via, TOPICS))
        self.wait(f"topic {DELETED} deleted", lambda: delete_topic(cluster, via, DELETED))
        self.facts["topics"] = TOPICS
        self.facts["deleted_topic"] = DELETED

    def _creator(self, via: int, name: str, partitions: int) -> Callable[[], bool | None]:
        return lambda: create_topic(self.cluster, via, name, partitions)

    def _led(self, via: int, topics: dict[str, int]) -> dict[str, list[int]] | None:
        leaders = partition_leaders(self.cluster, via)
        if leaders is None or any(len(leaders.get(t, [])) != n or -1 in leaders[t]
                                  for t, n in topics.items()):
            return None
        return leaders

    def fence_and_unfence_a_broker(self) -> None:
        cluster = self.cluster
        victim, witness = cluster.brokers[0], cluster.brokers[-1]
        before = self.wait("every partition led", lambda: self._led(witness, LIVE))
        self.facts["broker_killed_ms"] = now_ms()
        cluster.kill(victim)
        self.wait(f"broker {victim} fenced", lambda: True if (
            seen := fenced_brokers(cluster, witness)) and seen.get(victim) else None)
        self.wait(f"no partition led by {victim}", lambda: True if (
            now := partition_leaders(cluster, witness)) is not None and all(
            victim not in now.get(t, []) for t in before) else None)
        self.facts["broker_restarted_ms"] = now_ms()
        cluster.start(victim)
        self.wait(f"broker {victim} unfenced", lambda: True if (
            seen := fenced_brokers(cluster, witness)) and seen.get(victim) is False else None)
        self.facts["fenced_broker"] = victim
        self.facts["leaders_before_fencing"] = before

    def fail_over_the_controller(self) -> None:
        cluster = self.cluster
        old = self.wait("an active controller", lambda: quorum(cluster))
        self.facts["controller_killed_ms"] = now_ms()
        cluster.kill(old.leader_id)
        new = self.wait("a new active controller", lambda: info if (
            info := quorum(cluster)) is not None and info.leader_epoch > old.leader_epoch
            and info.leader_id != old.leader_id else None)
        via = cluster.brokers[-1]
        self.wait(f"topic {LATE_TOPIC} created", self._creator(via, LATE_TOPIC, 1))
        self.wait(f"topic {LATE_TOPIC} led", lambda: self._led(via, {LATE_TOPIC: 1}))
        cluster.start(old.leader_id)
        self.wait(f"controller {old.leader_id} caught up", lambda: self._caught_up(
            old.leader_id))
        self.facts["late_topic"] = LATE_TOPIC
        self.facts["killed_controller"] = {"id": old.leader_id, "epoch": old.leader_epoch}
        self.facts["new_controller"] = {"id": new.leader_id, "epoch": new.leader_epoch}

    def _caught_up(self, node_id: int) -> bool | None:
        info = quorum(self.cluster)
        if info is None:
            return None
        replica = next((v for v in info.voters if v.replica_id == node_id), None)
        return True if replica is not None and replica.log_end_offset >= \
            info.high_watermark else None


def copy_controller_logs(cluster: LocalCluster, out: Path) -> None:
    """Each controller's log directory, as ``out/node-N/data``; lock files left out."""
    for node_id in cluster.controllers:
        shutil.copytree(cluster.nodes[node_id].data, out / f"node-{node_id}" / "data",
                        ignore=shutil.ignore_patterns("*.lock", ".lock"))


def record(out: Path, workdir: Path, timeout_s: float) -> dict[str, Any]:
    """Run the whole history in ``workdir`` and leave the copy and manifest in ``out``."""
    if out.exists() and any(out.iterdir()) and not (out / MANIFEST).exists():
        raise RecordingError(f"{out} is not empty and holds no {MANIFEST}: not replacing it")
    cluster = LocalCluster.create(workdir / "cluster", 3, PROPERTIES, brokers=3, dynamic=True)
    started = time.time()
    try:
        facts = Recorder(cluster, timeout_s).run()
        for broker in cluster.brokers:  # controlled shutdowns, recorded by the controllers
            cluster.stop(broker)
    finally:
        cluster.stop_all()  # SIGTERM by PID, bounded wait, then SIGKILL
    facts["recorded_s"] = round(time.time() - started, 1)
    shutil.rmtree(out, ignore_errors=True)
    copy_controller_logs(cluster, out)
    (out / MANIFEST).write_text(json.dumps(facts, indent=2) + "\n")
    return facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the copy goes")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per step")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the cluster (configs, server logs) here; default: a "
                             "temporary directory, removed afterwards")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="record-history-") as scratch:
        workdir = args.workdir or Path(scratch)
        try:
            facts = record(args.out, workdir, args.timeout)
        except RecordingError as exc:
            sys.exit(f"recording failed: {exc} (rerun with --workdir to keep server logs)")
    print(json.dumps(facts, indent=2))


if __name__ == "__main__":
    main()
