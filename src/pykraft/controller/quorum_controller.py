"""The KIP-500 controller state machine: deterministic, sans-I/O, replayable from the log.

The driver owns the raft core and the network. It hands requests to :meth:`submit` and
answers with what :meth:`take_responses` returns; it registers this object as the core's
:class:`~pykraft.raft.api.RaftListener`, and calls :meth:`tick` no later than
:meth:`next_deadline_ms`. Time only enters as ``now_ms``, randomness only through the
injected ``rng``, and records only leave through the injected ``writer`` (the core's
``append``), so two controllers fed the same inputs do the same thing.

Two images are kept: the committed one, built only from batches the core reports as
committed, and the current one, the committed image plus the records this controller has
appended as leader. Operations run against the current image; their responses are released
only when the offset of their last record commits (an operation without records waits for
everything appended before it). When leadership is lost, the current image is reset to the
committed one and every waiting request is answered NOT_CONTROLLER: whatever the new leader
keeps of those records will come back through ``handle_commit``.

ZooKeeper migration (KIP-866, ``zookeeper.metadata.migration.enable``): until the load
commits (the PRE_MIGRATION state) only broker and controller registration, heartbeats and
broker unregistration run, and the periodic writes but NoOpRecords wait; every other write
is answered NOT_CONTROLLER, as Kafka's pre-migration mode does. The runtime's driver writes
the load with :mod:`~pykraft.controller.migration_ops`' requests.
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pykraft.config.authorizer import authorizer_config
from pykraft.controller import (
    acl_control,
    client_quota_control,
    cluster_control,
    config_control,
    delegation_token_control,
    dir_assignment,
    features_control,
    leader_elections,
    reassignment,
    replication_control,
    scram_control,
)
from pykraft.controller.activation import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_BOOTSTRAP_SOURCE,
    activation,
    ordered_bootstrap,
    static_min_insync_replicas,
)
from pykraft.controller.context import ControllerConfig, ControllerContext, ControllerResult
from pykraft.controller.delegation_token_control import TokenRequest
from pykraft.controller.migration_ops import (
    MigrationRefused,
    MigrationRequest,
    MigrationWritten,
    migration_records,
    migration_write_refusal,
)
from pykraft.controller.mutations import Mutation, throttled
from pykraft.controller.responses import error_response
from pykraft.errors import ControllerError, MetadataRecordError, NotLeaderError
from pykraft.image.client_quotas import literal_ip
from pykraft.image.delegation_tokens import MV_3_6_IV2
from pykraft.image.features import ZkMigrationState
from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
from pykraft.image.loader import ImageLoader
from pykraft.image.snapshot import MAX_RECORDS_PER_BATCH, chunked
from pykraft.image.versions import MV_3_3_IV1, record_version
from pykraft.messages.kafka.allocate_producer_ids_request import AllocateProducerIdsRequest
from pykraft.messages.kafka.alter_client_quotas_request import AlterClientQuotasRequest
from pykraft.messages.kafka.alter_configs_request import AlterConfigsRequest
from pykraft.messages.kafka.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
)
from pykraft.messages.kafka.alter_partition_request import AlterPartitionRequest
from pykraft.messages.kafka.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
)
from pykraft.messages.kafka.assign_replicas_to_dirs_request import AssignReplicasToDirsRequest
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.messages.kafka.broker_registration_request import BrokerRegistrationRequest
from pykraft.messages.kafka.controller_registration_request import (
    ControllerRegistrationRequest,
)
from pykraft.messages.kafka.create_acls_request import CreateAclsRequest
from pykraft.messages.kafka.create_partitions_request import CreatePartitionsRequest
from pykraft.messages.kafka.create_topics_request import CreateTopicsRequest
from pykraft.messages.kafka.delete_acls_request import DeleteAclsRequest
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest
from pykraft.messages.kafka.describe_acls_request import DescribeAclsRequest
from pykraft.messages.kafka.describe_configs_request import DescribeConfigsRequest
from pykraft.messages.kafka.elect_leaders_request import ElectLeadersRequest
from pykraft.messages.kafka.incremental_alter_configs_request import (
    IncrementalAlterConfigsRequest,
)
from pykraft.messages.kafka.list_partition_reassignments_request import (
    ListPartitionReassignmentsRequest,
)
from pykraft.messages.kafka.unregister_broker_request import UnregisterBrokerRequest
from pykraft.messages.kafka.update_features_request import UpdateFeaturesRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.quota.mutation import UNBOUNDED, ControllerMutationQuotaManager, MutationQuota
from pykraft.raft.api import LeaderAndEpoch
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch
from pykraft.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    decode_metadata_record,
    encode_metadata_record,
)

log = logging.getLogger(__name__)

RecordWriter = Callable[[int, list[bytes]], int]
"""``(now_ms, record values) -> offset of the last one``: the raft core's ``append``."""

