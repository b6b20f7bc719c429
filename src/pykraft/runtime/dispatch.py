"""The controller listener: which APIs it serves and how it answers them (the framing rules
every listener shares are :mod:`pykraft.runtime.listener_dispatch`'s).

KRaft RPCs reach the core as the generated class that serves every version, and an answer
carries what the caller's version can; the controller's requests go to its state machine, an
Envelope's inner request is answered as its client's own.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from pykraft.controller.delegation_token_control import TokenBody, TokenRequest
from pykraft.controller.mutations import Mutation, MutationBody
from pykraft.controller.responses import topic_deletion_disabled
from pykraft.image.acls import AclsImage
from pykraft.image.features import FeaturesImage
from pykraft.messages.kafka import describe_cluster_response as dc
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest
from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.messages.kafka.envelope_request import EnvelopeRequest
from pykraft.messages.kafka.envelope_response import EnvelopeResponse
from pykraft.messages.kafka.fetch_response import NodeEndpoint
from pykraft.messages.kafka.update_features_request import UpdateFeaturesRequest
from pykraft.protocol.api_versions import (
    ApiVersionsResponse,
    api_versions_response,
    node_features,
)
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.codec import RequestFrame
from pykraft.protocol.describe_cluster import CONTROLLER_ENDPOINTS, endpoint_type_refusal
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.records.control import VoterEndpoint
from pykraft.runtime.authorization import (
    PARTS,
    PartsRequest,
    cluster_refusal,
    merge_parts,
    split_parts,
)
from pykraft.runtime.channel_mute import mute_for
from pykraft.runtime.controller_service import (
    CONTROLLER_REQUESTS,
    TOKEN_REQUESTS,
    ControllerService,
    controller_body,
)
from pykraft.runtime.envelope import envelope_answer, envelope_error, open_envelope
from pykraft.runtime.error_answer import error_answer
from pykraft.runtime.extension import RequestHandler
from pykraft.runtime.kraft_version import names_kraft_version, update_kraft_version
from pykraft.runtime.listener_dispatch import NO_HANDLERS, ListenerDispatcher
from pykraft.runtime.logfmt import event
from pykraft.runtime.node import SERVED_APIS, RaftNode
from pykraft.runtime.request_metrics import parked
from pykraft.runtime.sasl_authenticator import SASL_APIS
from pykraft.security.api_rules import CONTROLLER_RULES, Access
from pykraft.security.session import Session
from pykraft.security.token_requests import token_refusal

log = logging.getLogger("pykraft.dispatch")

FIRST_RAFT_NODE_ENDPOINTS_VERSION = 17


class Dispatcher(ListenerDispatcher):
    """The controller listener's requests for a :class:`RaftNode` (the raft RPCs the node
    serves, :data:`~pykraft.runtime.node.SERVED_APIS`), and, with a
    :class:`ControllerService`, for the controller state machine on it
    (:data:`~pykraft.runtime.controller_service.CONTROLLER_REQUESTS`, Envelope);
    ``handlers`` serve a server extension's api keys."""

    listener = Listener.CONTROLLER

    def __init__(self, node: RaftNode, controller: ControllerService | None = None,
                 handlers: Mapping[int, RequestHandler] = NO_HANDLERS) -> None:
        super().__init__(node, (SERVED_APIS if controller is None else SERVED_APIS
                                | CONTROLLER_REQUESTS | {ApiKey.ENVELOPE}) | SASL_APIS, handlers)
        self._controller = controller

    def _access(self, session: Session) -> Access:
        """What ``session`` may do, by the ACLs of this controller's committed image."""
        controller = self._controller
        return self._authorizers.access(
            lambda: AclsImage() if controller is None
            else controller.controller.committed_image.acls, session)

    async def _route(self, request: RequestFrame, session: Session) -> bytes:
        """The encoded answer to a decoded request this listener serves."""
        if request.api_key == ApiKey.ENVELOPE:
            refusal = cluster_refusal(CONTROLLER_RULES, ApiKey.ENVELOPE, request.body,
                                      self._access(session))
            answer = refusal if refusal is not None else await self._envelope(
                request.body_as(EnvelopeRequest), session)
            return self._encode(request, answer)
        with parked():  # out of the request queue while the core or controller answers
            response = await self._answer(request, session)
        return await self._encode_large(request, lambda: response)

    async def _envelope(self, envelope: EnvelopeRequest, session: Session) -> EnvelopeResponse:
        """A broker's forwarded request answered as its client's own (ControllerApis'
        ``handleEnvelopeRequest``): authorized as the client, its response wrapped."""
        forwarded = open_envelope(envelope, session)
        if isinstance(forwarded, ErrorCode):
            return envelope_error(forwarded)
        inner = forwarded.request
        if inner.api_key not in self._served:
            return envelope_error(ErrorCode.UNSUPPORTED_VERSION)
        try:
            with parked():  # as above: Kafka's controller answers through futures
                response = await self._answer(inner, forwarded.session)
        except Exception:  # Kafka's handleError of the forwarded request: its own answer
            log.exception("forwarded_request_failed", extra={"fields": {
                "api_key": inner.api_key, "api_version": inner.api_version,
                "peer": session.client_address}})
            response = error_answer(inner.api_key, inner.body, ErrorCode.UNKNOWN_SERVER_ERROR)
        return envelope_answer(response, await self._encode_large(inner, lambda: response))

    async def _answer(self, request: RequestFrame, session: Session) -> object:
        """The latest-version answer to a decoded request this listener serves, once the
        session's authorization allows it (ControllerApis' checks)."""
        api_key = request.api_key
        access = self._access(session)
        refusal = cluster_refusal(CONTROLLER_RULES, api_key, request.body, access)
        if refusal is not None:
            return refusal
        if api_key == ApiKey.DESCRIBE_CLUSTER:
            return self._describe_cluster(request.body_as(DescribeClusterRequest),
                                          request.api_version, access)
        if self._controller is not None and api_key in CONTROLLER_REQUESTS:
            body = controller_body(request.body)
            if (isinstance(body, DeleteTopicsRequest)
                    and not self._controller.controller.config.delete_topic_enable):
                return topic_deletion_disabled(body)
            if isinstance(body, UpdateFeaturesRequest) and names_kraft_version(body):
                return await update_kraft_version(self._node, body)
            if api_key in TOKEN_REQUESTS:
                return await self._token_request(body, access)
            if api_key in PARTS and isinstance(body, PartsRequest) and access.enabled:
                image = self._controller.controller.committed_image
                split = split_parts(api_key, body, access, image.topics.by_id)
                answer = (None if split.allowed is None else await self._submit(
                    split.allowed, request, session))
                return merge_parts(api_key, split, answer)
            answer = await self._submit(body, request, session)
            liveness = self._controller.liveness
            if (liveness is not None and isinstance(body, BrokerHeartbeatRequest)
                    and getattr(answer, "error_code", None) == ErrorCode.NONE):
                liveness.heartbeat_from(session.client_address, body.broker_id)
            return answer
        latest = request.body
        assert isinstance(latest, rpc.RaftRequest), "the listener's table routes raft RPCs here"
        if isinstance(latest, rpc.EndQuorumEpochRequest):
            part = rpc.end_quorum_partition(latest)
            event(log, "end_quorum_epoch_received", source=session.client_address,
                  leader=-1 if isinstance(part, ErrorCode) else part.leader_id)
        refusal = self._refuse_unknown_voter(latest)
        response = refusal if refusal is not None else await self._node.request(latest)
        if isinstance(response, rpc.DescribeQuorumResponse):
            response = rpc.describe_quorum_at(response, request.api_version)
        elif isinstance(response, rpc.FetchResponse) and (
                request.api_version >= FIRST_RAFT_NODE_ENDPOINTS_VERSION):
            response = self._with_leader_endpoint(response)
        return response

    async def _submit(self, body: object, request: RequestFrame, session: Session) -> object:
        """The controller's answer to ``body`` (of ``request``, on ``session``): a topic
        mutation goes with its client's principal, client id and version, for its controller
        mutation quota, and a client throttled on this listener has its connection muted (a
        forwarded request's throttle is the broker's to apply, as in Kafka's
        ``sendResponseMaybeThrottleWithControllerQuota``)."""
        assert self._controller is not None
        if not isinstance(body, MutationBody):
            return await self._controller.submit(body)
        answer = await self._controller.submit(Mutation(
            body, session.principal.name, request.header.client_id or "", request.api_version))
        if not session.forwarded:
            mute_for(getattr(answer, "throttle_time_ms", 0))
        return answer

    async def _token_request(self, body: object, access: Access) -> object:
        """ControllerApis' checks of a token request, then the controller's answer to it
        as the principal's."""
        assert self._controller is not None
        refusal = token_refusal(body, access, broker=False)
        if refusal is not None:
            return refusal
        assert isinstance(body, TokenBody)
        principal = access.session.principal
        return await self._controller.submit(TokenRequest(body, principal.principal_type,
                                                          principal.name))

    def connection_closed(self, session: Session) -> None:
        liveness = None if self._controller is None else self._controller.liveness
        if liveness is not None:
            liveness.closed(session.client_address)

    def _api_versions(self, version: int) -> ApiVersionsResponse:
        """Only the APIs served today are advertised: a client must never pick one we would
        close the connection for. Like Kafka's controller, it names the kraft.version range
        this software supports and the level finalized in the log: a leader adding this
        node as a voter reads them first."""
        features = (self._controller.controller.committed_image.features
                    if self._controller is not None else FeaturesImage())
        body = api_versions_response(Listener.CONTROLLER, version, **node_features(
            features.finalized, self._node.core.kraft_version, features.epoch))
        served = tuple(k for k in body.api_keys if k.api_key in self._served)
        # Kafka's controller ApiVersionManager: ZkMigrationReady (tag 3, v3+) is its
        # zookeeper.metadata.migration.enable
        return dataclasses.replace(
            body, api_keys=served,
            zk_migration_ready=self._settings.controller.zk_migration_enabled)

    def _refuse_unknown_voter(self, request: rpc.RaftRequest) -> rpc.RaftResponse | None:
        """Kafka 3.x's ``validateVoterOnlyRequest`` for a static quorum: Vote, BeginQuorumEpoch
        and EndQuorumEpoch from a node outside the voter set get INCONSISTENT_VOTER_SET, once
        their cluster id matched (the core answers a foreign one). A dynamic quorum lets the
        core judge: its voter set changes at runtime, and a replica that is not (yet) in ours
        may know a newer one."""
        core = self._node.core
        if not core.control_state.is_static or getattr(request, "cluster_id", None) not in (
                None, self._settings.cluster_id):
            return None  # Kafka checks the cluster id first: INCONSISTENT_CLUSTER_ID
        leader, epoch = core.leader_and_epoch.leader_id, core.epoch
        error = ErrorCode.INCONSISTENT_VOTER_SET
        voters = core.config.voters
        if isinstance(request, rpc.VoteRequest):
            part = rpc.vote_partition(request)
            if not isinstance(part, ErrorCode) and part.replica_id not in voters:
                return rpc.vote_response(error, leader, epoch, False)
        elif isinstance(request, rpc.BeginQuorumEpochRequest):
            bqe = rpc.begin_quorum_partition(request)
            if not isinstance(bqe, ErrorCode) and bqe.leader_id not in voters:
                return rpc.begin_quorum_response(error, leader, epoch)
        elif isinstance(request, rpc.EndQuorumEpochRequest):
            eqe = rpc.end_quorum_partition(request)
            if not isinstance(eqe, ErrorCode) and eqe.leader_id not in voters:
                return rpc.end_quorum_response(error, leader, epoch)
        return None

    def _with_leader_endpoint(self, response: rpc.FetchResponse) -> rpc.FetchResponse:
        """Fetch v17+ names the leader's address (Kafka's NodeEndpoints, which
        ``RaftUtil.singletonFetchResponse`` fills from v17 only: v16's are the brokers'), so
        an observer that asked a bootstrap server learns where the leader it names is."""
        leaders = sorted({p.current_leader.leader_id for t in response.responses
                          for p in t.partitions if p.current_leader.leader_id >= 0})
        addresses = ((leader, self._node.address_of(leader)) for leader in leaders)
        endpoints = tuple(NodeEndpoint(node_id=leader, host=address[0], port=address[1])
                          for leader, address in addresses if address is not None)
        return dataclasses.replace(response, node_endpoints=endpoints) if endpoints else response

    def _controller_endpoints(self) -> list[tuple[int, VoterEndpoint]]:
        """Every controller's endpoint on the controller listener, by id: the registered
        controllers of the committed image, observers included (Kafka's
        ``describeClusterControllers``), and the voters in force, which a static quorum
        knows before any controller has registered."""
        name = self._node.core.config.listener_name
        found = {v.key.id: v.endpoint(name) for v in self._node.core.voters.nodes}
        if self._controller is not None:
            registered = self._controller.controller.committed_image.cluster.controllers
            for controller_id, registration in registered.items():
                found[controller_id] = next(
                    (VoterEndpoint(e.name, e.host, e.port)
                     for e in registration.listeners if e.name == name),
                    found.get(controller_id))
        return [(node_id, endpoint) for node_id, endpoint in sorted(found.items())
                if endpoint is not None]

    def _describe_cluster(self, request: DescribeClusterRequest, version: int,
                          access: Access) -> dc.DescribeClusterResponse:
        """A controller answers for ``endpoint_type=2`` (controllers) only, as Kafka does."""
        core = self._node.core
        refusal = endpoint_type_refusal(request, version, CONTROLLER_ENDPOINTS)
        if refusal is not None:
            return refusal
        leader = core.leader_and_epoch.leader_id
        brokers = tuple(dc.DescribeClusterBroker(node_id, endpoint.host, endpoint.port)
                        for node_id, endpoint in self._controller_endpoints())
        return dc.DescribeClusterResponse(
            error_code=ErrorCode.NONE, endpoint_type=CONTROLLER_ENDPOINTS,
            cluster_id=self._settings.cluster_id,
            controller_id=-1 if leader is None else leader, brokers=brokers,
            cluster_authorized_operations=access.cluster_operations(
                request.include_cluster_authorized_operations))
