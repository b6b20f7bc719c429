"""pykraft's controllers migrate a real Kafka 3.9 ZooKeeper cluster (issue 32, migration-plan
§4-§8, §10): the reference procedure (``reference_procedure``, ``run.sh``) with the three KRaft
controllers pykraft's (``python -m pykraft server`` on the same properties, formatted by
``pykraft storage format`` with ZooKeeper's cluster id at metadata.version 3.9-IV0) and the
brokers Kafka 3.9.1's.

A builds the ZooKeeper cluster; B1 starts the controllers in migration mode; B2 rolls the
brokers into migration mode until the load runs: the active controller's driver goes through
Kafka's states in Kafka's order (the ``pykraft.migration.driver`` logger) and loads the
reference run's 30 records, and its metadata log, dumped by Kafka 3.9's ``kafka-dump-log
--cluster-metadata-decoder``, holds the load Kafka's controllers wrote in the reference run
(``captured/metadata-D-finalised.records``) modulo what a second run makes anew; the ZK
brokers, fed LeaderAndIsr / UpdateMetadata by the pykraft controller, keep serving. B3 makes
run.sh's changes through the ZK brokers and finds them in ZooKeeper as Kafka's controllers
wrote them (``captured/znodes-B3-dual-write.json``). C rolls the brokers to Kafka 3.9 KRaft
brokers; D restarts the controllers without migration (finalisation): POST_MIGRATION, no
ZooKeeper write after, every message once, the group's offsets, topics, configs, ACLs and
SCRAM users as Kafka's tools showed them before. The module runs twice: C rolls the brokers
to pykraft brokers on their log dirs in one run, to Kafka 3.9 KRaft brokers in the other.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

import pytest
from metadata_dump import (
    LogRecord,
    changes_after_load,
    load_span,
    normalised,
    parse_dump,
    parse_records,
)
from process_harness import wait_for
from reference_procedure import (
    CAPTURED,
    COMPLETED,
    DRIVER_STATES,
    MIGRATION_LINES,
    TRANSITION,
    Timeline,
    across_runs,
    alice_sees_t_rf3,
    captured_znodes,
    comparable,
    described,
    migration_framing,
    phase_a,
    phase_b1,
    phase_b3,
    phase_b4,
    shown_migration_state,
    start_last_broker_in_migration,
    znodes,
)
from zk_cluster import (
    BROKER_IDS,
    CONFIGS,
    CONSUMER_GROUPS,
    CONTROLLER_IDS,
    TOPICS,
    BrokerMode,
    JavaProcess,
    ZkCluster,
    acknowledged_after,
    acknowledged_values,
    zk_cluster,
)

pytestmark = pytest.mark.timeout(1800)

_COMPLETION = re.compile(r"(\d+) records were generated in \d+ ms across (\d+) batches")


@dataclass
class Migrated:
    cluster: ZkCluster
    rolled_to: str
    """Whose KRaft brokers the ZK brokers become in C: ``pykraft`` or ``kafka``."""
    active: int
    """The pykraft controller that ran the load."""
    completion: str
    log: list[LogRecord]
    """The active controller's metadata log right after the load."""
    timeline: Timeline
    unavailable_s: float
    """From the last ZK broker's registration with the controllers to the load's completion
    (their log lines): the metadata unavailability window."""
    producer: JavaProcess
    """Kafka's VerifiableProducer (idempotent, acks=all) writing t-rf3 from the end of A
    through D (values ``<THROUGH>.<i>``)."""


#: the value prefix of the producer that writes through the whole migration
THROUGH = 7


def tagged(values: list[str]) -> list[str]:
    """The values the phases' console producers wrote (``<phase>-<i>``), not the
    producer's writing through."""
    return [value for value in values if not value.startswith(f"{THROUGH}.")]


@pytest.fixture(scope="module", params=["pykraft", "kafka"])
def migrated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Migrated]:
    timeline = Timeline()
    with zk_cluster(tmp_path_factory.mktemp(f"migration-to-{request.param}"),
                    scram_listener=True,
                    request_logs=True, pykraft_controllers=True) as cluster:
        with timeline.phase("A"):
            phase_a(cluster)
        producer = cluster.start_verifiable_producer("t-rf3", 10**6, per_second=20,
                                                     prefix=THROUGH)
        try:
            acknowledged_after(producer, 0)
            cluster_id = cluster.cluster_id()
            with timeline.phase("B1"):
                phase_b1(cluster, cluster_id)
            with timeline.phase("B2"):
                last = start_last_broker_in_migration(cluster)
                registered = cluster.broker(last).wait_line(
                    f"Successfully registered broker {last}")
                active, line = cluster.wait_controller_line(COMPLETED)
                cluster.wait_broker(last)
                cluster.controller(active).wait_line("to DUAL_WRITE state")
                cluster.wait_no_under_replicated()
            log = parse_dump(cluster.dump_metadata(active))
            yield Migrated(cluster, request.param, active, line, log, timeline,
                           (_logged_at(line) - _logged_at(registered)).total_seconds(),
                           producer)
        finally:
            producer.terminate()
            producer.await_stop()