#: Kafka's NotControllerException text for a write refused in pre-migration mode.
PRE_MIGRATION_MESSAGE = "The controller is in pre-migration mode."
#: The writes Kafka flags RUNS_IN_PREMIGRATION (besides the migration's own): what the
#: brokers and controllers need to register and stay alive while the load waits for them.
_RUNS_IN_PREMIGRATION = (BrokerRegistrationRequest, BrokerHeartbeatRequest,
                         UnregisterBrokerRequest, ControllerRegistrationRequest)


def not_controller_answer(request: object) -> object:
    """The NOT_CONTROLLER answer to ``request`` when this controller is not (or stopped
    being) the active one."""
    if isinstance(request, MigrationRequest):
        return MigrationRefused(ErrorCode.NOT_CONTROLLER, "This controller is not active.")
    return error_response(request, ErrorCode.NOT_CONTROLLER)


def _heartbeat(ctx: ControllerContext, request: BrokerHeartbeatRequest) -> ControllerResult:
    """Kafka's ReplicationControlManager.processBrokerHeartbeat: the broker's state change,
    then the log directories it reports offline (KIP-858)."""
    result = cluster_control.heartbeat(ctx, request)
    broker = ctx.image.cluster.brokers.get(request.broker_id)
    if broker is None or broker.epoch != request.broker_epoch:
        return result
    offline = dir_assignment.directories_offline(ctx, broker, request.offline_log_dirs)
    return ControllerResult((*result.records, *offline), result.response) if offline else result


def _operate(ctx: ControllerContext, request: object) -> ControllerResult | None:
    """Run the write operation for ``request``; None for a request type it does not know."""
    if isinstance(request, BrokerRegistrationRequest):
        return cluster_control.register_broker(ctx, request)
    if isinstance(request, BrokerHeartbeatRequest):
        return _heartbeat(ctx, request)
    if isinstance(request, UnregisterBrokerRequest):
        return cluster_control.unregister_broker(ctx, request)
    if isinstance(request, ControllerRegistrationRequest):
        return cluster_control.register_controller(ctx, request)
    if isinstance(request, CreateTopicsRequest):
        return replication_control.create_topics(ctx, request)
    if isinstance(request, DeleteTopicsRequest):
        return replication_control.delete_topics(ctx, request)
    if isinstance(request, CreatePartitionsRequest):
        return replication_control.create_partitions(ctx, request)
    if isinstance(request, AlterPartitionRequest):
        return replication_control.alter_partition(ctx, request)
    if isinstance(request, ElectLeadersRequest):
        return leader_elections.elect_leaders(ctx, request)
    if isinstance(request, AlterPartitionReassignmentsRequest):
        return reassignment.alter_partition_reassignments(ctx, request)
    if isinstance(request, AssignReplicasToDirsRequest):
        return dir_assignment.assign_replicas_to_dirs(ctx, request)
    if isinstance(request, IncrementalAlterConfigsRequest):
        return config_control.incremental_alter_configs(ctx, request)
    if isinstance(request, AlterConfigsRequest):
        return config_control.alter_configs(ctx, request)
    if isinstance(request, UpdateFeaturesRequest):
        return features_control.update_features(ctx, request)
    if isinstance(request, AllocateProducerIdsRequest):
        return features_control.allocate_producer_ids(ctx, request)
    if isinstance(request, AlterUserScramCredentialsRequest):
        return scram_control.alter_user_scram_credentials(ctx, request)
    if isinstance(request, CreateAclsRequest):
        return acl_control.create_acls(ctx, request)
    if isinstance(request, DeleteAclsRequest):
        return acl_control.delete_acls(ctx, request)
    if isinstance(request, AlterClientQuotasRequest):
        return client_quota_control.alter_client_quotas(ctx, request)
    if isinstance(request, TokenRequest):
        return delegation_token_control.operate(ctx, request)
    return None


