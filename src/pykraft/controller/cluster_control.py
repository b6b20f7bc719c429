"""Broker and controller registration, heartbeats, fencing (Kafka's ClusterControlManager,
BrokerHeartbeatManager and the fencing half of ReplicationControlManager).

Broker epoch: a new incarnation gets the controller's next write offset, the offset of the
first record of its registration batch. A retried registration of the same incarnation keeps
its epoch and fenced state. A fenced broker is unfenced by a heartbeat with
``WantFence=false`` and ``CurrentMetadataOffset`` at or past the offset of its latest
RegisterBrokerRecord, i.e. once it has replayed its own registration. An unfenced broker is
fenced when it asks to be, when its session (``broker.session.timeout.ms`` without a
heartbeat) expires, at the end of a controlled shutdown, or (pykraft's own fast failover,
:func:`fence_unreachable`) when the runtime found every listener it registered refusing
connections: its process is gone. A heartbeat with
``WantShutDown`` from a broker that leads nothing fences it and tells it to shut down at
once; otherwise the broker enters controlled shutdown: it leaves every ISR, its leaderships
move to other ISR members, and it is told to shut down (and fenced) only once it leads
nothing and every active broker's heartbeat reported a metadata offset at or past the end
of those moves (Kafka's controlled shutdown offset), so clients find the new leaders.
Fencing, unfencing and controlled shutdown elect leaders by
:mod:`pykraft.controller.partition_change`, unclean where the topic allows it; a periodic
check (``unclean.leader.election.interval.ms``) does the same for leaderless partitions.
"""

from __future__ import annotations

from pykraft.controller import config_control
from pykraft.controller.broker_liveness import evidence_is_current
from pykraft.controller.context import ControllerContext, ControllerResult, is_usable
from pykraft.controller.directories import has_online_dir
from pykraft.controller.partition_change import (
    Election,
    Usable,
    elect_leaderless,
    leads_any,
    remove_from_isrs,
)
from pykraft.ids import ZERO_UUID
from pykraft.image.cluster_image import FENCE, IN_CONTROLLED_SHUTDOWN, UNFENCE, BrokerRegistration
from pykraft.image.features import ZkMigrationState
from pykraft.image.versions import MV_3_2_IV0, MV_3_3_IV2, MV_3_3_IV3, MV_3_4_IV0, MV_3_7_IV0
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.messages.kafka.broker_heartbeat_response import BrokerHeartbeatResponse
from pykraft.messages.kafka.broker_registration_request import BrokerRegistrationRequest
from pykraft.messages.kafka.broker_registration_response import BrokerRegistrationResponse
from pykraft.messages.kafka.controller_registration_request import (
    ControllerRegistrationRequest,
)
from pykraft.messages.kafka.controller_registration_response import (
    ControllerRegistrationResponse,
)
from pykraft.messages.kafka.unregister_broker_request import UnregisterBrokerRequest
from pykraft.messages.kafka.unregister_broker_response import UnregisterBrokerResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ControllerEndpoint,
    ControllerFeature,
    FenceBrokerRecord,
    MetadataRecord,
    RegisterControllerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    api_key_of,
)


def _registration_error(code: ErrorCode) -> BrokerRegistrationResponse:
    return BrokerRegistrationResponse(error_code=code)  # Kafka's default epoch: -1


def migration_registration_refusal(ctx: ControllerContext, req: BrokerRegistrationRequest
                                   ) -> tuple[ErrorCode, str] | None:
    """Kafka 3.9's ZooKeeper migration rules for a broker registration (ClusterControlManager.
    registerBroker), as (error, Kafka's exception text), or None when they allow it: a
    ZooKeeper broker (``isMigratingZkBroker``) only with migration on, at a metadata.version
    with it, and reachable on this controller's inter-broker listener (where the legacy RPCs
    go); a KRaft broker not before the load committed (pre-migration)."""
    if req.is_migrating_zk_broker:
        if not (ctx.config.zk_migration_enabled and ctx.metadata_version >= MV_3_4_IV0):
            return (ErrorCode.BROKER_ID_NOT_REGISTERED,
                    "Controller does not support registering ZK brokers.")
        listener = ctx.config.inter_broker_listener_name
        if all(lst.name != listener for lst in req.listeners):
            return (ErrorCode.INVALID_REGISTRATION,
                    f"Broker does not have the current inter.broker.listener {listener}")
    elif ctx.image.features.zk_migration_state == ZkMigrationState.PRE_MIGRATION:
        return (ErrorCode.BROKER_ID_NOT_REGISTERED,
                "Controller is in pre-migration mode and cannot register KRaft brokers until "
                "the metadata migration is complete.")
    return None