def test_the_driver_goes_through_kafkas_states(migrated: Migrated) -> None:
    """The active pykraft controller's driver went through Kafka's states in Kafka's order
    and loaded the reference run's 30 records in one batch, 3 brokers seen."""
    output = migrated.cluster.controller(migrated.active).output()
    steps = TRANSITION.findall(output)
    assert steps[-len(DRIVER_STATES) + 1:] == list(itertools.pairwise(DRIVER_STATES)), steps
    assert _COMPLETION.findall(migrated.completion) == [("30", "1")], migrated.completion
    assert "Saw 3 brokers in the migrated metadata [1, 2, 3]." in migrated.completion
    print(f"[pykraft migration] metadata unavailable for {migrated.unavailable_s:.1f} s "
          f"(last ZK broker registered with KRaft to the load committed)", flush=True)


def test_the_load_is_kafkas(migrated: Migrated) -> None:
    """pykraft's metadata log, dumped by Kafka 3.9's decoder, holds the load Kafka's
    controllers wrote in the reference run, modulo run-made ids and placements; its
    bootstrap records and its transactions and migration states up to the load's end are
    those of Kafka's log record for record."""
    reference_log = parse_records((CAPTURED / "metadata-D-finalised.records").read_text())
    assert len(load_span(migrated.log)) == 30
    assert across_runs(migrated.log) == across_runs(reference_log)
    assert ([normalised(r) for r in migrated.log[:4]]
            == [normalised(r) for r in reference_log[:4]])  # the bootstrap transaction
    framing = migration_framing(migrated.log)
    assert framing == migration_framing(reference_log)[:len(framing)]
    assert [state for kind, state in framing if kind == "ZK_MIGRATION_STATE_RECORD"] == [
        {"zkMigrationState": 2}, {"zkMigrationState": 1}]


def test_the_zk_brokers_hear_from_the_pykraft_controller(migrated: Migrated) -> None:
    """Each ZK broker got LeaderAndIsr and UpdateMetadata from the pykraft controller (its
    request log), and the brokers still serve: produce and consume work (every value is
    counted once the producer writing through has stopped, in :func:`test_finalisation`)."""
    cluster = migrated.cluster
    for broker in BROKER_IDS:
        text = (cluster.base / f"{cluster.broker_name(broker)}.requests.log").read_text(
            errors="replace")
        for api in ("LEADER_AND_ISR", "UPDATE_METADATA"):
            assert f'"requestApiKeyName":"{api}"' in text, (broker, api)
        assert f'"controllerId":{migrated.active},"isKRaftController":true' in text, broker
    cluster.produce("t-rf3", 30, "B2")
    # bounded: the producer writing through keeps the topic busy (test_finalisation counts)
    assert len(cluster.consume("t-rf3", "--max-messages", "60", timeout_ms=20000)) == 60


def test_dual_write(migrated: Migrated) -> None:
    """run.sh's phase B3 through the ZK brokers (forwarded to the pykraft controllers): the
    topics, partitions, configs, SCRAM users, quotas, ACLs and change notifications in
    ZooKeeper are those Kafka's controllers wrote in the reference run."""
    cluster = migrated.cluster
    with migrated.timeline.phase("B3"):
        phase_b3(cluster)
    with cluster.zk_session() as zk:
        assert comparable(znodes(zk)) == captured_znodes("B3-dual-write")
    assert shown_migration_state(cluster) == MIGRATION_LINES  # pykraft's tools (§11)


def test_failover_while_dual_writing(migrated: Migrated) -> None:
    """run.sh's phase B4: the active controller SIGKILLed while dual-writing; another takes
    the driver over (claims ZooKeeper, syncs KRaft to it, sends the brokers full metadata)
    and ZooKeeper then holds what Kafka's did after the same failover; the killed one
    restarts and the brokers keep serving."""
    cluster = migrated.cluster
    with migrated.timeline.phase("B4"):
        successor = phase_b4(cluster, migrated.active)
    output = cluster.controller(successor).output()
    assert "Claimed ZK controller leadership" in output
    synced = re.findall(r"ZK writes when reconciling with KRaft state: (\{.*?\})", output)
    assert synced, output[-3000:]
    with cluster.zk_session() as zk:
        assert comparable(znodes(zk)) == captured_znodes("B4-failover")
    print(f"[pykraft migration] controller {successor} took over from {migrated.active}, "
          f"its sync to ZooKeeper: {synced[-1]}", flush=True)