@dataclass(frozen=True, slots=True)
class _Waiting:
    offset: int
    ticket: int
    request: object
    response: object
    quota: MutationQuota = UNBOUNDED
    """A mutation's quota: its throttle time is read when the response is released."""


@dataclass(slots=True)
class _Rebalance:
    """The preferred-leader rebalance's schedule (soft state of the active controller)."""

    due_ms: int | None = None
    dirty: bool = False
    """A partition's leadership changed since the last look for an imbalance."""
    soon: bool = False
    """The last run hit its limit: the next runs at once."""


class QuorumController:
    """See the module docstring; implements :class:`~pykraft.raft.api.RaftListener`."""

    def __init__(
        self,
        config: ControllerConfig,
        *,
        writer: RecordWriter,
        rng: random.Random,
        bootstrap: Sequence[object] = DEFAULT_BOOTSTRAP,
        bootstrap_source: str = DEFAULT_BOOTSTRAP_SOURCE,
        ip_resolves: Callable[[str], bool] = literal_ip,
    ) -> None:
        self.config = config
        self._writer = writer
        self._rng = rng
        ordered_bootstrap(bootstrap)  # refuse a bootstrap without metadata.version up front
        self._bootstrap = tuple(bootstrap)
        self._bootstrap_source = bootstrap_source
        self._ip_resolves = ip_resolves  # the driver's host name lookup (quota entities)
        self._min_insync_replicas = static_min_insync_replicas(config.properties)
        self._tokens = config.tokens
        self.mutation_quotas = ControllerMutationQuotaManager(
            config.mutation_quota_samples, config.mutation_quota_window_s)
        """The controller mutation quotas' buckets (soft state of this process, kept
        across leadership changes as Kafka's ControllerServer keeps its quota managers)."""
        self._committed = ImageLoader()
        self._committed_registrations: dict[int, int] = {}
        self._image = MetadataImage()
        self._registrations: dict[int, int] = {}
        self._in_transaction = False
        """A metadata transaction is open in the current state (the load's, while it runs)."""
        self._committed_offset = -1
        self._next_offset = 0
        self._active = False
        self._activation_epoch: int | None = None
        self._epoch = -1
        self._last_write_ms = 0
        self._now_ms = 0
        self._sessions: dict[int, int] = {}
        self._metadata_offsets: dict[int, int] = {}
        self._shutdown_offsets: dict[int, int] = {}
        self._next_unclean_ms = 0
        self._next_token_sweep_ms = 0
        self._balance = _Rebalance()
        self._waiting: deque[_Waiting] = deque()
        self._ready: list[tuple[int, object]] = []
        self._tickets = 0

    # -- views ------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self._active

    @property
    def image(self) -> MetadataImage:
        """The current image: committed records plus this leader's uncommitted ones."""
        return self._image

    @property
    def committed_image(self) -> MetadataImage:
        return self._committed.image

    @property
    def committed_delta(self) -> MetadataDelta:
        """The committed changes that made :attr:`committed_image`."""
        return self._committed.last_delta

    @property
    def committed_offset(self) -> int:
        return self._committed_offset

    @property
    def next_offset(self) -> int:
        return self._next_offset

    @property
    def in_pre_migration(self) -> bool:
        """Kafka's ``inPreMigrationMode``: the ZooKeeper load has not committed, so only the
        writes flagged RUNS_IN_PREMIGRATION run (the current state, as Kafka's timeline)."""
        return self._image.features.zk_migration_state == ZkMigrationState.PRE_MIGRATION

    # -- RaftListener -----------------------------------------------------------------

    def handle_commit(self, batch: RecordBatch) -> None:
        if not batch.is_control:
            for record in batch.records():
                if record.value is None:
                    raise MetadataRecordError("metadata record with a null value",
                                              position=batch.position)
                decoded = decode_metadata_record(record.value)
                if isinstance(decoded.message, RegisterBrokerRecord):
                    self._committed_registrations[decoded.message.broker_id] = record.offset
                self._committed.replay(decoded, record.offset)
        self._committed.finish(Provenance(batch.last_offset, batch.epoch,
                                          batch.header.max_timestamp))
        self._committed_offset = batch.last_offset
        if not self._active:
            self._reset_to_committed()
            self._next_offset = self._committed_offset + 1
        self._release()

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        if leader.leader_id != self.config.node_id or leader.epoch != self._epoch:
            self._resign()
        self._epoch = leader.epoch
        if leader.leader_id == self.config.node_id and not self._active:
            self._activation_epoch = leader.epoch

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        raise ControllerError(
            f"snapshot {snapshot_id} must be loaded with load_image(), which takes its image")

    def load_image(self, image: MetadataImage) -> None:
        """Replace the committed state with a snapshot's image (on start, or when the log
        start passed what this controller replayed, e.g. after a FetchSnapshot).

        Only an inactive controller loads: the raft core never hands a leader a snapshot.
        Everything derived from the log is rebuilt from the image; the rest (broker
        sessions, waiting requests) is empty while inactive and is rebuilt on activation.
        A pending activation (a restarted former leader hears "you led this epoch" before
        its log is loaded) has written nothing yet and activates from the loaded state.
        """
        if self._active:
            raise ControllerError(
                f"the active controller cannot load snapshot at {image.provenance.last_offset}")
        self._committed = ImageLoader(image)
        self._committed_registrations = {
            broker_id: broker.epoch for broker_id, broker in image.cluster.brokers.items()
        }
        self._committed_offset = image.provenance.last_offset
        self._reset_to_committed()
        self._next_offset = self._committed_offset + 1

    # -- driver -----------------------------------------------------------------------

    def submit(self, now_ms: int, request: object) -> int:
        """Handle a request; its response appears in :meth:`take_responses` under the
        returned ticket once its records commit."""
        self._advance(now_ms)
        self._tickets += 1
        ticket = self._tickets
        mutation = request if isinstance(request, Mutation) else None
        if mutation is not None:
            request = mutation.body
        if not self._active:
            self._ready.append((ticket, not_controller_answer(request)))
            return ticket
        if isinstance(request, MigrationRequest):
            self._migrate(ticket, request)
            return ticket
        if isinstance(request, DescribeConfigsRequest):  # a read: answered from committed state
            described = config_control.describe_configs(
                self.committed_image, request, node_id=self.config.node_id,
                static=self.config.properties)
            self._ready.append((ticket, described))
            return ticket
        if isinstance(request, ListPartitionReassignmentsRequest):  # a read, as Kafka's
            self._ready.append((ticket, reassignment.list_partition_reassignments(
                self.committed_image, request)))
            return ticket
        if isinstance(request, DescribeAclsRequest):  # a read too, as Kafka's authorizer's
            self._ready.append((ticket, acl_control.describe_acls(
                self.committed_image, request,
                enabled=authorizer_config(self.config.properties) is not None)))
            return ticket
        if self.in_pre_migration and not isinstance(request, _RUNS_IN_PREMIGRATION):
            self._ready.append((ticket, error_response(request, ErrorCode.NOT_CONTROLLER,
                                                       PRE_MIGRATION_MESSAGE)))
            return ticket
        self._touch_session(request)
        quota = UNBOUNDED if mutation is None else self._mutation_quota(mutation)
        result = _operate(self._context(quota), request)
        if result is None:
            raise TypeError(f"the controller does not handle {type(request).__name__}")
        if isinstance(request, BrokerRegistrationRequest) and result.records:
            self._sessions[request.broker_id] = self._now_ms
        if not self._append(ticket, request, result.records):
            return ticket
        if isinstance(request, BrokerHeartbeatRequest):
            self._track_shutdown(request, result.response)
        self._wait(ticket, request, result.response, quota)
        return ticket

    def tick(self, now_ms: int) -> None:
        """Activation, fencing of brokers whose session lapsed, the periodic unclean
        elections, rebalances and expired-token sweeps, NoOpRecords when idle."""
        self._advance(now_ms)
        if not self._active:
            return
        try:
            if not self.in_pre_migration:  # Kafka refuses them all in pre-migration mode
                self._periodic_writes(now_ms)
            idle = self.config.max_idle_interval_ms
            if (idle and self._image.metadata_version >= MV_3_3_IV1
                    and now_ms - self._last_write_ms >= idle):
                self._write((NoOpRecord(),))
        except NotLeaderError:
            self._resign()

    def _periodic_writes(self, now_ms: int) -> None:
        """Fencing of lapsed sessions, unclean elections, token sweeps, rebalances."""
        while fences := cluster_control.fence_one_expired(self._context()):
            self._write(tuple(fences))
        if now_ms >= self._next_unclean_ms:
            self._next_unclean_ms = now_ms + self.config.unclean_election_interval_ms
            self._write(tuple(cluster_control.elect_unclean(self._context())))
        self._sweep_tokens()
        if self._balance.due_ms is not None and now_ms >= self._balance.due_ms:
            records, more = leader_elections.balance_leaders(self._context())
            self._balance = _Rebalance(dirty=True, soon=more)
            self._write(tuple(records))
        self._schedule_balance()

    def broker_unreachable(self, now_ms: int, broker_id: int, broker_epoch: int) -> bool:
        """Evidence from the driver that broker ``broker_id``'s incarnation ``broker_epoch``
        is gone (every listener it registered refused a connection): fence it now rather
        than at its session's expiry, if ``fence_on_refused_connection`` allows and the
        evidence is still about its current, unfenced registration. True if it was fenced."""
        self._advance(now_ms)
        if (not self._active or not self.config.fence_on_refused_connection
                or self.in_pre_migration):
            return False
        fences = cluster_control.fence_unreachable(self._context(), broker_id, broker_epoch)
        try:
            self._write(tuple(fences))
        except NotLeaderError:
            self._resign()
            return False
        return bool(fences)

    def next_deadline_ms(self) -> int | None:
        """When :meth:`tick` has work next (None while inactive, or in pre-migration mode
        without NoOpRecords)."""
        if self._activation_epoch is not None:
            return self._now_ms
        if not self._active:
            return None
        deadlines = []
        if self.config.max_idle_interval_ms:
            deadlines.append(self._last_write_ms + self.config.max_idle_interval_ms)
        if not self.in_pre_migration:
            deadlines += [
                self._sessions.get(b.broker_id, self._now_ms) + self.config.session_timeout_ms
                for b in self._image.cluster.brokers.values() if not b.fenced
            ]
            deadlines.append(self._next_unclean_ms)
            if self._sweeps_tokens:
                deadlines.append(self._next_token_sweep_ms)
            if self._balance.due_ms is not None:
                deadlines.append(self._balance.due_ms)
        return min(deadlines, default=None)

    def take_responses(self) -> list[tuple[int, object]]:
        ready, self._ready = self._ready, []
        return ready

    # -- internals --------------------------------------------------------------------

    def _append(self, ticket: int, request: object, records: Sequence[object]) -> bool:
        """Write an operation's records; False (and ``request`` answered NOT_CONTROLLER)
        if the core says this node no longer leads."""
        try:
            self._write(records)
        except NotLeaderError:
            self._resign()
            self._ready.append((ticket, not_controller_answer(request)))
            return False
        return True

    def _wait(self, ticket: int, request: object, response: object,
              quota: MutationQuota = UNBOUNDED) -> None:
        """Hold ``response`` until everything written so far commits."""
        self._waiting.append(_Waiting(self._next_offset - 1, ticket, request, response, quota))
        self._release()
        self._schedule_balance()

    def _migrate(self, ticket: int, request: MigrationRequest) -> None:
        """One of the driver's writes (Kafka's MigrationRecordConsumer), answered with the
        offset and epoch of its last record once it commits."""
        refusal = migration_write_refusal(self._image, request,
                                          in_transaction=self._in_transaction)
        if refusal is not None:
            self._ready.append((ticket, MigrationRefused(ErrorCode.INVALID_REQUEST, refusal)))
            return
        records, warning = migration_records(self._image, request)
        if self._append(ticket, request, records):
            self._wait(ticket, request,
                       MigrationWritten(self._next_offset - 1, self._epoch, warning))

    def _advance(self, now_ms: int) -> None:
        self._now_ms = max(self._now_ms, now_ms)
        if self._activation_epoch is not None and not self._active:
            self._activate()

    def _activate(self) -> None:
        self._activation_epoch = None
        self._active = True
        self._reset_to_committed()
        self._next_offset = self._committed_offset + 1
        self._sessions = dict.fromkeys(self._image.cluster.brokers, self._now_ms)
        self._metadata_offsets.clear()
        self._shutdown_offsets.clear()
        self._next_unclean_ms = self._now_ms + self.config.unclean_election_interval_ms
        self._next_token_sweep_ms = self._now_ms + self._tokens.expiry_check_interval_ms
        self._balance = _Rebalance(dirty=True)
        activated = activation(self.committed_image,
                               transaction_start_offset=self._committed.transaction_start_offset,
                               bootstrap=self._bootstrap, bootstrap_source=self._bootstrap_source,
                               min_insync_replicas=self._min_insync_replicas,
                               zk_migration_enabled=self.config.zk_migration_enabled)
        log.warning("%s", activated.message)  # Kafka's level for its activation line
        self._last_write_ms = self._now_ms
        try:
            self._write(tuple(activated.records))
        except NotLeaderError:
            self._resign()

    @property
    def _sweeps_tokens(self) -> bool:
        """Kafka's controller sweeps expired tokens only with tokens on, at a metadata.version
        that has them."""
        return self._tokens.enabled and self._image.metadata_version >= MV_3_6_IV2

    def _sweep_tokens(self) -> None:
        """Remove expired tokens every ``delegation.token.expiry.check.interval.ms``; a sweep
        that hit its limit is followed by the next at once."""
        if not self._sweeps_tokens or self._now_ms < self._next_token_sweep_ms:
            return
        self._next_token_sweep_ms = self._now_ms + self._tokens.expiry_check_interval_ms
        more = True
        while more:
            removals, more = delegation_token_control.sweep_expired_tokens(self._context())
            self._write(tuple(removals))

    def _context(self, quota: MutationQuota = UNBOUNDED) -> ControllerContext:
        timeout = self.config.session_timeout_ms
        expired = frozenset(
            broker_id for broker_id in self._image.cluster.brokers
            if self._sessions.get(broker_id, -timeout - 1) + timeout < self._now_ms
        )
        return ControllerContext(self.config, self._image, self._next_offset, self._now_ms,
                                 self._rng, dict(self._registrations), expired,
                                 dict(self._shutdown_offsets), dict(self._metadata_offsets),
                                 self._ip_resolves, quota)

    def _mutation_quota(self, mutation: Mutation) -> MutationQuota:
        """The quota of ``mutation``'s client, by the committed quotas (those Kafka's
        controller has published to its quota manager)."""
        self.mutation_quotas.update(self._committed.image.client_quotas)
        return self.mutation_quotas.quota_for(mutation.user, mutation.client_id,
                                              strict=mutation.strict, now_ms=self._now_ms)

    def _track_shutdown(self, request: BrokerHeartbeatRequest, response: object) -> None:
        """Kafka's controlled shutdown offset: the end of what the heartbeat that began a
        controlled shutdown wrote; forgotten once the broker is fenced."""
        if getattr(response, "error_code", None) != ErrorCode.NONE:
            return
        broker_id = request.broker_id
        if getattr(response, "is_fenced", True):
            self._shutdown_offsets.pop(broker_id, None)
        elif request.want_shut_down or broker_id in self._shutdown_offsets:
            self._shutdown_offsets.setdefault(broker_id, self._next_offset - 1)

    def _touch_session(self, request: object) -> None:
        if isinstance(request, BrokerHeartbeatRequest):
            broker = self._image.cluster.brokers.get(request.broker_id)
            if broker is not None and broker.epoch == request.broker_epoch:
                self._sessions[broker.broker_id] = self._now_ms
                self._metadata_offsets[broker.broker_id] = request.current_metadata_offset
        elif isinstance(request, UnregisterBrokerRequest):
            self._sessions.pop(request.broker_id, None)

    def _write(self, records: Sequence[object]) -> None:
        """Append ``records`` (chunks of at most MAX_RECORDS_PER_BATCH) and replay them,
        as the log will hold them, into the current image."""
        if not records:
            return
        mv = self._image.metadata_version
        values = [encode_metadata_record(r.message, r.version) if isinstance(r, MetadataRecord)
                  else encode_metadata_record(r, record_version(type(r), mv)) for r in records]
        for chunk in chunked(values, MAX_RECORDS_PER_BATCH):
            last = self._writer(self._now_ms, list(chunk))
            first = last - len(chunk) + 1  # one append: consecutive offsets ending at last
            if first < self._next_offset:
                raise ControllerError(f"records were appended at offsets {first}-{last}, "
                                      f"below the next offset {self._next_offset}")
            # the core may have put control records (a voter change) before them
            delta = MetadataDelta(self._image)
            for offset, value in enumerate(chunk, start=first):
                decoded = decode_metadata_record(value)
                if isinstance(decoded.message, RegisterBrokerRecord):
                    self._registrations[decoded.message.broker_id] = offset
                elif isinstance(decoded.message, BeginTransactionRecord):
                    self._in_transaction = True
                elif isinstance(decoded.message, EndTransactionRecord | AbortTransactionRecord):
                    self._in_transaction = False
                delta.replay(decoded)
            self._image = delta.apply(Provenance(last, self._epoch, self._now_ms))
            self._next_offset = last + 1
        if any(isinstance(r, PartitionRecord | PartitionChangeRecord) for r in records):
            self._balance.dirty = True
        self._last_write_ms = self._now_ms
        brokers = self._image.cluster.brokers
        self._shutdown_offsets = {  # a fenced broker leaves controlled shutdown (Kafka's touch)
            b: offset for b, offset in self._shutdown_offsets.items()
            if b in brokers and not brokers[b].fenced}

    def _schedule_balance(self) -> None:
        """Kafka's ``maybeScheduleNextBalancePartitionLeaders``, after every write: with the
        rebalance on and none scheduled, a leadership change that left some partition
        imbalanced schedules one, an interval away (or at once after a run that hit its
        limit)."""
        balance = self._balance
        if not self._active or not balance.dirty or balance.due_ms is not None:
            return
        balance.dirty = False
        if self.config.auto_leader_rebalance and leader_elections.imbalanced(self._image):
            delay = (leader_elections.RERUN_DELAY_MS if balance.soon
                     else self.config.leader_imbalance_check_interval_ms)
            balance.due_ms = self._now_ms + delay

    def _release(self) -> None:
        while self._waiting and self._waiting[0].offset <= self._committed_offset:
            done = self._waiting.popleft()
            throttle_ms = self.mutation_quotas.counted(done.quota.throttle_time_ms(self._now_ms))
            self._ready.append((done.ticket, throttled(done.response, throttle_ms)))

    def _reset_to_committed(self) -> None:
        self._image = self._committed.image
        self._registrations = dict(self._committed_registrations)
        self._in_transaction = self._committed.in_transaction

    def _resign(self) -> None:
        self._activation_epoch = None
        if not self._active:
            return
        self._active = False
        self._reset_to_committed()
        self._next_offset = self._committed_offset + 1
        self._balance = _Rebalance()
        self._sessions.clear()
        self._metadata_offsets.clear()
        self._shutdown_offsets.clear()
        while self._waiting:
            done = self._waiting.popleft()
            self._ready.append((done.ticket, not_controller_answer(done.request)))
