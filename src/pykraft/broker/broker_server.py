"""The broker half of a ``pykraft server`` process (``process.roles`` with ``broker``),
Kafka's BrokerServer.

Its metadata listener joins the node's raft listeners (alone on a broker-only node, which
the core runs as an observer; beside the controller on a combined node, which is a voter).
It adds the registration/heartbeat loop and the client listeners (every non-controller
listener in ``listeners``, each with its own protocol; Metadata, FindCoordinator and the
leader hints of each answer with the endpoints of the listener asked), which (as in Kafka's
BrokerServer) only open once the controller first unfenced this broker: before that its
image may not even hold its own registration, and clients should keep trying the other
brokers. A broker-only node snapshots its image when Kafka's thresholds pass (a combined
node leaves that to its controller: one snapshot per offset and process). On a graceful
stop it asks the controller for a controlled shutdown first, so leadership leaves this
broker before it goes away rather than a session timeout later.

Its partitions live in ``log.dirs`` (:mod:`pykraft.log.log_manager`), loaded and
recovered at start-up; the replica manager applies every new image and serves Produce, and
the replica fetchers (:mod:`pykraft.broker.replica_fetcher`) follow the partitions led
elsewhere; AlterReplicaLogDirs moves replicas between log directories
(:mod:`pykraft.broker.log_dir_mover`). The group coordinator
(:mod:`pykraft.broker.group_coordinator`) runs a group shard for each ``__consumer_offsets``
partition this broker leads.
A log directory that fails (a full disk, an I/O error) goes offline: its replicas stop
(KAFKA_STORAGE_ERROR) and the heartbeats report it, so the controller moves their
leaderships away, while the other directories are served on; the broker halts when the
metadata log's directory or the last one fails (:mod:`pykraft.log.log_dir_failure`), and
shuts down when the controller did not hear of it within ``log.dir.failure.timeout.ms``.
Periodic tasks flush and checkpoint the logs (``log.flush.offset.checkpoint.interval.ms``),
checkpoint high watermarks (``replica.high.watermark.checkpoint.interval.ms``), apply
retention (``log.retention.check.interval.ms``); the log cleaner compacts the compacted
topics that call for it (:mod:`pykraft.broker.log_cleaner`: ``log.cleaner.*``, dynamic as
Kafka's, none with ``log.cleaner.enable=false``); a graceful stop writes producer snapshots,
checkpoints and the clean-shutdown marker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import logging
import random
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from pykraft.broker.alter_partition import AlterPartitionManager
from pykraft.broker.auto_topics import AutoTopicCreator
from pykraft.broker.client_quotas import BrokerQuotas
from pykraft.broker.coordinator_topics import (
    GROUP_KEY,
    TRANSACTION_KEY,
    CoordinatorFinder,
    OffsetsTopicConfig,
)
from pykraft.broker.dir_assignments import AssignmentsManager
from pykraft.broker.dispatch import BrokerDispatcher
from pykraft.broker.group_coordinator import GroupCoordinatorService
from pykraft.broker.lifecycle import BrokerIdentity, BrokerLifecycle
from pykraft.broker.log_cleaner import LogCleanerTask
from pykraft.broker.log_creator import LogCreator
from pykraft.broker.log_dir_mover import LogDirMover
from pykraft.broker.metadata_listener import BrokerMetadataListener
from pykraft.broker.produce import ProduceHandler
from pykraft.broker.producer_ids import ProducerIdManager
from pykraft.broker.replica_fetcher import FetcherConfig, ReplicaFetcherManager, leader_address
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.broker.topic_settings import topic_settings
from pykraft.broker.txn_apis import TxnApis
from pykraft.broker.txn_coordinator import TxnCoordinatorService
from pykraft.broker.txn_marker_sender import MARKER_SENDER_VERSIONS
from pykraft.broker.txn_verification import VERIFIER_VERSIONS, TxnVerifier
from pykraft.config.server import ServerConfig
from pykraft.errors import ConfigError
from pykraft.group.config import GroupConfig
from pykraft.group.metrics import GroupCounters
from pykraft.group.shard import GroupShard
from pykraft.image.configs import ConfigResourceType
from pykraft.image.image import MetadataImage
from pykraft.image.snapshot_generator import SnapshotGenerator
from pykraft.log.log_dir_failure import LogDirFailures
from pykraft.log.log_manager import LogManager, remove_renamed_dirs
from pykraft.log.producer_state import PRODUCER_ID_EXPIRATION_MS_DEFAULT
from pykraft.runtime.connection_registry import ConnectionRegistry
from pykraft.runtime.controller_channel import ControllerChannel
from pykraft.runtime.kafka_client import ClientConnection, open_with_timeout
from pykraft.runtime.listener_server import ListenerServer
from pykraft.runtime.logfmt import event
from pykraft.runtime.node import RaftNode
from pykraft.runtime.request_metrics import RequestMetrics
from pykraft.runtime.request_queue import RequestQueue
from pykraft.runtime.sasl_authenticator import with_scram
from pykraft.runtime.settings import (
    BrokerListenerSettings,
    ListenerSettings,
    NodeSettings,
    dynamic_connection_keys,
    dynamic_connection_limits,
)
from pykraft.txn.config import TxnConfig

log = logging.getLogger("pykraft.broker")
T = TypeVar("T")
#: How long :meth:`BrokerServer.stop` waits for its cancelled background tasks.
TASK_STOP_TIMEOUT_S = 5.0
#: Kafka's defaults of the periodic log tasks' intervals.
RECOVERY_THREADS_DEFAULT = 2  # Kafka 4's num.recovery.threads.per.data.dir
LOG_DIR_FAILURE_TIMEOUT_MS_DEFAULT = 30_000  # Kafka's log.dir.failure.timeout.ms
PERIODIC_DEFAULTS_MS = {
    "log.flush.offset.checkpoint.interval.ms": 60_000,
    "replica.high.watermark.checkpoint.interval.ms": 5_000,
    "log.retention.check.interval.ms": 300_000,
}


def _int_property(static: Mapping[str, str], key: str, default: int) -> int:
    return int(static.get(key, default))


def cleaner_enabled(static: Mapping[str, str]) -> bool:
    """Kafka starts no log cleaner with ``log.cleaner.enable=false`` or
    ``log.cleaner.threads=0``: compacted topics then grow unbounded."""
    enabled = static.get("log.cleaner.enable", "true").strip().lower() == "true"
    return enabled and _int_property(static, "log.cleaner.threads", 1) > 0


class BrokerServer:
    """Create before the node (its :attr:`metadata` is a raft listener), then :meth:`bind`."""

    def __init__(self, settings: NodeSettings, broker: BrokerListenerSettings) -> None:
        self._settings = settings
        self._broker = broker
        self.metadata = BrokerMetadataListener(
            None if settings.is_controller
            else SnapshotGenerator(settings.controller.snapshot_policy()))
        self._channel: ControllerChannel | None = None
        self._forwarding: ControllerChannel | None = None
        self._assignments_channel: ControllerChannel | None = None
        self._assignments: AssignmentsManager | None = None
        self.log_dir_mover: LogDirMover | None = None
        self._lifecycle: BrokerLifecycle | None = None
        self._log_creator: LogCreator | None = None
        self._servers: list[ListenerServer] = []
        self._finders: list[CoordinatorFinder] = []
        self._tasks: list[asyncio.Task[None]] = []
        static = settings.controller.properties
        self._static = static
        server = ServerConfig(static)
        self._auto_create = bool(server.get("auto.create.topics.enable"))
        self._request_timeout_ms: int = server.get("request.timeout.ms")
        self._log_dir_failure_timeout_ms = _int_property(
            static, "log.dir.failure.timeout.ms", LOG_DIR_FAILURE_TIMEOUT_MS_DEFAULT)
        self._verify_transactions = bool(server.get("transaction.partition.verification.enable"))
        self._auto_topics: AutoTopicCreator | None = None
        self.quotas: BrokerQuotas | None = None
        # one thread for the logs' files: new partitions' logs and deleted ones' removal
        self._disk_worker = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="log-dirs")
        failures = LogDirFailures(server.log_dirs, server.metadata_log_dir)
        for directory, reason in settings.offline_log_dirs.items():  # Kafka's start-up checks
            failures.fail_at_startup(
                directory, f"Failed to create or validate data directory {directory}", reason)
        self.logs = LogManager(
            server.log_dirs, topic_settings({}, static).log, failures=failures,
            remove_dirs=lambda paths: self._disk_worker.submit(remove_renamed_dirs, paths),
            dir_ids=settings.log_dir_ids)
        self.replicas = ReplicaManager(
            settings.node_id, self.logs, static, producer_id_expiration_ms=_int_property(
                static, "producer.id.expiration.ms", PRODUCER_ID_EXPIRATION_MS_DEFAULT))
        self._fetcher_config = FetcherConfig.of(static)
        self.fetchers = ReplicaFetcherManager(
            settings.node_id, self.replicas, self._fetcher_config,
            broker.inter_broker_listener, self._now_ms, self._broker_epoch,
            tls=broker.inter_broker_tls, sasl=broker.inter_broker_sasl)
        self._offsets_topic = OffsetsTopicConfig.from_properties(static)  # refused at start
        self._group_config = GroupConfig.from_properties(static)
        self.groups: GroupCoordinatorService | None = None
        self._txn_config = TxnConfig.from_properties(static)  # refused at start
        self.transactions: TxnCoordinatorService | None = None
        self._txn_apis: TxnApis | None = None
        self._verifier: TxnVerifier | None = None
        self._producer_ids: ProducerIdManager | None = None
        self._clock: Callable[[], int] | None = None
        self.failed = asyncio.Event()
        """Set when the client listener cannot be opened (e.g. its port is taken), or when a
        failed log directory could not be reported in ``log.dir.failure.timeout.ms``: the
        process stops, exit status 1."""
        self._cleaner: LogCleanerTask | None = None
        """The log cleaner, unless Kafka would start none (:func:`cleaner_enabled`)."""
        self._connection_configs: dict[str, str] = {}
        """The dynamic connection configs in force (see _apply_connection_configs)."""
        self.request_queue = RequestQueue(settings.queued_max_requests)
        """Its client listeners' ``queued.max.requests`` (the controller's have their own)."""

    def bind(self, node: RaftNode, connections: ConnectionRegistry,
             requests: RequestMetrics | None = None) -> None:
        """Wire the broker to ``node``; its listeners count their connections in
        ``connections``, the process's registry, and their requests in ``requests``."""
        settings = self._settings
        self._clock = node.now_ms
        self.logs.startup(node.now_ms(), _int_property(
            self._static, "num.recovery.threads.per.data.dir", RECOVERY_THREADS_DEFAULT))
        self.metadata.publishers.append(
            lambda image: self.replicas.apply_image(image, node.now_ms()))
        self.metadata.publishers.append(self._follow)
        self.quotas = quotas = BrokerQuotas(ServerConfig(self._static), node.now_ms,
                                            lambda: self.metadata.image)
        self.metadata.publishers.append(
            lambda image: self._apply_connection_configs(image, connections))
        if cleaner_enabled(self._static):
            cleaner = LogCleanerTask(self.replicas, self._static, settings.node_id,
                                     node.now_ms)
            self.metadata.publishers.append(lambda image: cleaner.apply_configs(image.configs))
            self._cleaner = cleaner
        self.metadata.high_watermark = lambda: node.core.high_watermark
        self.metadata.snapshots.attach(node.core.read_snapshot)
        if self.metadata.generator is not None:
            self.metadata.generator.attach(
                node.core, step=node.step, clock=node.now_ms,
                defer=lambda callback: asyncio.get_running_loop().call_soon(callback))
        def channel(timeout_ms: int, purpose: str) -> ControllerChannel:
            return ControllerChannel(
                settings.node_id, node.address_of,
                lambda: node.core.leader_and_epoch.leader_id, timeout_ms,
                tls=settings.controller_tls, sasl=settings.controller_sasl, purpose=purpose,
                max_request_bytes=settings.max_frame_size)

        self._channel = channel(settings.quorum.request_timeout_ms, "heartbeat")
        # Kafka's "forwarding" channel: admin requests, producer id blocks and internal
        # topic creation wait for the controller up to request.timeout.ms on their own
        # connection, never in front of a heartbeat (a 5,000-topic CreateTopics queued the
        # heartbeats behind it, timed out after 2 s and was sent again and again).
        self._forwarding = channel(self._request_timeout_ms, "forwarding")
        # and Kafka's "directory-assignments" channel for AssignReplicasToDirs
        self._assignments_channel = channel(self._request_timeout_ms, "directory-assignments")
        self._assignments = AssignmentsManager(
            self._assignments_channel, broker_id=settings.node_id,
            broker_epoch=self._broker_epoch, image=lambda: self.replicas.image)
        self.replicas.assign_dir = self._assignments.assign
        self.replicas.clock_ms = node.now_ms
        self.log_dir_mover = LogDirMover(  # Kafka's alter-log-dirs fetcher: replica.fetch.*
            self.replicas, clock_ms=node.now_ms, max_bytes=self._fetcher_config.max_bytes,
            backoff_ms=self._fetcher_config.backoff_ms, assign=self._assignments.assign)
        # new partitions' logs are created off the loop (three fsyncs each), the fetchers
        # told of each chunk hosted
        self._log_creator = LogCreator(self.replicas, node.now_ms,
                                       lambda: self._follow(self.replicas.image),
                                       self._disk_worker)
        self.replicas.defer_logs = self._log_creator.wake
        if self._auto_create:  # one for every listener: topics in flight are per broker
            # on the forwarding channel, as Kafka's AutoTopicCreationManager: a CreateTopics
            # the controller throttles (its mutation quota) mutes that connection, never the
            # heartbeats'
            self._auto_topics = AutoTopicCreator(
                self._forwarding, num_partitions=settings.controller.default_num_partitions,
                replication_factor=settings.controller.default_replication_factor)
        self._alter_partition = AlterPartitionManager(
            self._channel, self.replicas, broker_id=settings.node_id,
            broker_epoch=self._broker_epoch)
        self.replicas.isr_changes = self._alter_partition.submit
        identity = BrokerIdentity(
            broker_id=settings.node_id, cluster_id=settings.cluster_id,
            endpoints=tuple((spec.advertised, spec.protocol) for spec in self._broker.listeners),
            rack=self._broker.rack,
            log_dirs=tuple(settings.log_dir_ids[d] for d in self.logs.online_dirs
                           if d in settings.log_dir_ids),  # Kafka registers the live ones
            heartbeat_interval_ms=self._broker.heartbeat_interval_ms,
            previous_broker_epoch=self.logs.previous_broker_epoch)
        self._lifecycle = BrokerLifecycle(identity, self._channel, self.metadata,
                                          give_up=self.failed.set)
        self.logs.failures.report = self._report_failed_dir
        rng = random.Random()  # member ids: Kafka's clientId-UUID, unique across failovers
        group_counters = GroupCounters()  # the broker's, whichever shards it loads
        self.groups = GroupCoordinatorService(
            self.replicas, node.now_ms,
            lambda partition: GroupShard(partition, self._group_config, rng, group_counters),
            self._offsets_topic, group_counters)
        self._producer_ids = ProducerIdManager(settings.node_id, self._broker_epoch,
                                               self._forwarding)
        self.transactions = TxnCoordinatorService(
            self.replicas, node.now_ms, self._txn_config,
            producer_ids=self._producer_ids.generate_producer_id,
            connect=self._connect_broker, request_timeout_ms=self._request_timeout_ms)
        offsets = self._offsets_topic
        self._txn_apis = TxnApis(
            self.transactions, image=lambda: self.replicas.image,
            offsets_partition=lambda group: offsets.partition_of(group, self.replicas.image))
        self._verifier = TxnVerifier(
            settings.node_id, image=lambda: self.replicas.image,
            partition_of=self.transactions.partition_of, local=self._txn_apis.add_for_broker,
            connect=functools.partial(self._connect_broker, ours=VERIFIER_VERSIONS,
                                      purpose="txn-verification"),
            enabled=self._verify_transactions, timeout_ms=self._request_timeout_ms)
        self.groups.verifier = self._verifier
        dispatchers = [self._dispatcher(node, spec) for spec in self._broker.listeners]
        for dispatcher in dispatchers:  # one producer id block source per broker
            dispatcher.producer_ids = self._producer_ids
        self._servers = [
            ListenerServer(dispatcher, spec.endpoint.host, spec.endpoint.port,
                           settings.max_frame_size, listener_name=spec.name,
                           protocol=spec.protocol, tls=spec.tls,
                           sasl=with_scram(spec.sasl, lambda: self.metadata.image,
                                           settings.controller.tokens.secret_key),
                           connections=connections, requests=requests, queue=self.request_queue,
                           timed=quotas.request_quota_enabled)
            for dispatcher, spec in zip(dispatchers, self._broker.listeners, strict=True)]

    def _report_failed_dir(self, directory: Path) -> bool:
        """Kafka's ``handleLogDirFailure`` past the halting cases: on the next loop turn (the
        failure is seen inside a walk of the partitions), stop the directory's replicas and
        their fetchers and heartbeat the directory; False (halt) if it has no id."""
        dir_id = self.logs.directory_id(directory)
        if dir_id is None or self._lifecycle is None:
            return False
        lifecycle = self._lifecycle

        def take_offline() -> None:
            gone = self.replicas.take_dir_offline(directory)
            event(log, "log_dir_offline", level=logging.WARNING, dir=str(directory),
                  dir_id=str(dir_id), partitions=len(gone))
            self._follow(self.replicas.image)
            lifecycle.report_offline_dir(dir_id, self._log_dir_failure_timeout_ms)

        asyncio.get_running_loop().call_soon(take_offline)
        return True

    def _apply_connection_configs(self, image: MetadataImage,
                                  connections: ConnectionRegistry) -> None:
        """Dynamic ``max.connections*`` configs (cluster default, then this broker's) into
        the process's connection limits, when they changed; a refused combination is logged
        and the limits in force stay."""
        broker = ConfigResourceType.BROKER
        dynamic = {**dynamic_connection_keys(image.configs.get((broker, ""))),
                   **dynamic_connection_keys(image.configs.get((broker,
                                                                str(self._settings.node_id))))}
        if dynamic == self._connection_configs:
            return
        self._connection_configs = dynamic
        try:
            limits = dynamic_connection_limits(self._static, dynamic, self._broker)
        except ConfigError as exc:
            event(log, "connection_limits_refused", level=logging.ERROR, error=str(exc))
            return
        connections.reconfigure(limits)

    def _dispatcher(self, node: RaftNode, spec: ListenerSettings) -> BrokerDispatcher:
        """The dispatcher of one listener: its answers name that listener's endpoints."""
        assert self._forwarding is not None and self.groups is not None
        assert self.transactions is not None
        finder = CoordinatorFinder({GROUP_KEY: self._offsets_topic,
                                    TRANSACTION_KEY: self.transactions.topic},
                                   self._forwarding, spec.name)
        self._finders.append(finder)
        assert self._txn_apis is not None
        return BrokerDispatcher(node, self.metadata, self._forwarding,
                                cluster_id=self._settings.cluster_id, listener_name=spec.name,
                                produce=ProduceHandler(self.replicas, node.now_ms, spec.name,
                                                       self._verifier),
                                replicas=self.replicas, groups=(self.groups, finder),
                                transactions=self._txn_apis, auto_topics=self._auto_topics,
                                quotas=self.quotas, log_dir_mover=self.log_dir_mover)

    async def _connect_broker(self, broker_id: int, *,
                              ours: Mapping[int, tuple[int, int]] = MARKER_SENDER_VERSIONS,
                              purpose: str = "txn-markers") -> ClientConnection | None:
        """A connection to another broker's inter-broker listener, for the transaction
        markers (or ``purpose``, speaking ``ours``); None while it has no endpoint there."""
        broker = self._broker
        address = leader_address(self.replicas.image, broker_id, broker.inter_broker_listener)
        if address is None:
            return None
        return await open_with_timeout(
            *address, client_id=f"broker-{self._settings.node_id}-{purpose}",
            ours=ours, timeout_s=self._request_timeout_ms / 1000,
            tls=broker.inter_broker_tls, sasl=broker.inter_broker_sasl)

    def _now_ms(self) -> int:
        assert self._clock is not None, "bind() first"
        return self._clock()

    def _follow(self, image: MetadataImage) -> None:
        """After the hosted replicas changed: the fetchers follow their leaders, and
        replicas a restart left half moved between log directories move on."""
        self.fetchers.update(image)
        if self.log_dir_mover is not None:
            self.log_dir_mover.resume()

    def _broker_epoch(self) -> int:
        """This broker's epoch in the image (-1 before its registration is there)."""
        registration = self.metadata.image.cluster.brokers.get(self._settings.node_id)
        return -1 if registration is None else registration.epoch

    def start(self) -> None:
        """Start registering and fetching; the client listener follows the first
        unfencing."""
        assert self._lifecycle is not None, "bind() first"
        loop = asyncio.get_running_loop()
        self.fetchers.start()
        self._tasks = [loop.create_task(self._lifecycle.run()),
                       loop.create_task(self._listen_once_unfenced())]
        if self._log_creator is not None:
            self._tasks.append(loop.create_task(self._log_creator.run()))
        periodic: dict[str, Callable[[int], object]] = {
            "log.flush.offset.checkpoint.interval.ms":
                lambda now: self.replicas.checkpoint_off_loop(now, self._on_disk_worker),
            "replica.high.watermark.checkpoint.interval.ms":
                lambda _now: self.replicas.checkpoint_high_watermarks_off_loop(
                    self._on_disk_worker),
            "log.retention.check.interval.ms": self.replicas.run_retention,
        }
        if self._cleaner is not None:
            self._tasks.append(loop.create_task(self._cleaner.run()))
        for key, action in periodic.items():
            interval = _int_property(self._static, key, PERIODIC_DEFAULTS_MS[key])
            self._tasks.append(loop.create_task(self._every(interval, action)))
        self._tasks.append(loop.create_task(self._alter_partition.run()))
        if self._assignments is not None:
            self._tasks.append(loop.create_task(self._assignments.run()))
        if self.log_dir_mover is not None:
            self._tasks.append(loop.create_task(self.log_dir_mover.run()))
        self._tasks.append(loop.create_task(self._every(  # Kafka's isr-expiration task
            self.replicas.max_lag_ms // 2, self.replicas.shrink_isrs)))

    async def _on_disk_worker(self, work: Callable[[], T]) -> T:
        """``work()`` on the disk worker, after what is queued there. Shielded: a stop
        cancelling the caller lets the work finish (a checkpoint half planned is never
        dropped) and :meth:`stop` waits for it before the last checkpoint."""
        running = asyncio.get_running_loop().run_in_executor(self._disk_worker, work)
        return await asyncio.shield(running)

    async def _every(self, interval_ms: int, action: Callable[[int], object]) -> None:
        """Run ``action(now_ms)`` every ``interval_ms``; a failure is logged, not fatal."""
        assert self._clock is not None
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                done = action(self._clock())
                if inspect.isawaitable(done):  # the log cleaner computes on its thread
                    await done
            except Exception:
                log.exception("periodic log task failed")

    async def _listen_once_unfenced(self) -> None:
        assert self._lifecycle is not None
        await self._lifecycle.first_unfenced.wait()
        for server, spec in zip(self._servers, self._broker.listeners, strict=True):
            try:
                await server.start()
            except OSError as exc:
                event(log, "listener_failed", level=logging.ERROR, listener=str(spec.endpoint),
                      error=str(exc))
                self.failed.set()
                return
            event(log, "broker_listening", listener=str(spec.endpoint),
                  security_protocol=spec.protocol.name)

    async def stop(self) -> None:
        enabled = self._static.get("controlled.shutdown.enable", "true").lower() == "true"
        if self._lifecycle is not None and enabled:  # still serving while leadership moves
            await self._lifecycle.controlled_shutdown(self._settings.shutdown_timeout_ms / 1000)
        for task in self._tasks:
            task.cancel()
        if self._tasks:  # bounded: one task ignoring its cancellation must not hang SIGTERM
            _, stuck = await asyncio.wait(self._tasks, timeout=TASK_STOP_TIMEOUT_S)
            for task in stuck:
                event(log, "task_did_not_stop", level=logging.ERROR, task=task.get_coro())
        if self.groups is not None:
            await self.groups.close()  # parked group requests answered NOT_COORDINATOR
        if self.transactions is not None:
            await self.transactions.close()  # and the transaction coordinator's
        if self._verifier is not None:
            self._verifier.close()
        for finder in self._finders:
            await finder.close()
        if self._auto_topics is not None:
            await self._auto_topics.close()
        await self.fetchers.stop()
        for channel in (self._channel, self._forwarding, self._assignments_channel):
            if channel is not None:
                channel.close()
        for server in self._servers:
            await server.close()
        if self._log_creator is not None:
            self._log_creator.close()
        if self._clock is not None:
            await self._on_disk_worker(lambda: None)  # a periodic checkpoint in flight first
            self.replicas.shutdown(self._broker_epoch(), self._clock())
        self._disk_worker.shutdown(wait=True)  # the removals due at the last checkpoint
