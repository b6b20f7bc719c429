"""The claim of /controller and /controller_epoch, /migration's creation and the fencing of
every migration write (migration-plan §5), on the simulated ZooKeeper from captured phases."""

from __future__ import annotations

import pytest
from migration_captures import znode_dump

from pykraft.migration.fencing import (
    EMPTY_STATE,
    PERSISTENT_ZK_PATHS,
    ControllerMovedError,
    MigrationClientError,
    MigrationFencedError,
    ZkMigrationLeadershipState,
    claim_with,
    fenced_multis,
    fenced_with,
    get_or_create_migration_with,
    set_migration_with,
)
from pykraft.migration.zk_ops import (
    CheckOp,
    CreateOp,
    DeleteOp,
    SetDataOp,
    ZkError,
    ZkOp,
    ZkUnavailableError,
)
from pykraft.migration.znodes import ControllerZNode
from pykraft.testing.sim_zookeeper import LOADED_SESSION, SimZkSession, SimZooKeeper

CONTROLLER_3000 = EMPTY_STATE.with_new_kraft_controller(3000, 5)


def session(dump_name: str) -> SimZkSession:
    return SimZooKeeper.from_dump(znode_dump(dump_name)).session()


def test_the_first_driver_creates_migration_as_kafka_did() -> None:
    client = session("znodes-A-zk-cluster.json")
    assert client.get("/migration") is None
    state = get_or_create_migration_with(client)
    assert state == EMPTY_STATE.with_migration_zk_version(0)
    created, captured = client.get("/migration"), znode_dump("znodes-B1-controllers-up.json")
    assert created is not None and created.raw == captured["/migration"]["raw"].encode()
    assert all(client.get(path) is not None for path in PERSISTENT_ZK_PATHS)


def test_a_later_driver_reads_migration() -> None:
    client = session("znodes-B3-dual-write.json")
    state = get_or_create_migration_with(client)
    assert (state.kraft_controller_id, state.kraft_metadata_offset,
            state.migration_zk_version) == (3000, 230, 138)
    assert state.initial_migration_complete


def test_a_claim_replaces_a_zk_brokers_controller_znode() -> None:
    client = session("znodes-B1-controllers-up.json")  # broker 1 is the ZK controller
    state = claim_with(client, CONTROLLER_3000, timestamp_ms=1796075364413)
    assert (state.zk_controller_epoch, state.zk_controller_epoch_zk_version) == (2, 2)
    controller, epoch = client.get("/controller"), client.get("/controller_epoch")
    assert controller is not None and controller.raw == \
        b'{"version":2,"brokerid":3000,"timestamp":"1796075364413","kraftControllerEpoch":5}'
    assert epoch is not None and (epoch.raw, epoch.version) == (b"2", 2)
    assert client.zk.stat("/controller") == (0, 0, False)  # persistent now


def test_a_claim_creates_controller_when_no_zk_broker_holds_it() -> None:
    client = session("znodes-B1-controllers-up.json")
    client.zk.expire(LOADED_SESSION)  # the ZK brokers' sessions end: /controller goes
    state = claim_with(client, CONTROLLER_3000, timestamp_ms=1)
    assert state.zk_controller_epoch == 2
    found = client.get("/controller")
    assert found is not None and found.raw is not None
    assert ControllerZNode.decode(found.raw) == ControllerZNode(3000, 1, 5)


def test_a_claim_needs_a_controller_epoch() -> None:
    client = SimZooKeeper().session()
    with pytest.raises(MigrationClientError, match="no ZK controller epoch"):
        claim_with(client, CONTROLLER_3000, timestamp_ms=1)


def claimed_b2() -> tuple[SimZkSession, ZkMigrationLeadershipState]:
    client = session("znodes-B2-migrated.json")
    return client, get_or_create_migration_with(client).with_zk_controller(4, 4)


def test_fenced_multis_check_the_epoch_and_set_migration_in_the_last() -> None:
    _, state = claimed_b2()
    requests: list[ZkOp] = [CreateOp("/a", b""), DeleteOp("/b")]
    first, last = fenced_multis(requests, state)
    assert first == [CheckOp("/controller_epoch", 4), CheckOp("/migration", 32), requests[0]]
    assert last == [CheckOp("/controller_epoch", 4),
                    SetDataOp("/migration", state.znode().encode(), 32), requests[1]]


def test_fenced_writes_move_migration_once_per_batch() -> None:
    client, state = claimed_b2()
    results, version = fenced_with(client, [CreateOp("/x", b""), CreateOp("/y", b"")], state)
    assert [r.error for r in results] == [ZkError.OK, ZkError.OK] and version == 33
    results, version = fenced_with(client, [CreateOp("/x", b"")], state.with_migration_zk_version(
        33))
    assert results[0].error is ZkError.NODE_EXISTS and version == 33  # nothing applied


def test_a_fenced_write_at_an_old_migration_version_is_fatal() -> None:
    client, state = claimed_b2()
    set_migration_with(client, state)  # another KRaft controller moved /migration
    with pytest.raises(MigrationFencedError):
        fenced_with(client, [CreateOp("/x", b"")], state)
    assert client.get("/x") is None


def test_a_fenced_write_needs_a_claim() -> None:
    client = session("znodes-B2-migrated.json")
    with pytest.raises(MigrationClientError, match="claimed"):
        fenced_with(client, [CreateOp("/x", b"")], get_or_create_migration_with(client))


def test_writes_stop_once_another_controller_claimed() -> None:
    client, state = claimed_b2()
    claim_with(client.zk.session(), get_or_create_migration_with(client)
               .with_new_kraft_controller(3002, 7), timestamp_ms=1)
    with pytest.raises(ControllerMovedError):
        fenced_with(client, [CreateOp("/x", b"")], state)
    assert client.get("/x") is None


def test_the_claim_outlives_a_session_expiry() -> None:
    """/controller is persistent once a KRaft controller claimed it: a new session after an
    expiry writes on under the same fencing, and a ZooKeeper outage only delays it."""
    client, state = claimed_b2()
    client.zk.expire(client.session_id)
    with pytest.raises(ZkUnavailableError):
        fenced_with(client, [CreateOp("/x", b"")], state)
    client.reconnect()
    client.zk.available = False
    with pytest.raises(ZkUnavailableError):
        fenced_with(client, [CreateOp("/x", b"")], state)
    client.zk.available = True
    results, version = fenced_with(client, [CreateOp("/x", b"")], state)
    assert results[0].ok and version == state.migration_zk_version + 1
    assert client.zk.stat("/controller") == (0, 0, False)
