"""The active pykraft controller SIGKILLed during the load (issue 32's faults; migration-plan
§6; run.sh's ``FAULT_DURING_LOAD``): with ``zookeeper.metadata.migration.min.batch.size=1``
the load of the reference cluster takes one write per record; the controller that runs it
is killed once six have committed, and the next active controller aborts the open
transaction ("Controller failover") and loads again, as Kafka's did in the reference fault
run (``captured/fault-load/``): the same transactions, the same load; the brokers keep
serving.
"""

from __future__ import annotations

import pytest
from metadata_dump import LogRecord, parse_dump, parse_records
from process_harness import wait_for
from reference_procedure import (
    CAPTURED,
    COMPLETED,
    across_runs,
    migration_framing,
    phase_a,
    phase_b1,
    start_last_broker_in_migration,
)
from zk_cluster import (
    CONTROLLER_IDS,
    START_TIMEOUT_S,
    ZkCluster,
    zk_cluster,
)

pytestmark = pytest.mark.timeout(1800)

BATCH_COMMITTED = "Finished waiting for the metadata layer to commit 1 migration records"
KILL_AFTER_BATCHES = 6  # the reference fault run's trigger


def loading_controller(cluster: ZkCluster) -> int | None:
    """The controller that has committed ``KILL_AFTER_BATCHES`` single-record batches."""
    return next((c for c in CONTROLLER_IDS
                 if cluster.controller(c).output().count(BATCH_COMMITTED)
                 >= KILL_AFTER_BATCHES), None)


def test_controller_killed_during_the_load(tmp_path_factory: pytest.TempPathFactory) -> None:
    with zk_cluster(tmp_path_factory.mktemp("pykraft-load-fault"), pykraft_controllers=True,
                    scram_listener=True,
                    controller_properties={"zookeeper.metadata.migration.min.batch.size": "1"},
                    ) as cluster:
        phase_a(cluster)
        cluster_id = cluster.cluster_id()
        phase_b1(cluster, cluster_id)
        last = start_last_broker_in_migration(cluster)
        # the load starts at its registration: kill the controller running it mid-load
        killed = wait_for("six load batches committed", lambda: loading_controller(cluster),
                          START_TIMEOUT_S)
        cluster.controller(killed).kill()
        cluster.wait_broker(last)
        assert COMPLETED not in cluster.controller(killed).output(), "killed after the load"
        successor, _ = cluster.wait_controller_line(COMPLETED)
        cluster.controller(successor).wait_line("to DUAL_WRITE state")
        log = parse_dump(cluster.dump_metadata(successor))
        cluster.start_controller(killed, migration=True)
        cluster.wait_controller(killed)
        cluster.wait_no_under_replicated()
        cluster.produce("t-rf3", 30, "F")
        assert len(cluster.consume("t-rf3", timeout_ms=20000)) == 60
    reference = parse_records((CAPTURED / "fault-load" / "metadata-B2-migrated.records")
                              .read_text())
    assert migration_framing(log) == migration_framing(reference)
    assert across_runs(log) == across_runs(reference)
    aborted = [r for r in log if r.type == "ABORT_TRANSACTION_RECORD"]
    assert [r.data for r in aborted] == [{"reason": "Controller failover"}]
    print(f"[pykraft migration] controller {killed} killed after "
          f"{KILL_AFTER_BATCHES} load batches; {successor} loaded again; "
          f"{loaded_before_abort(log)} load records of the aborted load in the log",
          flush=True)


def loaded_before_abort(log: list[LogRecord]) -> int:
    """How many records the aborted load had written before its abort."""
    begin = next(i for i, r in enumerate(log) if r.data.get("name") == "ZK Migration")
    abort = next(i for i, r in enumerate(log) if r.type == "ABORT_TRANSACTION_RECORD")
    return abort - begin - 1