def test_finalisation(migrated: Migrated) -> None:
    """C (run.sh's): the brokers rolled to KRaft brokers (pykraft's or Kafka 3.9's) against
    the pykraft controllers, ZooKeeper as Kafka's controllers left it; D:
    the controllers restarted without migration one by one, the active one writes
    POST_MIGRATION and ZooKeeper is written no more. Every acknowledged message is there
    once, the group's offsets kept, Kafka's tools show the same topics, configs, ACLs
    and SCRAM users as before the roll, and the log's changes after the load are those of
    Kafka's log in the reference run."""
    cluster, timeline = migrated.cluster, migrated.timeline
    before = described(cluster)
    with timeline.phase("C"):
        for broker in BROKER_IDS:
            if migrated.rolled_to == "pykraft":
                cluster.roll_broker_to_pykraft(broker)
            else:
                cluster.roll_broker(broker, BrokerMode.KRAFT)
            cluster.wait_no_under_replicated()
        cluster.produce("t-rf3", 30, "C")
        cluster.admin(CONFIGS, "--alter", "--entity-type", "topics", "--entity-name",
                      "t-new", "--add-config", "retention.ms=7200000")
        expected = captured_znodes("C-brokers-kraft")
        with cluster.zk_session() as zk:
            wait_for("t-new's config dual-written", lambda: comparable(
                znodes(zk, "/config/topics/t-new")) == {
                    "/config/topics/t-new": expected["/config/topics/t-new"]} or None)
            assert comparable(znodes(zk)) == expected
    with timeline.phase("D"):
        for controller in CONTROLLER_IDS:
            cluster.restart_controller(controller, migration=False)
        cluster.wait_no_under_replicated()
        # PRE_MIGRATION, MIGRATION, then POST_MIGRATION at the activation of a leader
        # without migration (the last restart makes one at the latest)
        wait_for("POST_MIGRATION in the leader's metadata log",
                 lambda: migration_states(cluster) == [2, 1, 3] or None, 120.0)
    assert described(cluster) == before
    assert shown_migration_state(cluster) == []  # finalised: the controllers do not migrate
    with cluster.zk_session() as zk:
        finalised = znodes(zk)
    cluster.admin(CONFIGS, "--alter", "--entity-type", "topics", "--entity-name", "t-rf3",
                  "--add-config", "retention.ms=1800000")
    cluster.admin(TOPICS, "--create", "--topic", "t-after", "--partitions", "1",
                  "--replication-factor", "3")
    cluster.produce("t-rf3", 30, "D")
    producer = migrated.producer
    acknowledged_after(producer, len(acknowledged_values(producer)))  # after D too
    producer.terminate()
    producer.await_stop()
    with cluster.zk_session() as zk:
        assert znodes(zk) == finalised  # no ZooKeeper write once finalised
    values = cluster.consume("t-rf3", timeout_ms=20000)
    assert sorted(tagged(values)) == sorted(f"{tag}-{i}" for tag in ("A", "B2", "B3", "C", "D")
                                            for i in range(1, 31))
    # every value acknowledged to the producer writing through B1-D is there, and no value
    # twice (those it sent without seeing their acknowledgement before it stopped may be
    # there too, once)
    streamed = acknowledged_values(producer)
    assert len(values) == len(set(values)) and set(streamed) <= set(values)
    # the whole log's changes after the load (B3's, C's, POST_MIGRATION, D's) are those of
    # Kafka's controllers in the reference run, which made the same changes
    reference_log = parse_records((CAPTURED / "metadata-D-finalised.records").read_text())
    log = parse_dump(cluster.dump_metadata(cluster.quorum_leader()))
    assert changes_after_load(log) == changes_after_load(reference_log)
    group = cluster.admin(CONSUMER_GROUPS, "--describe", "--group", "g1")
    offsets = [int(row.split()[3]) for row in group.splitlines()
               if row.split()[1:2] == ["t-rf3"]]
    assert sum(offsets) == 30, group
    assert alice_sees_t_rf3(cluster, "alice-secret")
    assert not alice_sees_t_rf3(cluster, "not-alices")
    print(f"[pykraft migration, brokers rolled to {migrated.rolled_to}] phases: "
          f"{timeline.seconds}; {len(streamed)} values acknowledged to the producer writing "
          f"through B1-D, each once in t-rf3", flush=True)


def _logged_at(line: str) -> datetime:
    """When a Kafka log4j line (``[2026-12-01 02:09:44,670] ...``) or a pykraft logfmt line
    (``ts=2026-12-01T02:09:44.998Z ...``) was logged, both in the machine's UTC."""
    if line.startswith("["):
        return datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f")
    return datetime.strptime(line[3:26], "%Y-%m-%dT%H:%M:%S.%f")


def migration_states(cluster: ZkCluster) -> list[int]:
    """The ZkMigrationState records of the quorum leader's metadata log, in order."""
    log = parse_dump(cluster.dump_metadata(cluster.quorum_leader()))
    return [r.data["zkMigrationState"] for r in log if r.type == "ZK_MIGRATION_STATE_RECORD"]


