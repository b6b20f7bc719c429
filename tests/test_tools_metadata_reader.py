"""The tools read the ZooKeeper migration state from the metadata log (KIP-866): a scripted
raft leader on 127.0.0.1 serves a snapshot in chunks and a log tail whose Fetch answers end
inside a batch and run past the high watermark; only committed records count, and
``metadata-quorum describe`` / ``features describe`` print pykraft's extra line."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from fake_controller import FakeController, fake_controllers
from pykraft.cli.main import app
from pykraft.image.features import ZkMigrationState
from pykraft.messages.kafka import describe_cluster_response as dc_resp
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import encode_batch
from pykraft.records.metadata import encode_metadata_record
from pykraft.records.metadata_records import (
    FeatureLevelRecord,
    TopicRecord,
    ZkMigrationStateRecord,
)
from pykraft.records.snapshot import snapshot_batches
from pykraft.runtime.kafka_client import open_with_timeout
from pykraft.tools.metadata_reader import MetadataReadError, read_committed_image
from pykraft.tools.quorum_tool import TOOL_RANGES

pytestmark = pytest.mark.timeout(60)
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
EPOCH = 4
SNAPSHOT = OffsetAndEpoch(3, 2)  # the snapshot holds offsets 0-2
HIGH_WATERMARK = 6
CHUNK = 64  # the leader's FetchSnapshot chunks: several for one snapshot


def _state(state: ZkMigrationState) -> bytes:
    return encode_metadata_record(ZkMigrationStateRecord(zk_migration_state=state))


def _topic(name: str) -> bytes:
    return encode_metadata_record(TopicRecord(name=name, topic_id=uuid.uuid5(uuid.NAMESPACE_DNS,
                                                                             name)))


SNAPSHOT_BYTES = b"".join(snapshot_batches(
    epoch=SNAPSHOT.epoch, last_contained_timestamp=1, clock=lambda: 1,
    batches=[[encode_metadata_record(FeatureLevelRecord(name="metadata.version",
                                                        feature_level=21)),
              _state(ZkMigrationState.PRE_MIGRATION), _topic("in-the-snapshot")]]))
#: Offsets 3-4 (committed), 5 (committed), 6 (above the high watermark).
TAIL = [encode_batch(3, [(None, _state(ZkMigrationState.MIGRATION)), (None, _topic("loaded"))],
                     partition_leader_epoch=EPOCH, timestamp=2),
        encode_batch(5, [(None, _topic("committed"))], partition_leader_epoch=EPOCH,
                     timestamp=3),
        encode_batch(6, [(None, _topic("uncommitted")),
                         (None, _state(ZkMigrationState.POST_MIGRATION))],
                     partition_leader_epoch=EPOCH, timestamp=4)]


def leader_log(request: Any) -> Any:
    """A leader whose log starts at the snapshot: Fetch at 0 is sent to it. A Fetch of the
    tail from its start ends halfway into the second batch; from the second batch on, it
    carries the rest whole, the batch above the high watermark included."""
    if isinstance(request, rpc.FetchSnapshotRequest):
        position = request.topics[0].partitions[0].position
        return rpc.fetch_snapshot_response(
            ErrorCode.NONE, 1, EPOCH, snapshot_id=SNAPSHOT, size=len(SNAPSHOT_BYTES),
            position=position, chunk=SNAPSHOT_BYTES[position:position + CHUNK])
    offset = request.topics[0].partitions[0].fetch_offset
    if offset < SNAPSHOT.offset:
        return rpc.fetch_response(ErrorCode.NONE, 1, EPOCH, high_watermark=HIGH_WATERMARK,
                                  snapshot_id=SNAPSHOT, log_start_offset=SNAPSHOT.offset)
    held = [batch for batch in TAIL if int.from_bytes(batch[:8], "big") >= offset]
    records = (held[0] + held[1][:len(held[1]) // 2] if len(held) == len(TAIL)
               else b"".join(held))
    return rpc.fetch_response(ErrorCode.NONE, 1, EPOCH, high_watermark=HIGH_WATERMARK,
                              records=records, log_start_offset=SNAPSHOT.offset)


def _quorum_answers(leader: Callable[[Any], Any]) -> Callable[[int, Any], Any]:
    def handle(api_key: int, body: Any) -> Any:
        if api_key == ApiKey.DESCRIBE_CLUSTER:
            return dc_resp.DescribeClusterResponse(
                error_code=ErrorCode.NONE, endpoint_type=2, cluster_id=CLUSTER_ID,
                controller_id=1, brokers=(dc_resp.DescribeClusterBroker(1, "127.0.0.1",
                                                                       ports[0]),))
        if api_key == ApiKey.DESCRIBE_QUORUM:
            return rpc.describe_quorum_response(1, EPOCH, HIGH_WATERMARK,
                                                [rpc.ReplicaRow(1, 7, 1, 1, None)], [])
        return leader(body)
    ports: list[int] = []
    handle.ports = ports  # type: ignore[attr-defined]
    return handle


@pytest.fixture
def make() -> Iterator[Callable[..., FakeController]]:
    with fake_controllers() as started:
        yield started


def _controller(make: Callable[..., FakeController], leader: Callable[[Any], Any], *,
                ready: bool) -> FakeController:
    handler = _quorum_answers(leader)
    controller = make(1, handler, zk_migration_ready=ready)
    handler.ports.append(controller.port)  # type: ignore[attr-defined]
    return controller


def _read(controller: FakeController, deadline: float = float("inf")) -> Any:
    async def read() -> Any:
        connection = await open_with_timeout(*controller.address, client_id="test",
                                             ours=TOOL_RANGES, timeout_s=10)
        try:
            return await read_committed_image(connection, cluster_id=CLUSTER_ID,
                                              leader_epoch=EPOCH, deadline=deadline)
        finally:
            connection.close()
    return asyncio.run(read())


def test_the_committed_image_is_the_snapshot_then_the_log_to_the_high_watermark(
        make: Callable[..., FakeController]) -> None:
    controller = _controller(make, leader_log, ready=True)
    image = _read(controller)
    assert image.features.zk_migration_state == ZkMigrationState.MIGRATION
    assert sorted(image.topics.by_name) == ["committed", "in-the-snapshot", "loaded"]
    fetched = [r.topics[0].partitions[0].fetch_offset for r in controller.requests(ApiKey.FETCH)]
    assert fetched == [0, 3, 5]  # snapshot, tail, again after the batch cut in two
    chunks = controller.requests(ApiKey.FETCH_SNAPSHOT)
    assert len(chunks) == -(-len(SNAPSHOT_BYTES) // CHUNK)
    assert {r.replica_id for r in chunks} == {-1}  # a non-replica, as Kafka's leader expects


def test_the_tools_print_the_state_of_a_migrating_quorum(
        make: Callable[..., FakeController]) -> None:
    controller = _controller(make, leader_log, ready=True)
    bootstrap = f"127.0.0.1:{controller.port}"
    status = CliRunner().invoke(app, ["metadata-quorum", "--bootstrap-controller", bootstrap,
                                      "describe", "--status"])
    assert status.exit_code == 0, status.output
    assert status.output.splitlines()[-1] == "ZkMigrationState:       MIGRATION"
    as_json = CliRunner().invoke(app, ["metadata-quorum", "--bootstrap-controller", bootstrap,
                                       "describe", "--status", "--json"])
    assert '"zkMigrationState": "MIGRATION"' in as_json.output
    features = CliRunner().invoke(app, ["features", "--bootstrap-controller", bootstrap,
                                        "describe"])
    assert features.exit_code == 0, features.output
    assert features.output.splitlines()[-1] == "ZkMigrationState: MIGRATION"


def test_no_line_and_no_fetch_when_the_controller_does_not_migrate(
        make: Callable[..., FakeController]) -> None:
    controller = _controller(make, leader_log, ready=False)
    status = CliRunner().invoke(app, ["metadata-quorum", "--bootstrap-controller",
                                      f"127.0.0.1:{controller.port}", "describe", "--status"])
    assert status.exit_code == 0, status.output
    assert status.output.splitlines()[-1].startswith("CurrentObservers:")
    assert controller.requests(ApiKey.FETCH) == []


def test_an_unauthorized_principal_gets_the_reason_and_the_rest_of_the_status(
        make: Callable[..., FakeController]) -> None:
    controller = _controller(make, lambda request: rpc.fetch_error(
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED), ready=True)
    status = CliRunner().invoke(app, ["metadata-quorum", "--bootstrap-controller",
                                      f"127.0.0.1:{controller.port}", "describe", "--status"])
    assert status.exit_code == 0, status.output
    assert status.output.splitlines()[-1] == (
        "ZkMigrationState:       unknown (Fetch of the metadata log: "
        "CLUSTER_AUTHORIZATION_FAILED: reading the metadata log needs ClusterAction)")


def test_a_diverged_log_is_an_error_to_read_again(
        make: Callable[..., FakeController]) -> None:
    controller = _controller(make, lambda request: rpc.fetch_response(
        ErrorCode.NONE, 1, EPOCH, high_watermark=HIGH_WATERMARK,
        diverging=OffsetAndEpoch(0, 1)), ready=True)
    with pytest.raises(MetadataReadError, match="diverged"):
        _read(controller)


def test_the_replication_table_does_not_read_the_log(make: Callable[..., FakeController]
                                                     ) -> None:
    controller = _controller(make, leader_log, ready=True)
    table = CliRunner().invoke(app, ["metadata-quorum", "--bootstrap-controller",
                                     f"127.0.0.1:{controller.port}", "describe",
                                     "--replication"])
    assert table.exit_code == 0, table.output
    assert "ZkMigrationState" not in table.output
    assert controller.requests(ApiKey.FETCH) == []


def test_a_leader_that_never_lets_the_read_end_meets_the_deadline(
        make: Callable[..., FakeController]) -> None:
    """Each Fetch is sent to the snapshot again, however far the reader got."""
    def endless(request: Any) -> Any:
        if isinstance(request, rpc.FetchSnapshotRequest):
            return leader_log(request)
        return rpc.fetch_response(ErrorCode.NONE, 1, EPOCH, high_watermark=HIGH_WATERMARK,
                                  snapshot_id=SNAPSHOT, log_start_offset=SNAPSHOT.offset)
    controller = _controller(make, endless, ready=True)
    with pytest.raises(MetadataReadError, match="before the deadline"):
        _read(controller, deadline=time.monotonic() + 1)
    assert len(controller.requests(ApiKey.FETCH)) > 2
