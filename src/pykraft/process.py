"""``pykraft server``'s process: node, controller and/or broker, listeners, metrics and
signals on one event loop.

SIGTERM and SIGINT start a graceful shutdown (a broker asks for controlled shutdown, the
leader resigns with EndQuorumEpoch, the log is flushed) bounded by
``pykraft.shutdown.timeout.ms``; the exit code is 0 unless the node hit a fatal error.
Further signals during the shutdown change nothing (Kafka's JVM ignores them too).
SIGKILL needs no handling: everything acknowledged is on disk.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from prometheus_client.core import Metric

from pykraft.broker.broker_metrics import broker_families
from pykraft.broker.broker_server import BrokerServer
from pykraft.broker.coordinator_metrics import coordinator_families
from pykraft.image.client_quotas import ClientQuotasImage
from pykraft.raft.api import RaftListener
from pykraft.runtime.connection_registry import ConnectionRegistry, raise_open_files_limit
from pykraft.runtime.controller_metrics import controller_families
from pykraft.runtime.controller_registration import ControllerRegistrar
from pykraft.runtime.controller_service import ControllerService
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.extension import load_extension
from pykraft.runtime.listener_server import ListenerServer
from pykraft.runtime.logfmt import event
from pykraft.runtime.metrics import serve_metrics
from pykraft.runtime.node import RaftNode
from pykraft.runtime.request_metrics import RequestMetrics
from pykraft.runtime.request_queue import RequestQueue
from pykraft.runtime.sasl_authenticator import with_scram
from pykraft.runtime.settings import NodeSettings

if TYPE_CHECKING:
    from pykraft.runtime.migration_service import MigrationRuntime

log = logging.getLogger("pykraft.process")


def _client_quotas(broker: BrokerServer | None, controller: ControllerService | None
                   ) -> Callable[[], ClientQuotasImage]:
    """Where the node's ``ips`` quotas come from, as Kafka's broker and controller each apply
    their image's: the broker's image, else the controller's committed one."""
    if broker is not None:
        return lambda: broker.metadata.image.client_quotas
    if controller is not None:
        return lambda: controller.controller.committed_image.client_quotas
    return ClientQuotasImage  # an extension's node: none


async def run_server(settings: NodeSettings) -> int:
    """Serve until a signal or a fatal error; returns the process exit code."""
    extension = None if settings.extension is None else load_extension(settings.extension)
    runs_controller = extension is None or not extension.replaces_controller
    controller = (ControllerService(settings.controller, bootstrap=settings.bootstrap,
                                    bootstrap_source=settings.bootstrap_source)
                  if settings.is_controller and runs_controller else None)
    broker = None if settings.broker is None else BrokerServer(settings, settings.broker)
    listeners: list[RaftListener] = []
    if controller is not None:
        listeners.append(controller)
    if broker is not None:
        listeners.append(broker.metadata)
    node = RaftNode(settings, listeners=listeners)
    connections = ConnectionRegistry(settings.connections, raise_open_files_limit(),
                                     client_quotas=_client_quotas(broker, controller))
    event(log, "connection_limits", open_files_cap=connections.quotas.fd_cap,
          max_connections=settings.connections.max_connections,
          max_connections_per_ip=settings.connections.per_ip,
          connections_max_idle_ms=settings.connections.max_idle_ms)
    servers: list[ListenerServer] = []
    requests = RequestMetrics()  # every listener's, controller and broker alike
    queue = RequestQueue(settings.queued_max_requests)  # the controller listeners'
    migration: MigrationRuntime | None = None
    if settings.is_controller:
        if controller is not None:
            controller.attach(node)
            if settings.zookeeper is not None and settings.controller.zk_migration_enabled:
                # imported only here: kazoo and the migration's modules are for migrating
                # controllers alone
                from pykraft.runtime.migration_service import MigrationRuntime
                migration = MigrationRuntime(settings, settings.zookeeper, controller, node)
        handlers = {} if extension is None else extension.handlers(node)
        dispatcher = Dispatcher(node, controller, handlers)
        for spec in settings.controller_listeners:  # every controller.listener.names one
            sasl = spec.sasl if controller is None else with_scram(
                spec.sasl, lambda: controller.controller.committed_image,
                controller.controller.config.tokens.secret_key)
            server = ListenerServer(dispatcher, spec.endpoint.host, spec.endpoint.port,
                                    settings.max_frame_size, listener_name=spec.name,
                                    protocol=spec.protocol, tls=spec.tls, sasl=sasl,
                                    connections=connections, requests=requests, queue=queue)
            await server.start()
            servers.append(server)
    if broker is not None:
        broker.bind(node, connections, requests)
        broker.start()
    if settings.metrics_address is not None:
        host, port = settings.metrics_address
        serve_metrics(node.metrics, host, port,
                      () if broker is None else broker.replicas.purgatories,
                      _loop_families(settings, node, requests, controller, broker, migration))
        event(log, "metrics_listening", address=f"{host}:{port}")
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    # Python-level handlers, not the loop's: the loop's removal passes through the default
    # action, which a signal landing on a worker thread then meets (exit -15 after a clean
    # shutdown); replacing a handler by SIG_IGN below is one atomic step.
    for signum in _STOP_SIGNALS:
        signal.signal(signum, lambda received, _frame: loop.call_soon_threadsafe(
            _on_signal, stop, received))
    node.start()
    registering = (None if controller is None
                   else asyncio.create_task(ControllerRegistrar(node, controller).run()))
    waits = {asyncio.create_task(stop.wait()), asyncio.create_task(node.stopped.wait())}
    if broker is not None:
        waits.add(asyncio.create_task(broker.failed.wait()))
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    for wait in waits:
        wait.cancel()
    if registering is not None:
        registering.cancel()
    if broker is not None:
        await broker.stop()
    if migration is not None:  # no ZooKeeper write or legacy RPC once the node resigns
        await migration.close()
    await node.shutdown()
    if controller is not None:
        controller.close()
    for server in servers:
        await server.close()
    await connections.close()
    # a late signal must not kill a process that already shut down cleanly (exit -15
    # instead of 0): ignore them from now on
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    return 1 if broker is not None and broker.failed.is_set() else node.exit_code


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _loop_families(settings: NodeSettings, node: RaftNode, requests: RequestMetrics,
                   controller: ControllerService | None, broker: BrokerServer | None,
                   migration: MigrationRuntime | None
                   ) -> list[Callable[[], Iterable[Metric]]]:
    """The Kafka metrics a scrape computes on the loop: the listeners' request metrics,
    a broker's state and its coordinators' and quotas', a controller's image, a migrating
    controller's ZooKeeper writes."""
    families: list[Callable[[], Iterable[Metric]]] = [requests.families]
    if broker is not None:
        replicas = broker.replicas
        families.append(lambda: broker_families(replicas))
        families.append(lambda: coordinator_families(broker.groups, broker.transactions,
                                                     broker.quotas))
    if controller is not None:
        def active() -> bool:
            return node.core.leader_and_epoch.leader_id == settings.node_id

        quorum = controller.controller
        families.append(lambda: controller_families(quorum.committed_image, active=active()))
        if migration is not None:
            zk_writes = migration.metrics
            families.append(lambda: zk_writes.families(quorum.committed_offset,
                                                       active=active()))
    return families


def _on_signal(stop: asyncio.Event, signum: int) -> None:
    event(log, "signal", signal=signal.Signals(signum).name)
    stop.set()