def register_broker(ctx: ControllerContext, req: BrokerRegistrationRequest) -> ControllerResult:
    if ctx.config.cluster_id is not None and req.cluster_id != ctx.config.cluster_id:
        return ControllerResult((), _registration_error(ErrorCode.INCONSISTENT_CLUSTER_ID))
    if req.incarnation_id == ZERO_UUID:
        return ControllerResult((), _registration_error(ErrorCode.INVALID_REGISTRATION))
    refusal = migration_registration_refusal(ctx, req)
    if refusal is not None:
        return ControllerResult((), _registration_error(refusal[0]))
    if not _supports_finalized(ctx, {f.name: (f.min_supported_version, f.max_supported_version)
                                     for f in req.features}):
        return ControllerResult((), _registration_error(ErrorCode.UNSUPPORTED_VERSION))
    existing = ctx.image.cluster.brokers.get(req.broker_id)
    records: list[object] = []
    if existing is not None and existing.incarnation_id == req.incarnation_id:
        epoch, fenced, shutting_down = (existing.epoch, existing.fenced,
                                        existing.in_controlled_shutdown)
    else:
        # Kafka refuses another incarnation only while this one has a valid session: a
        # fenced broker (a clean shutdown ends fenced) has none, so it restarts at once.
        # Beyond Kafka, a restart on the same log directories (a broker killed with -9 and
        # started again) is not waited out either: see _restarted_on_same_storage
        if (existing is not None and not existing.fenced
                and existing.broker_id not in ctx.session_expired
                and not _restarted_on_same_storage(existing, req)):
            return ControllerResult((), _registration_error(
                ErrorCode.DUPLICATE_BROKER_REGISTRATION))
        records += _previous_incarnation_gone(ctx, existing, req)
        epoch, fenced, shutting_down = ctx.next_offset, True, False
    registration = BrokerRegistration(
        broker_id=req.broker_id, epoch=epoch, incarnation_id=req.incarnation_id,
        listeners=tuple(BrokerEndpoint(name=lst.name, host=lst.host, port=lst.port,
                                       security_protocol=lst.security_protocol)
                        for lst in req.listeners),
        features=tuple(BrokerFeature(name=f.name, min_supported_version=f.min_supported_version,
                                     max_supported_version=f.max_supported_version)
                       for f in req.features),
        rack=req.rack, fenced=fenced, in_controlled_shutdown=shutting_down,
        log_dirs=tuple(d for d in req.log_dirs if d != ZERO_UUID),
        is_migrating_zk_broker=req.is_migrating_zk_broker,
    )
    records.append(registration.to_record())
    response = BrokerRegistrationResponse(error_code=ErrorCode.NONE, broker_epoch=epoch)
    return ControllerResult(tuple(records), response)


def _previous_incarnation_gone(ctx: ControllerContext, existing: BrokerRegistration | None,
                               req: BrokerRegistrationRequest) -> list[object]:
    """What a new incarnation's registration says of the previous one (Kafka's
    ``handleBrokerShutdown``). It shut down cleanly if the request names its epoch
    (``PreviousBrokerEpoch``, from the broker's clean shutdown files; never before v3,
    where the field reads -1). With eligible leader replicas on, an unclean one may have
    lost unflushed records: the broker leaves every ISR and ELR and may not lead them
    (KIP-966). Otherwise a registered, unfenced previous incarnation is fenced first, out of
    every ISR."""
    clean = existing is not None and existing.epoch == req.previous_broker_epoch
    records: list[object] = []
    if config_control.elr_enabled(ctx.image) and not clean:
        records += remove_from_isrs(ctx.image, req.broker_id, _without(ctx, req.broker_id),
                                    from_elr=True, unclean_shutdown=True)
        if existing is not None and not existing.fenced:
            records.append(_registration_change(ctx, existing, fenced=True))
    elif existing is not None and not existing.fenced:
        records += fence_broker(ctx, existing)
    return records


def _restarted_on_same_storage(existing: BrokerRegistration,
                               req: BrokerRegistrationRequest) -> bool:
    """Whether a new incarnation names exactly the registered one's log directories (their
    ``directory.id`` values, written when each was formatted): the same storage, so the old
    process is gone (a crash and restart) and its session need not be waited out (Kafka's
    ``broker.session.timeout.ms``, 9 s). Another process with a duplicated ``node.id`` has
    its own directories and is still refused; so is a registration naming none."""
    named = frozenset(d for d in req.log_dirs if d != ZERO_UUID)
    return bool(named) and named == frozenset(existing.log_dirs)


def _supports_finalized(ctx: ControllerContext, ranges: dict[str, tuple[int, int]]) -> bool:
    """A node must support every finalized feature level (absent = supports level 0 only)."""
    for name, level in ctx.image.features.finalized.items():
        low, high = ranges.get(name, (0, 0))
        if not low <= level <= high:
            return False
    return True


