"""A controller registers itself with the active controller (KIP-919, Kafka's
ControllerRegistrationManager): its advertised listeners and supported features become a
RegisterControllerRecord in the metadata log, where brokers and tools find them.

It registers once per process (a new incarnation id each start), after its own metadata has
caught up far enough to know the finalized metadata.version, and retries until the active
controller accepts. The active controller registers itself through its own controller; the
others send ControllerRegistration over the controller listener.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from pykraft.errors import PyKraftError
from pykraft.features import SUPPORTED_FEATURES
from pykraft.messages.kafka.controller_registration_request import (
    ControllerRegistrationRequest,
    Feature,
    Listener,
)
from pykraft.messages.kafka.controller_registration_response import (
    ControllerRegistrationResponse,
)
from pykraft.protocol.errors import ErrorCode, error_name
from pykraft.runtime.controller_channel import ControllerChannel
from pykraft.runtime.controller_service import ControllerService
from pykraft.runtime.logfmt import event
from pykraft.runtime.node import RaftNode

log = logging.getLogger("pykraft.controller_registration")

RETRY_S = 0.5


def registration_request(node_id: int, incarnation_id: uuid.UUID,
                         node: RaftNode) -> ControllerRegistrationRequest:
    return ControllerRegistrationRequest(
        controller_id=node_id, incarnation_id=incarnation_id,
        zk_migration_ready=node.settings.controller.zk_migration_enabled,
        listeners=tuple(Listener(name=e.name, host=e.host, port=e.port,
                                 security_protocol=node.settings.protocol_of(e.name))
                        for e in node.settings.quorum.local_listeners),
        features=tuple(Feature(name=name, min_supported_version=low,
                               max_supported_version=high)
                       for name, (low, high) in sorted(SUPPORTED_FEATURES.items())))


class ControllerRegistrar:
    """Registers this controller once; :meth:`run` returns when the record committed."""

    def __init__(self, node: RaftNode, service: ControllerService) -> None:
        self._node = node
        self._service = service
        self.incarnation_id = uuid.uuid4()
        self._channel = ControllerChannel(
            node.settings.node_id, node.address_of,
            lambda: node.core.leader_and_epoch.leader_id,
            node.settings.quorum.request_timeout_ms, tls=node.settings.controller_tls,
            sasl=node.settings.controller_sasl)
        self.registered = False

    async def run(self) -> None:
        node, service = self._node, self._service
        request = registration_request(node.settings.node_id, self.incarnation_id, node)
        try:
            while not self.registered:
                leader = node.core.leader_and_epoch.leader_id
                # wait until our replay knows the finalized metadata.version, as Kafka does
                if leader is not None and service.controller.committed_offset >= 0:
                    await self._attempt(leader, request)
                if not self.registered:
                    await asyncio.sleep(RETRY_S)  # no leader yet, or it refused: try again
        finally:
            self._channel.close()

    async def _attempt(self, leader: int, request: ControllerRegistrationRequest) -> None:
        try:
            if leader == self._node.settings.node_id:
                response = await self._service.submit(request)
            else:
                response = await self._channel.send(request)
        except PyKraftError as exc:
            event(log, "controller_registration_retry", reason=str(exc))
            return
        assert isinstance(response, ControllerRegistrationResponse)
        if response.error_code == ErrorCode.NONE:
            self.registered = True
            event(log, "controller_registered", incarnation_id=str(self.incarnation_id),
                  active_controller=leader)
        else:
            event(log, "controller_registration_retry",
                  reason=f"{error_name(response.error_code)}: {response.error_message}")
