"""A replicated log of opaque bytes for your own Python program (etcd's raftexample, on KRaft).

Start a node on the running event loop, alone or as one voter of a static quorum; append
bytes on the leader and await their committed offset; iterate the committed entries in
offset order on every node; snapshot your own state so the log behind it can go::

    log = await ReplicatedLog.start(1, "data/node-1", {1: ("127.0.0.1", 9093), ...})
    offset = await log.append(b"set x 1")           # on the leader: committed at offset
    async for item in log:                          # every node, in offset order
        if isinstance(item, Snapshot):
            state = load(item.data)                 # your state through item.offset
        else:
            apply(state, item.value)                # Entry(offset, value)
    await log.snapshot(offset, dump(state))         # state through offset, a batch end
    await log.close()

A restarted node hands you its latest snapshot first, then the entries after it; a node so
far behind that the leader no longer has its entries gets the leader's snapshot the same way.
The directory is Kafka's layout (``meta.properties``, ``__cluster_metadata-0/`` with segments,
snapshots and ``quorum-state``), so ``pykraft dump-log`` and ``metadata-quorum`` read it.

This is a :class:`~pykraft.runtime.node.RaftNode` whose state machine is the application
(see docs/architecture.md): the same driver, listener and storage as ``pykraft server``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import NamedTuple

from pykraft.config.server import ServerConfig
from pykraft.errors import PyKraftError, RaftError
from pykraft.ids import uuid_to_str
from pykraft.raft.api import LeaderAndEpoch
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.listener_server import ListenerServer
from pykraft.runtime.node import RaftNode
from pykraft.runtime.settings import load_settings
from pykraft.storage.meta_properties import META_PROPERTIES
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage

#: The cluster id of a directory :meth:`ReplicatedLog.start` formats, unless given one: every
#: voter of a quorum must share it (a Kafka UUID, derived from a fixed name).
DEFAULT_CLUSTER_ID = uuid_to_str(uuid.uuid5(uuid.NAMESPACE_URL, "pykraft.embed"))
#: Snapshot data is stored as records of at most this many bytes each.
SNAPSHOT_CHUNK_BYTES = 1 << 20


class Entry(NamedTuple):
    """A committed entry: its offset in the log and the bytes appended."""

    offset: int
    value: bytes


class Snapshot(NamedTuple):
    """Replace your state with ``data``: it holds every entry up to ``offset`` included."""

    offset: int
    data: bytes


class LogClosedError(PyKraftError):
    """The log was closed, or its node stopped on a fatal error (logged as ``fatal``)."""


class CommitUnknownError(RaftError):
    """Leadership moved before the appended entry committed: it may or may not be in the
    log (read it back from the entries to know)."""


class _Application:
    """The node's state machine: turns the core's events into :class:`Entry` and
    :class:`Snapshot` items for the iterator, and remembers where a snapshot may be taken."""

    def __init__(self) -> None:
        self.items: deque[Entry | Snapshot] = deque()
        self.arrived = asyncio.Event()
        self.leader = LeaderAndEpoch(None, 0)
        self.leader_known = asyncio.Event()
        self.next_offset = 0
        """Entries below this were handed out (in items or a snapshot)."""
        self.batch_ends: dict[int, int] = {}
        """End offset (exclusive) -> epoch of each batch handed out since the last snapshot:
        the core snapshots only at a batch boundary, with the epoch of the batch before."""
        self.node: RaftNode | None = None

    def resume_from(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """Start from a snapshot: entries below it are not handed out again."""
        self.items.append(Snapshot(snapshot_id.offset - 1, data))
        self.arrived.set()
        self.next_offset = snapshot_id.offset
        self.batch_ends = {}

    def handle_commit(self, batch: RecordBatch) -> None:
        if batch.last_offset < self.next_offset:
            return  # covered by the snapshot this node resumed from
        if not batch.is_control:
            self.items.extend(Entry(record.offset, record.value or b"")
                              for record in batch.records())
            self.arrived.set()
        self.next_offset = batch.last_offset + 1
        self.batch_ends[self.next_offset] = batch.epoch

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        if snapshot_id.offset > self.next_offset:
            assert self.node is not None
            self.resume_from(snapshot_id, _snapshot_data(self.node, snapshot_id))

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader
        if leader.leader_id is None:
            self.leader_known.clear()
        else:
            self.leader_known.set()

    def snapshot_taken(self, snapshot_id: OffsetAndEpoch) -> None:
        self.batch_ends = {end: epoch for end, epoch in self.batch_ends.items()
                           if end > snapshot_id.offset}


def _snapshot_data(node: RaftNode, snapshot_id: OffsetAndEpoch) -> bytes:
    """The application bytes of a snapshot: its data records joined (header, footer and
    KRaft's voter records are control records)."""
    return b"".join(record.value or b"" for batch in node.core.read_snapshot(snapshot_id)
                    if not batch.is_control for record in batch.records())


class ReplicatedLog:
    """One node of a replicated log, on the running asyncio event loop.

    Build it with :meth:`start`. Appends go to the leader (:attr:`leader_id`); every node
    yields the same committed entries in the same order. One consumer iterates; entries wait
    in memory until it does.
    """

    def __init__(self, node: RaftNode, app: _Application, server: ListenerServer) -> None:
        self._node = node
        self._app = app
        self._server = server
        self._closed = False
        self._appending: set[asyncio.Future[bool]] = set()
        self._watch = asyncio.get_running_loop().create_task(self._watch_fatal())

    @classmethod
    async def start(cls, node_id: int, directory: str | Path,
                    voters: Mapping[int, tuple[str, int]] | None = None, *,
                    cluster_id: str = DEFAULT_CLUSTER_ID,
                    config: Mapping[str, str] | None = None) -> ReplicatedLog:
        """Start node ``node_id`` with its data in ``directory`` (formatted if new).

        ``voters`` maps every voter's id to the host and port it listens on (this node's
        entry is where it listens); without it the node is a quorum of one on an ephemeral
        port of 127.0.0.1. ``config`` adds Kafka server keys, e.g.
        ``controller.quorum.election.timeout.ms`` or ``metadata.max.retention.bytes``.
        """
        if isinstance(node_id, bool) or not isinstance(node_id, int) or node_id < 0:
            raise ValueError(f"node_id must be an int >= 0, not {node_id!r}")
        voters = {node_id: ("127.0.0.1", 0)} if voters is None else dict(voters)
        if node_id not in voters:
            raise ValueError(f"node {node_id} is not one of the voters {sorted(voters)}")
        for voter, (host, port) in voters.items():
            if not isinstance(port, int) or not 0 <= port <= 65535 or not host:
                raise ValueError(f"voter {voter}: bad address {host!r}:{port!r}")
        host, port = voters[node_id]
        properties = {
            "process.roles": "controller",
            "node.id": str(node_id),
            "listeners": f"CONTROLLER://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": ",".join(f"{v}@{h}:{p}"
                                                 for v, (h, p) in sorted(voters.items())),
            "log.dirs": str(Path(directory).absolute()),
            **(config or {}),
        }
        server_config = ServerConfig(properties)
        if not (server_config.metadata_log_dir / META_PROPERTIES).exists():
            format_storage(FormatRequest(server_config, cluster_id, QuorumMode.STATIC))
        app = _Application()
        node = RaftNode(load_settings(server_config), listeners=(app,))
        app.node = node
        server = ListenerServer(Dispatcher(node), host, port, node.settings.max_frame_size)
        try:
            latest = max((s.snapshot_id for s in node.disk_log.snapshots()),
                         key=lambda s: s.offset, default=None)
            if latest is not None and latest.offset > 0:
                app.resume_from(latest, _snapshot_data(node, latest))
            await server.start()
        except BaseException:
            node.disk_log.close()
            raise
        node.start()
        return cls(node, app, server)

    # -- the log ------------------------------------------------------------------------

    async def append(self, value: bytes) -> int:
        """Append ``value`` on the leader; returns its offset once committed.

        Raises :class:`~pykraft.errors.NotLeaderError` (nothing appended) on any other node,
        :class:`CommitUnknownError` if leadership moved before it committed, and
        :class:`LogClosedError` once closed.
        """
        if not isinstance(value, bytes | bytearray | memoryview):
            raise TypeError(f"append takes bytes, not {type(value).__name__}")
        self._check_open()
        offset = await self._node.append(bytes(value))
        committed = self._node.machine.wait_committed(offset)
        self._appending.add(committed)
        try:
            if not await committed:
                raise CommitUnknownError(f"leadership moved before offset {offset} committed")
        finally:
            self._appending.discard(committed)
        return offset

    def __aiter__(self) -> AsyncIterator[Entry | Snapshot]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Entry | Snapshot]:
        """Committed entries and snapshots to load, in offset order, until :meth:`close`."""
        app = self._app
        while True:
            while app.items:
                yield app.items.popleft()
            if self._closed:
                return
            app.arrived.clear()
            await app.arrived.wait()

    async def snapshot(self, offset: int, data: bytes) -> None:
        """Store ``data``, your state with every entry up to ``offset`` applied.

        ``offset`` must be the last entry of a committed batch this node handed out (entries
        appended together share a batch; :meth:`can_snapshot` says), and not before the
        latest snapshot. Older snapshots and the log before them are then deleted as
        ``metadata.max.retention.*`` allow (Kafka's snapshot retention).
        """
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"snapshot data must be bytes, not {type(data).__name__}")
        if not self.can_snapshot(offset):
            raise ValueError(f"cannot snapshot at offset {offset!r}: not the last entry of a "
                             "committed batch handed out since the latest snapshot")
        self._check_open()
        snapshot_id = OffsetAndEpoch(offset + 1, self._app.batch_ends[offset + 1])
        whole = bytes(data)
        chunks = [[whole[i:i + SNAPSHOT_CHUNK_BYTES]]
                  for i in range(0, len(whole), SNAPSHOT_CHUNK_BYTES)]
        self._node.create_snapshot(snapshot_id, chunks)
        self._app.snapshot_taken(snapshot_id)

    def can_snapshot(self, offset: int) -> bool:
        """Whether :meth:`snapshot` takes ``offset`` now."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be an int >= 0, not {offset!r}")
        return offset + 1 in self._app.batch_ends

    # -- the quorum ---------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self._node.settings.node_id

    @property
    def port(self) -> int:
        """The port this node listens on (the ephemeral one for a quorum of one)."""
        return self._server.port

    @property
    def leader_id(self) -> int | None:
        """The leader as this node last learnt it; None during an election."""
        return self._app.leader.leader_id

    @property
    def epoch(self) -> int:
        """The leader epoch: it grows with each election."""
        return self._app.leader.epoch

    @property
    def is_leader(self) -> bool:
        return self._app.leader.leader_id == self.node_id

    async def wait_for_leader(self) -> int:
        """The leader's id, once this node knows one (bound it with ``asyncio.timeout``)."""
        self._check_open()
        while (leader := self._app.leader.leader_id) is None:
            await self._app.leader_known.wait()
            self._check_open()
        return leader

    # -- lifecycle ----------------------------------------------------------------------

    async def close(self) -> None:
        """Stop: a leader resigns first (EndQuorumEpoch), the log is flushed and closed,
        the listener stops, and the iterator ends after the entries it still holds."""
        if self._closed:
            return
        self._closed = True
        if self._watch is not asyncio.current_task():
            self._watch.cancel()
        for committed in self._appending:
            if not committed.done():
                committed.set_exception(LogClosedError("closed before the entry committed"))
        await self._node.shutdown()
        await self._server.close()
        self._app.arrived.set()
        self._app.leader_known.set()

    async def __aenter__(self) -> ReplicatedLog:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"the replicated log of node {self.node_id} is closed")

    async def _watch_fatal(self) -> None:
        """A fatal error (a failed fsync, a broken invariant) stops the node: close."""
        await self._node.stopped.wait()
        await self.close()