def _heartbeat_response(code: ErrorCode, *, caught_up: bool = False, fenced: bool = True,
                        shut_down: bool = False) -> BrokerHeartbeatResponse:
    return BrokerHeartbeatResponse(error_code=code, is_caught_up=caught_up, is_fenced=fenced,
                                   should_shut_down=shut_down)


def heartbeat(ctx: ControllerContext, req: BrokerHeartbeatRequest) -> ControllerResult:
    """Kafka's BrokerHeartbeatManager.calculateNextBrokerState: FENCED, UNFENCED or
    CONTROLLED_SHUTDOWN now, and the state the heartbeat moves the broker to."""
    broker = ctx.image.cluster.brokers.get(req.broker_id)
    if broker is None or broker.epoch != req.broker_epoch:
        # Kafka's checkBrokerEpoch: no registration is a stale epoch too; either way the
        # broker registers again
        return ControllerResult((), _heartbeat_response(ErrorCode.STALE_BROKER_EPOCH))
    caught_up = req.current_metadata_offset >= ctx.registration_offsets.get(
        broker.broker_id, broker.epoch)

    def answer(records: list[object], *, fenced: bool,
               shut_down: bool = False) -> ControllerResult:
        return ControllerResult(tuple(records), _heartbeat_response(
            ErrorCode.NONE, caught_up=caught_up, fenced=fenced, shut_down=shut_down))

    if broker.fenced:
        if req.want_shut_down:
            return answer([], fenced=True, shut_down=True)
        if req.want_fence or not caught_up:
            return answer([], fenced=True)
        return answer(unfence_broker(ctx, broker), fenced=False)
    shutdown_offset = ctx.shutdown_offsets.get(broker.broker_id)
    if shutdown_offset is not None:  # in controlled shutdown, whatever it asks now
        if (leads_any(ctx.image, broker.broker_id)
                or shutdown_offset > ctx.lowest_active_offset()):
            # leaderships left to move, or an active broker has not yet seen them move
            return answer([], fenced=False)
        return answer(fence_broker(ctx, broker), fenced=True, shut_down=True)
    if req.want_fence:
        return answer(fence_broker(ctx, broker), fenced=True, shut_down=req.want_shut_down)
    if req.want_shut_down:
        if leads_any(ctx.image, broker.broker_id):
            return answer(_enter_controlled_shutdown(ctx, broker), fenced=False)
        return answer(fence_broker(ctx, broker), fenced=True, shut_down=True)
    return answer([], fenced=False)


def _registration_change(ctx: ControllerContext, broker: BrokerRegistration, *,
                         fenced: bool | None = None,
                         in_controlled_shutdown: bool = False) -> object:
    if ctx.metadata_version < MV_3_3_IV2:
        record_type = FenceBrokerRecord if fenced else UnfenceBrokerRecord
        return record_type(id=broker.broker_id, epoch=broker.epoch)
    change = BrokerRegistrationChangeRecord(
        broker_id=broker.broker_id, broker_epoch=broker.epoch,
        fenced={True: FENCE, False: UNFENCE, None: 0}[fenced],
        in_controlled_shutdown=IN_CONTROLLED_SHUTDOWN if in_controlled_shutdown else 0,
    )
    # Kafka writes the version that introduced the change, whatever the metadata.version:
    # v0 to fence or unfence, v1 for controlled shutdown (ReplicationControlManager.
    # handleBrokerFenced/Unfenced/InControlledShutdown, 3.9 and 4.4 alike)
    return MetadataRecord(api_key_of(BrokerRegistrationChangeRecord),
                          1 if in_controlled_shutdown else 0, change)


def election(ctx: ControllerContext, usable: Usable | None = None) -> Election:
    """Elections as this context allows them (``usable`` overrides who may lead)."""
    return Election(usable=ctx.usable if usable is None else usable,
                    unclean=lambda topic: config_control.unclean_election_enabled(ctx, topic),
                    leader_recovery=ctx.metadata_version >= MV_3_2_IV0,
                    elr=config_control.elr_enabled(ctx.image),
                    min_isr=lambda topic: config_control.min_insync_replicas(ctx, topic),
                    dir_online=lambda partition, replica: has_online_dir(
                        ctx.image.cluster.brokers.get(replica), partition))


def _without(ctx: ControllerContext, broker_id: int) -> Election:
    """Elections as if ``broker_id`` could no longer lead or join an ISR."""
    return election(ctx, lambda b: b != broker_id and ctx.usable(b))


