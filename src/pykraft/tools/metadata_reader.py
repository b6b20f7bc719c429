"""The committed metadata image, read from the raft leader as a non-replica fetcher.

Some of what the metadata log holds no Kafka admin RPC carries: the ZooKeeper migration state
(KIP-866's ZkMigrationStateRecord) is one. A tool reads it where it lives: it fetches
``__cluster_metadata`` from the quorum's leader with replica id -1, which Kafka's leader
serves without counting the fetcher as a replica (``LeaderState.updateReplicaState`` ignores
ids below 0) and pykraft's likewise; first the leader's latest snapshot through FetchSnapshot
when the log starts after offset 0, then the log up to the high watermark of the first
answer, replayed into a :class:`MetadataImage` by the loader the brokers use. The principal
needs what a controller's Fetch needs: ClusterAction on the cluster, under an authorizer.
"""

from __future__ import annotations

import asyncio
import time

from pykraft.errors import ProtocolError
from pykraft.image.image import MetadataImage
from pykraft.image.loader import ImageLoader, image_from_snapshot
from pykraft.messages.kafka.fetch_response import PartitionData
from pykraft.messages.kafka.fetch_snapshot_response import PartitionSnapshot
from pykraft.protocol.errors import ErrorCode, error_name
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import complete_batches, iter_batches, records_field
from pykraft.runtime.kafka_client import ClientConnection

#: Bytes asked for per Fetch and per FetchSnapshot chunk: Kafka's raft fetch size (8 MiB).
FETCH_MAX_BYTES = 8 * 1024 * 1024
_NON_REPLICA = None  # rpc's requests write replica id -1 for no local id


class MetadataReadError(ProtocolError):
    """The leader refused the read (``error``, when it answered with one) or the quorum moved
    under it (a new leader, a snapshot replaced): reading again is the remedy, but for an
    authorization error."""

    def __init__(self, message: str, error: int | None = None) -> None:
        super().__init__(message)
        self.error = error


async def read_committed_image(connection: ClientConnection, *, cluster_id: str,
                               leader_epoch: int, deadline: float) -> MetadataImage:
    """The image of the leader's committed metadata log as of the first Fetch's answer.

    ``connection`` is open to the leader of ``leader_epoch`` (DescribeQuorum's). Only
    complete batches up to that high watermark are replayed; a metadata transaction still
    open there is left out, as the brokers' loader leaves it."""
    loader = ImageLoader()
    position = OffsetAndEpoch(0, 0)
    target: int | None = None
    while target is None or position.offset < target:
        part = await _fetch(connection, cluster_id, leader_epoch, position, deadline)
        if part.snapshot_id.end_offset >= 0 and part.snapshot_id.epoch >= 0:
            snapshot_id = OffsetAndEpoch(part.snapshot_id.end_offset, part.snapshot_id.epoch)
            data = await _snapshot(connection, cluster_id, leader_epoch, snapshot_id, deadline)
            loader = ImageLoader(image_from_snapshot(iter_batches(data), snapshot_id))
            position = snapshot_id
            continue
        if part.diverging_epoch.epoch >= 0 and part.diverging_epoch.end_offset >= 0:
            raise MetadataReadError(f"the leader's log diverged from offset {position.offset} "
                                    f"on (a new leader truncated it)")
        if part.high_watermark < 0:
            raise MetadataReadError("the leader has no high watermark yet")
        if target is None:
            target = int(part.high_watermark)
        data = records_field(part.records)
        _, complete = complete_batches(data)  # a Fetch may end inside a batch
        if complete == 0 and position.offset < target:
            raise MetadataReadError(f"no whole batch at offset {position.offset} in "
                                    f"{len(data)} fetched bytes")
        for batch in iter_batches(data[:complete]):
            if batch.last_offset >= target:
                return loader.image
            loader.load_batch(batch)
            position = OffsetAndEpoch(batch.last_offset + 1, batch.epoch)
    return loader.image


async def _fetch(connection: ClientConnection, cluster_id: str, leader_epoch: int,
                 position: OffsetAndEpoch, deadline: float) -> PartitionData:
    request = rpc.fetch_request(cluster_id, _NON_REPLICA, epoch=leader_epoch, position=position,
                                high_watermark=None, max_wait_ms=0, max_bytes=FETCH_MAX_BYTES)
    response = await _ask(connection, request, deadline)
    assert isinstance(response, rpc.FetchResponse)
    parts: list[PartitionData] = [p for t in response.responses for p in t.partitions]
    _check("Fetch of the metadata log",
           response.error_code or (parts[0].error_code if len(parts) == 1 else 0), len(parts))
    return parts[0]


async def _snapshot(connection: ClientConnection, cluster_id: str, leader_epoch: int,
                    snapshot_id: OffsetAndEpoch, deadline: float) -> bytes:
    """The whole snapshot, chunk by chunk."""
    chunks: list[bytes] = []
    position, size = 0, None
    while size is None or position < size:
        request = rpc.fetch_snapshot_request(cluster_id, _NON_REPLICA, epoch=leader_epoch,
                                             snapshot_id=snapshot_id, position=position,
                                             max_bytes=FETCH_MAX_BYTES)
        response = await _ask(connection, request, deadline)
        assert isinstance(response, rpc.FetchSnapshotResponse)
        parts: list[PartitionSnapshot] = [p for t in response.topics for p in t.partitions]
        _check(f"FetchSnapshot {snapshot_id}",
               response.error_code or (parts[0].error_code if len(parts) == 1 else 0), len(parts))
        chunk = records_field(parts[0].unaligned_records)
        if parts[0].position != position or (size is not None and parts[0].size != size):
            raise MetadataReadError(f"FetchSnapshot {snapshot_id}: the leader answered for "
                                    f"position {parts[0].position} of {parts[0].size} bytes")
        size = int(parts[0].size)
        if not chunk and position < size:
            raise MetadataReadError(f"FetchSnapshot {snapshot_id}: an empty chunk at {position}")
        chunks.append(chunk)
        position += len(chunk)
    return b"".join(chunks)


def _check(what: str, error: int, partitions: int) -> None:
    if error != ErrorCode.NONE:
        raise MetadataReadError(f"{what}: {error_name(error)}", error)
    if partitions != 1:
        raise MetadataReadError(f"{what}: an answer with {partitions} partitions")


async def _ask(connection: ClientConnection, request: object, deadline: float) -> object:
    """One request, if the deadline has not passed: it bounds the whole read, however many
    chunks and batches the leader answers with."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise MetadataReadError("the metadata log was not read before the deadline")
    try:
        async with asyncio.timeout(remaining):
            return await connection.request(request)
    except TimeoutError:
        raise MetadataReadError("no answer from the leader before the deadline") from None