def fence_broker(ctx: ControllerContext, broker: BrokerRegistration) -> list[object]:
    """Take the broker out of every ISR and leadership, then fence it (Kafka's order)."""
    return [*remove_from_isrs(ctx.image, broker.broker_id, _without(ctx, broker.broker_id)),
            _registration_change(ctx, broker, fenced=True)]


def unfence_broker(ctx: ControllerContext, broker: BrokerRegistration) -> list[object]:
    """Unfence, then give leaderless partitions a leader the broker makes possible."""
    def usable(broker_id: int) -> bool:
        return broker_id == broker.broker_id or ctx.usable(broker_id)

    return [_registration_change(ctx, broker, fenced=False),
            *elect_leaderless(ctx.image, election(ctx, usable))]


def _enter_controlled_shutdown(ctx: ControllerContext,
                               broker: BrokerRegistration) -> list[object]:
    records: list[object] = []
    if ctx.metadata_version >= MV_3_3_IV3 and not broker.in_controlled_shutdown:
        records.append(_registration_change(ctx, broker, in_controlled_shutdown=True))
    return records + remove_from_isrs(ctx.image, broker.broker_id,
                                      _without(ctx, broker.broker_id))


def fence_one_expired(ctx: ControllerContext) -> list[object]:
    """Fence the first unfenced broker whose session has lapsed. One at a time, as Kafka's
    maybeFenceOneStaleBroker: the next one's changes must start from this one's."""
    for broker_id in sorted(ctx.session_expired):
        broker = ctx.image.cluster.brokers.get(broker_id)
        if broker is not None and not broker.fenced:
            return fence_broker(ctx, broker)
    return []


def fence_unreachable(ctx: ControllerContext, broker_id: int, epoch: int) -> list[object]:
    """Fence a broker whose registered listeners all refused a connection, as session expiry
    would, but only the incarnation the evidence is about (``epoch``) and only while its
    session is open: a re-registered, already fenced or lapsed broker is left alone."""
    broker = ctx.image.cluster.brokers.get(broker_id)
    if broker is None or broker_id in ctx.session_expired or not evidence_is_current(
            None if broker.fenced else broker.epoch, epoch):
        return []
    return fence_broker(ctx, broker)


def elect_unclean(ctx: ControllerContext) -> list[object]:
    """Kafka's periodic maybeElectUncleanLeaders: leaders for leaderless partitions of the
    topics that allow unclean elections."""
    allowed = election(ctx)
    return elect_leaderless(ctx.image, allowed, topics=allowed.unclean)


def unregister_broker(ctx: ControllerContext, req: UnregisterBrokerRequest) -> ControllerResult:
    broker = ctx.image.cluster.brokers.get(req.broker_id)
    if broker is None:
        return ControllerResult((), UnregisterBrokerResponse(
            error_code=ErrorCode.BROKER_ID_NOT_REGISTERED,
            error_message=f"Broker ID {req.broker_id} is not currently registered"))
    records = [*remove_from_isrs(ctx.image, broker.broker_id, _without(ctx, broker.broker_id),
                                 from_elr=True),
               UnregisterBrokerRecord(broker_id=broker.broker_id, broker_epoch=broker.epoch)]
    return ControllerResult(tuple(records), UnregisterBrokerResponse(error_code=ErrorCode.NONE))


def register_controller(ctx: ControllerContext,
                        req: ControllerRegistrationRequest) -> ControllerResult:
    def answer(code: ErrorCode, message: str = "") -> ControllerRegistrationResponse:
        return ControllerRegistrationResponse(error_code=code, error_message=message)

    if ctx.metadata_version < MV_3_7_IV0:
        return ControllerResult((), answer(
            ErrorCode.UNSUPPORTED_VERSION,
            "controller registration needs metadata.version 3.7-IV0 or later"))
    # listeners by name, as Kafka's ListenerInfo (a LinkedHashMap): a repeated name keeps its
    # first place and its last value, so a request repeating one listener writes it once
    endpoints = {lst.name: ControllerEndpoint(name=lst.name, host=lst.host, port=lst.port,
                                              security_protocol=lst.security_protocol)
                 for lst in req.listeners}
    record = RegisterControllerRecord(  # a zero incarnation id too, as Kafka's
        controller_id=req.controller_id, incarnation_id=req.incarnation_id,
        zk_migration_ready=req.zk_migration_ready,
        end_points=tuple(endpoints.values()),
        features=tuple(ControllerFeature(name=f.name,
                                         min_supported_version=f.min_supported_version,
                                         max_supported_version=f.max_supported_version)
                       for f in req.features),
    )
    return ControllerResult((record,), answer(ErrorCode.NONE))


def usable_brokers(ctx: ControllerContext) -> list[BrokerRegistration]:
    return [b for _, b in sorted(ctx.image.cluster.brokers.items()) if is_usable(b)]
