"""The broker's client listener (PLAINTEXT): answered locally, or forwarded (KIP-590).

Metadata, DescribeCluster, DescribeTopicPartitions and DescribeConfigs come from this
broker's metadata image (and for its own configs, its properties file), a Metadata request
naming a missing topic creating it (:mod:`pykraft.broker.auto_topics`); Produce from its
replica manager (:mod:`pykraft.broker.produce`), and so are the reads: Fetch
(:mod:`pykraft.broker.fetch`), ListOffsets, OffsetForLeaderEpoch, DescribeLogDirs and
DeleteRecords, and so are moves between its log directories (AlterReplicaLogDirs,
:mod:`pykraft.broker.alter_log_dirs`); InitProducerId from the producer id blocks this
broker gets from the controller (:mod:`pykraft.broker.producer_ids`). Admin writes,
DescribeQuorum and the voter changes (AddRaftVoter, RemoveRaftVoter: Kafka 4's schemas list
the broker listener for them, and a ``--bootstrap-server`` admin client sends them to any
broker) are forwarded to the active controller, whose answer is written at the caller's
version once this broker's image holds the write (read-after-write,
:mod:`pykraft.broker.read_after_write`); while the controller changes the broker retries,
and when none answers within FORWARD_TIMEOUT_MS the caller gets NOT_CONTROLLER. A request
that outgrows ``socket.request.max.bytes`` once forwarded (the broker's header is longer
than most clients') is answered REQUEST_TIMED_OUT at once: the controller closes the
connection on such a frame, and Kafka's forwarding sends it again until its timeout, then
answers that.

Which APIs a broker serves, and what answers each, is one table: :data:`BROKER_APIS` (at the
end of this module, after the handlers it names). The framing rules (unknown API or version
closes the connection, KIP-511 ApiVersions reply, SASL) and the UNKNOWN_SERVER_ERROR answer
to a request whose handling failed are every listener's
(:class:`~pykraft.runtime.listener_dispatch.ListenerDispatcher`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
from collections.abc import Awaitable, Callable, Mapping

from pykraft.broker.alter_log_dirs import alter_replica_log_dirs
from pykraft.broker.authorization import (
    TOPIC_FIELDS,
    TopicRequest,
    authorized_coordinators,
    authorized_group_answer,
    authorized_metadata,
    creatable_topics,
    denied_topics,
    init_producer_refusal,
)
from pykraft.broker.auto_topics import AutoTopicCreator
from pykraft.broker.cleaner_alterations import (
    AlterRequest,
    AlterResponse,
    cleaner_refusals,
    with_refusals,
)
from pykraft.broker.client_quotas import BrokerQuotas
from pykraft.broker.coordinator_topics import CoordinatorFinder
from pykraft.broker.delete_records import delete_records
from pykraft.broker.describe_producers import describe_producers
from pykraft.broker.describe_topic_partitions import describe_topic_partitions
from pykraft.broker.fetch import FetchHandler, replica_id_of
from pykraft.broker.forwarding import EnvelopeRefusedError, envelope_for, unwrapped
from pykraft.broker.group_coordinator import GroupCoordinatorService
from pykraft.broker.group_versions import (
    GROUP_APIS,
    SHARD_APIS,
    error_response,
    to_latest,
    to_version,
)
from pykraft.broker.list_config_resources import list_config_resources
from pykraft.broker.list_offsets import list_offsets, offset_for_leader_epoch
from pykraft.broker.log_dir_mover import LogDirMover
from pykraft.broker.log_dirs import describe_log_dirs
from pykraft.broker.metadata_listener import BrokerMetadataListener
from pykraft.broker.offset_commit_topics import existing_partitions_only
from pykraft.broker.offset_topic_ids import (
    OffsetRequest,
    answered_by_id,
    by_topic_id,
    shard_version,
)
from pykraft.broker.offset_topic_ids import refused as refused_by_id
from pykraft.broker.produce import AcksZeroFailedError, ProduceHandler
from pykraft.broker.producer_ids import (
    ProducerIdManager,
    init_producer_id,
    producer_id_and_epoch_refusal,
)
from pykraft.broker.quota_describe import describe_client_quotas
from pykraft.broker.read_after_write import settle
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.broker.responses import describe_cluster_response, metadata_response
from pykraft.broker.scram_describe import describe_user_scram_credentials
from pykraft.broker.token_describe import describe_delegation_tokens
from pykraft.broker.txn_apis import TxnApis
from pykraft.broker.txn_markers import write_txn_markers
from pykraft.config.server import ServerConfig
from pykraft.controller.acl_control import describe_acls
from pykraft.controller.config_control import describe_configs
from pykraft.controller.responses import is_not_controller
from pykraft.errors import NetworkError, RequestTooLargeError, UnsupportedVersionError
from pykraft.group.messages import GroupRequest, ShardRequest, ShardResponse
from pykraft.ids import ZERO_UUID
from pykraft.image.acls import AclOperation, ResourceType
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.add_offsets_to_txn_request import AddOffsetsToTxnRequest
from pykraft.messages.kafka.add_partitions_to_txn_request import AddPartitionsToTxnRequest
from pykraft.messages.kafka.alter_replica_log_dirs_request import AlterReplicaLogDirsRequest
from pykraft.messages.kafka.delete_records_request import DeleteRecordsRequest
from pykraft.messages.kafka.delete_records_response import DeleteRecordsResponse
from pykraft.messages.kafka.describe_acls_request import DescribeAclsRequest
from pykraft.messages.kafka.describe_client_quotas_request import DescribeClientQuotasRequest
from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.messages.kafka.describe_configs_request import DescribeConfigsRequest
from pykraft.messages.kafka.describe_configs_response import DescribeConfigsResponse
from pykraft.messages.kafka.describe_delegation_token_request import (
    DescribeDelegationTokenRequest,
)
from pykraft.messages.kafka.describe_log_dirs_request import DescribeLogDirsRequest
from pykraft.messages.kafka.describe_log_dirs_response import DescribeLogDirsResponse
from pykraft.messages.kafka.describe_producers_request import DescribeProducersRequest
from pykraft.messages.kafka.describe_producers_response import DescribeProducersResponse
from pykraft.messages.kafka.describe_topic_partitions_request import (
    DescribeTopicPartitionsRequest,
)
from pykraft.messages.kafka.describe_transactions_request import DescribeTransactionsRequest
from pykraft.messages.kafka.describe_user_scram_credentials_request import (
    DescribeUserScramCredentialsRequest,
)
from pykraft.messages.kafka.end_txn_request import EndTxnRequest
from pykraft.messages.kafka.fetch_request import FetchRequest
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.init_producer_id_request import InitProducerIdRequest
from pykraft.messages.kafka.list_config_resources_request import ListConfigResourcesRequest
from pykraft.messages.kafka.list_offsets_request import ListOffsetsRequest
from pykraft.messages.kafka.list_transactions_request import ListTransactionsRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.messages.kafka.metadata_response import MetadataResponse
from pykraft.messages.kafka.offset_for_leader_epoch_request import OffsetForLeaderEpochRequest
from pykraft.messages.kafka.offset_for_leader_epoch_response import (
    OffsetForLeaderEpochResponse,
)
from pykraft.messages.kafka.produce_request import ProduceRequest
from pykraft.messages.kafka.write_txn_markers_request import WriteTxnMarkersRequest
from pykraft.messages.replace import replaced
from pykraft.messages.splice import SplicedBuffer, SplicedPayload
from pykraft.protocol.api_versions import (
    ApiVersionsResponse,
    api_versions_response,
    node_features,
)
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.codec import RequestFrame, encode_response_into
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.authorization import (
    PARTS,
    PARTS_REQUESTS,
    cluster_refusal,
    merge_parts,
    split_parts,
)
from pykraft.runtime.backoff import ExponentialBackoff
from pykraft.runtime.channel_mute import mute_for
from pykraft.runtime.codec_thread import off_loop_if_large
from pykraft.runtime.controller_channel import ControllerChannel
from pykraft.runtime.controller_service import controller_body
from pykraft.runtime.error_answer import error_answer
from pykraft.runtime.listener_dispatch import CloseConnection, ListenerDispatcher
from pykraft.runtime.node import RaftNode
from pykraft.runtime.request_metrics import note_response, parked
from pykraft.runtime.sasl_authenticator import SASL_APIS
from pykraft.runtime.sasl_client import monotonic_ms
from pykraft.security.api_rules import BROKER_RULES, Access
from pykraft.security.session import Session
from pykraft.security.token_requests import token_refusal

#: The transaction coordinator's APIs besides InitProducerId.
TRANSACTION_APIS = (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN,
                    ApiKey.DESCRIBE_TRANSACTIONS, ApiKey.LIST_TRANSACTIONS)
#: The group APIs committing offsets, whose partitions must exist (Kafka's KafkaApis checks).
COMMIT_APIS = frozenset({ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT})
#: The read path's APIs other than Fetch and ListOffsets (:meth:`BrokerDispatcher._read`).
READS = (ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.DESCRIBE_LOG_DIRS, ApiKey.DELETE_RECORDS,
         ApiKey.DESCRIBE_PRODUCERS)
#: How long a forwarded request is retried while the active controller changes: an election
#: takes about controller.quorum.fetch.timeout.ms (2 s) plus a vote; clients wait 30 s or more.
FORWARD_TIMEOUT_MS = 15_000
FORWARD_BACKOFF_MS = 50
FIRST_AUTO_CREATE_FLAG_VERSION = 4  # Metadata v0-3 may always auto-create
#: Metadata v8-10 carry the cluster's authorized operations (KIP-430; v11 moved them to
#: DescribeCluster)
FIRST_CLUSTER_OPERATIONS_VERSION, LAST_CLUSTER_OPERATIONS_VERSION = 8, 10


class Needs(enum.Enum):
    """What must run on a broker for it to serve an API (a broker without it closes the
    connection on that API, and does not advertise it)."""

    NOTHING = enum.auto()
    PRODUCE = enum.auto()  # the produce handler
    REPLICAS = enum.auto()  # the replica manager: this broker's partition logs
    GROUPS = enum.auto()  # the group coordinator
    TRANSACTIONS = enum.auto()  # the transaction coordinator
    LOG_DIR_MOVES = enum.auto()  # the mover of replicas between log directories


Answer = Callable[["BrokerDispatcher", RequestFrame, Session, Access],
                  Awaitable[bytes | SplicedPayload]]


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerApi:
    """How a broker answers one API: ``answer`` (None: the listener's framing answers it, as
    ApiVersions and SASL's), what it ``needs``, and whether it is ``forwarded`` to the
    active controller."""

    answer: Answer | None
    needs: Needs = Needs.NOTHING
    forwarded: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Enveloped:
    """The controller's answer to a request forwarded inside an Envelope."""

    response: object


class BrokerDispatcher(ListenerDispatcher):
    """Turns one client request frame into one response frame on a broker."""

    listener = Listener.BROKER
    checks_target = True

    def __init__(self, node: RaftNode, metadata: BrokerMetadataListener,
                 channel: ControllerChannel, *, cluster_id: str, listener_name: str,
                 produce: ProduceHandler | None = None,
                 replicas: ReplicaManager | None = None,
                 groups: tuple[GroupCoordinatorService, CoordinatorFinder] | None = None,
                 transactions: TxnApis | None = None,
                 auto_topics: AutoTopicCreator | None = None,
                 quotas: BrokerQuotas | None = None,
                 log_dir_mover: LogDirMover | None = None) -> None:
        running = {Needs.NOTHING: True, Needs.PRODUCE: produce is not None,
                   Needs.REPLICAS: replicas is not None, Needs.GROUPS: groups is not None,
                   Needs.TRANSACTIONS: transactions is not None,
                   Needs.LOG_DIR_MOVES: log_dir_mover is not None}
        super().__init__(node, frozenset(
            key for key, api in BROKER_APIS.items() if running[api.needs]))
        self._groups = groups
        self._auto_topics = auto_topics
        self._replicas = replicas
        self._log_dir_mover = log_dir_mover
        self._fetcher = None if replicas is None else FetchHandler(replicas, listener_name)
        self._produce = produce
        self._metadata = metadata
        self._channel = channel
        self._cluster_id = cluster_id
        self._listener_name = listener_name
        self._transactions = transactions
        config = ServerConfig(self._settings.controller.properties)
        self._quotas = quotas or BrokerQuotas(config, monotonic_ms, lambda: metadata.image)
        self._request_timeout_ms: int = config.get("request.timeout.ms")
        self._partition_cap: int = config.get("max.request.partition.size.limit")
        self.producer_ids = ProducerIdManager(self._settings.node_id, self._broker_epoch, channel)

    def _broker_epoch(self) -> int:
        """This broker's registration epoch in its image (the listener only opens once the
        image holds it; a newer one not yet replayed is refused as stale, then retried)."""
        registration = self._metadata.image.cluster.brokers.get(self._settings.node_id)
        return -1 if registration is None else registration.epoch

    def _access(self, session: Session) -> Access:
        """What ``session`` may do, by the ACLs of this broker's image."""
        return self._authorizers.access(lambda: self._metadata.image.acls, session)

    async def _route(self, request: RequestFrame, session: Session) -> bytes | SplicedPayload:
        """The answer once the session's authorization allows the request (KafkaApis'
        checks). A forwarded request goes inside an Envelope when the active controller
        takes one, unchecked here as in Kafka (the controller authorizes the client); to a
        controller without Envelope it is checked here, with the controller's rules, and
        sent as the broker's own."""
        api_key = request.api_key
        api = BROKER_APIS[api_key]
        body = request.body
        if isinstance(body, AlterRequest) and (refused := self._cleaner_refusals(body)):
            return self._encode(request, await self._around_refusals(request, session, refused))
        if api.forwarded and (enveloped := await self._enveloped(request, session)):
            # the controller's throttle (its mutation quota) mutes the client's connection
            # here, as Kafka's sendForwardedResponse does
            mute_for(getattr(enveloped.response, "throttle_time_ms", 0))
            return await self._encode_large(request, lambda: enveloped.response)
        access = self._access(session)
        if (answer := cluster_refusal(BROKER_RULES, api_key, request.body, access)) is not None:
            return self._encode(request, answer)
        if api_key in PARTS and access.enabled:
            return self._encode(request, await self._split_answer(request, access))
        assert api.answer is not None, "ApiVersions and SASL are answered before routing"
        return await api.answer(self, request, session, access)

    def _cleaner_refusals(self, body: AlterRequest) -> dict[int, str]:
        """The resources of a config change this broker's log cleaner refuses before it is
        forwarded, as Kafka's broker (:mod:`pykraft.broker.cleaner_alterations`)."""
        replicas = self._replicas
        if replicas is None or not replicas.cleaner.started:
            return {}
        return cleaner_refusals(body, current=replicas.cleaner.config,
                                static=self._settings.controller.properties,
                                configs=self._metadata.image.configs,
                                node_id=self._settings.node_id)

    async def _around_refusals(self, request: RequestFrame, session: Session,
                               refused: dict[int, str]) -> object:
        """The refused resources answered here, the others forwarded as :meth:`_route`
        forwards a request; one answer in the request's order."""
        body = request.body
        assert isinstance(body, AlterRequest)
        kept = tuple(r for index, r in enumerate(body.resources) if index not in refused)
        answer = None
        if kept:
            rest = dataclasses.replace(request, body=replaced(body, resources=kept))
            enveloped = await self._enveloped(rest, session)
            if enveloped is not None:
                answer = enveloped.response
            else:
                access = self._access(session)
                answer = cluster_refusal(BROKER_RULES, rest.api_key, rest.body, access)
                if answer is None:
                    answer = (await self._split_answer(rest, access) if access.enabled
                              else await self._forward(rest, lambda: self._send_plain(rest)))
        assert answer is None or isinstance(answer, AlterResponse)
        return with_refusals(body, refused, answer)

    def _denied(self, request: RequestFrame, access: Access) -> frozenset[object]:
        """The topics of a produce or read request the session may not use."""
        if request.api_key not in TOPIC_FIELDS:
            return frozenset()
        body = request.body
        assert isinstance(body, TopicRequest), "TOPIC_FIELDS names per-topic requests only"
        return denied_topics(request.api_key, body, request.api_version, access,
                             self._metadata.image)

    async def _forwarded(self, request: RequestFrame, _: Session, __: Access) -> bytes:
        """A request for the active controller, sent as the broker's own (the controller
        takes no Envelope)."""
        forwarded = await self._forward(request, lambda: self._send_plain(request))
        return await self._encode_large(request, lambda: forwarded)

    async def _fetch(self, request: RequestFrame, session: Session,
                     access: Access) -> bytes | SplicedPayload:
        """Records are left in the segment files and sent with ``sendfile`` where the
        connection is not TLS, as Kafka's zero copy (``FileRecords.writeTo``)."""
        assert self._fetcher is not None
        in_files = not session.security_protocol.uses_tls
        body = request.body_as(FetchRequest)
        quota = None if replica_id_of(body) >= 0 else self._quotas.fetch_quota(
            session, request.header.client_id)  # a follower's: replication quotas
        answer = await self._fetcher.fetch(
            body, request.api_version,
            lambda read: denied_topics(ApiKey.FETCH, read, request.api_version, access,
                                       self._metadata.image),
            in_files=in_files, quota=quota)
        note_response(answer)  # its error codes go to the request metrics
        out = SplicedBuffer()
        encode_response_into(out, request.header.correlation_id, request.api_key,
                             request.api_version, answer)
        return out.payload()

    async def _read(self, request: RequestFrame, _: Session, access: Access) -> bytes:
        """The read path's other APIs (:data:`READS`), from the replica manager."""
        assert self._replicas is not None
        body = request.body
        answer: (OffsetForLeaderEpochResponse | DeleteRecordsResponse | DescribeLogDirsResponse
                 | DescribeProducersResponse)
        if isinstance(body, OffsetForLeaderEpochRequest):
            answer = await offset_for_leader_epoch(body, self._replicas,
                                                   self._denied(request, access))
        elif isinstance(body, DeleteRecordsRequest):
            answer = await delete_records(body, self._replicas, self._denied(request, access))
        elif isinstance(body, DescribeProducersRequest):
            answer = describe_producers(body, self._replicas, self._denied(request, access))
        else:
            assert isinstance(body, DescribeLogDirsRequest)
            answer = describe_log_dirs(body, self._replicas)
        return await self._encode_large(request, lambda: answer)

    async def _alter_log_dirs(self, request: RequestFrame, _: Session, __: Access) -> bytes:
        """AlterReplicaLogDirs (ALTER on the cluster checked by the rules)."""
        assert self._log_dir_mover is not None
        return self._encode(request, alter_replica_log_dirs(
            request.body_as(AlterReplicaLogDirsRequest), self._log_dir_mover))

    async def _list_offsets(self, request: RequestFrame, _: Session, access: Access) -> bytes:
        """ListOffsets from the replica manager, answered as the request's version has it."""
        assert self._replicas is not None
        answer = await list_offsets(request.body_as(ListOffsetsRequest), self._replicas,
                                    self._denied(request, access),
                                    api_version=request.api_version)
        return await self._encode_large(request, lambda: answer)

    async def _write_txn_markers(self, request: RequestFrame, _: Session,
                                 access: Access) -> bytes:
        """The transaction coordinator's markers: CLUSTER_ACTION or ALTER on the cluster
        (Kafka 4 asks ALTER first), each marker waiting for acks=all."""
        assert self._replicas is not None
        body = request.body_as(WriteTxnMarkersRequest)
        if not (access.allows(AclOperation.ALTER, ResourceType.CLUSTER)
                or access.allows(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)):
            return self._encode(request, error_answer(
                request.api_key, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
        answer = await write_txn_markers(body, self._replicas, now_ms=self._node.now_ms,
                                         timeout_ms=self._request_timeout_ms)
        return await self._encode_large(request, lambda: answer)

    async def _init_producer_id(self, request: RequestFrame, _: Session,
                                access: Access) -> bytes:
        """An idempotent producer's id from this broker's blocks; a transactional id's
        from its coordinator (NOT_COORDINATOR on a broker running none)."""
        body = request.body_as(InitProducerIdRequest)
        refusal = (init_producer_refusal(body, access, self._metadata.image)
                   or producer_id_and_epoch_refusal(body))
        if refusal is not None:
            return self._encode(request, refusal)
        if body.transactional_id is None:
            return self._encode(request, init_producer_id(body, self.producer_ids))
        if self._transactions is None:
            return self._encode(request, error_answer(request.api_key, body,
                                                      ErrorCode.NOT_COORDINATOR))
        return self._encode(request, await self._transactions.init_producer_id(
            body, request.api_version))

    async def _transaction_answer(self, request: RequestFrame, _: Session,
                                  access: Access) -> bytes:
        """AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions and
        ListTransactions, from the transaction coordinator."""
        txn = self._transactions
        assert txn is not None
        body, version = request.body, request.api_version
        answer: object
        if isinstance(body, AddPartitionsToTxnRequest):
            answer = await txn.add_partitions(body, version, access)
        elif isinstance(body, AddOffsetsToTxnRequest):
            answer = await txn.add_offsets(body, version, access)
        elif isinstance(body, EndTxnRequest):
            answer = await txn.end_txn(body, version, access)
        elif isinstance(body, DescribeTransactionsRequest):
            answer = await txn.describe(body, access)
        else:
            answer = await txn.list(request.body_as(ListTransactionsRequest), access)
        return await self._encode_large(request, lambda: answer)

    async def _describe_cluster(self, request: RequestFrame, _: Session,
                                access: Access) -> bytes:
        body = request.body_as(DescribeClusterRequest)
        return self._encode(request, describe_cluster_response(
            self._metadata.image, body, version=request.api_version,
            self_id=self._settings.node_id, cluster_id=self._cluster_id,
            listener=self._listener_name, operations=access.cluster_operations(
                body.include_cluster_authorized_operations)))

    async def _describe_topic_partitions(self, request: RequestFrame, _: Session,
                                         access: Access) -> bytes:
        """From the image, a page of at most ``max.request.partition.size.limit``
        partitions."""
        image = self._metadata.image
        body = request.body_as(DescribeTopicPartitionsRequest)
        return await self._encode_large(request, lambda: describe_topic_partitions(
            image, body, access, listener=self._listener_name,
            partition_cap=self._partition_cap))

    async def _describe_scram(self, request: RequestFrame, _: Session, __: Access) -> bytes:
        """From the image: off the loop when large."""
        image = self._metadata.image
        body = request.body_as(DescribeUserScramCredentialsRequest)
        return await self._encode_large(request, lambda: describe_user_scram_credentials(
            image.scram, body))

    async def _describe_tokens(self, request: RequestFrame, _: Session,
                               access: Access) -> bytes:
        body = request.body_as(DescribeDelegationTokenRequest)
        image = self._metadata.image
        return await self._encode_large(request, lambda: describe_delegation_tokens(
            image.delegation_tokens, self._settings.controller.tokens, body, access))

    async def _token_request(self, request: RequestFrame, session: Session,
                             access: Access) -> bytes:
        """Create, renew or expire a token: refused here (KafkaApis' checks) or forwarded
        as the client's own, for the controller to check the client again."""
        refusal = token_refusal(request.body, access, broker=True)
        if refusal is not None:
            return self._encode(request, refusal)
        if enveloped := await self._enveloped(request, session):
            return await self._encode_large(request, lambda: enveloped.response)
        return await self._forwarded(request, session, access)

    async def _describe_quotas(self, request: RequestFrame, _: Session, __: Access) -> bytes:
        """From the image: off the loop when large."""
        quotas = self._metadata.image.client_quotas
        body = request.body_as(DescribeClientQuotasRequest)
        return await self._encode_large(request, lambda: describe_client_quotas(quotas, body))

    async def _list_config_resources(self, request: RequestFrame, _: Session,
                                     __: Access) -> bytes:
        """From the image: off the loop when large (every topic)."""
        image = self._metadata.image
        body = request.body_as(ListConfigResourcesRequest)
        return await self._encode_large(request, lambda: list_config_resources(
            image, body, request.api_version, listener=self._listener_name))

    async def _describe_acls(self, request: RequestFrame, _: Session, __: Access) -> bytes:
        body = request.body_as(DescribeAclsRequest)
        return self._encode(request, describe_acls(
            self._metadata.image, body, enabled=self._authorizers.config is not None))

    async def _describe_configs_answer(self, request: RequestFrame, _: Session,
                                       __: Access) -> bytes:
        image = self._metadata.image
        body = request.body_as(DescribeConfigsRequest)
        return await self._encode_large(request, lambda: self._describe_configs(body, image))

    def _describe_configs(self, body: DescribeConfigsRequest,
                          image: MetadataImage) -> DescribeConfigsResponse:
        """DescribeConfigs: Kafka's brokers answer it (ConfigHelper), from ``image`` and the
        properties file (pure: a large one is answered off the loop)."""
        return describe_configs(image, body, node_id=self._settings.node_id,
                                static=self._settings.controller.properties)

    async def _split_answer(self, request: RequestFrame, access: Access) -> object:
        """An admin request with parts: the refused parts answered here, the others
        forwarded (or, for DescribeConfigs, answered from the image)."""
        api_key = request.api_key
        body = controller_body(request.body)  # the generated class of every version
        assert isinstance(body, PARTS_REQUESTS)
        split = split_parts(api_key, body, access, self._metadata.image.topics.by_id)
        answer = None
        if split.allowed is not None:
            allowed = split.allowed
            answer = (self._describe_configs(allowed, self._metadata.image)
                      if isinstance(allowed, DescribeConfigsRequest)
                      else await self._forward(request, lambda: self._send_plain(request,
                                                                                 allowed)))
        return merge_parts(api_key, split, answer)

    async def _metadata_answer(self, request: RequestFrame, _: Session,
                               access: Access) -> bytes:
        """Metadata from the image, filtered by what the session may DESCRIBE; v8-10
        carry the cluster's authorized operations when asked for. A large request's answer
        is built on the codec thread: it reads only the image, which never changes, and
        tens of thousands of topics took seconds of the loop."""
        body = request.body_as(MetadataRequest)
        version = request.api_version
        image = self._metadata.image

        def described() -> MetadataResponse:
            return authorized_metadata(metadata_response(
                image, body, version=version, self_id=self._settings.node_id,
                cluster_id=self._cluster_id, listener=self._listener_name), body, version,
                access)
        answer = self._with_auto_created(await off_loop_if_large(described), body, version,
                                         access)
        if FIRST_CLUSTER_OPERATIONS_VERSION <= version <= LAST_CLUSTER_OPERATIONS_VERSION:
            answer = dataclasses.replace(answer, cluster_authorized_operations=(
                access.cluster_operations(body.include_cluster_authorized_operations)))
        return await self._encode_large(request, lambda: answer)

    def _with_auto_created(self, answer: MetadataResponse, request: MetadataRequest,
                           version: int, access: Access) -> MetadataResponse:
        """The missing topics ``request`` names created on demand when
        ``auto.create.topics.enable`` and the request allow it (:mod:`auto_topics`), each
        answered UNKNOWN_TOPIC_OR_PARTITION while the controller creates it, or
        TOPIC_AUTHORIZATION_FAILED when the session may not create it."""
        allowed = version < FIRST_AUTO_CREATE_FLAG_VERSION or request.allow_auto_topic_creation
        if self._auto_topics is None or not allowed:
            return answer
        missing = [str(t.name) for t in answer.topics
                   if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                   and t.name is not None and t.topic_id in (None, ZERO_UUID)]
        if not missing:
            return answer
        creatable = creatable_topics(missing, access)
        codes = {**self._auto_topics.create(name for name in missing if name in creatable),
                 **{name: ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    for name in missing if name not in creatable}}
        return dataclasses.replace(answer, topics=tuple(
            dataclasses.replace(t, error_code=codes[str(t.name)])
            if t.name is not None and str(t.name) in codes else t for t in answer.topics))

    async def _find_coordinator(self, request: RequestFrame, _: Session,
                                access: Access) -> bytes:
        """FindCoordinator from the image alone (built off the loop when large), the
        offsets topic created when missing."""
        assert self._groups is not None
        finder = self._groups[1]
        api_key, version = request.api_key, request.api_version
        body = request.body_as(FindCoordinatorRequest)
        latest = await off_loop_if_large(lambda: to_latest(api_key, version, body))
        image = self._metadata.image
        finder.create_missing(latest, image)
        return await self._encode_large(request, lambda: to_version(
            api_key, version, authorized_coordinators(latest, finder.find(latest, image),
                                                      access), latest))

    async def _group_answer(self, request: RequestFrame, session: Session,
                            access: Access) -> bytes:
        """A group shard's answer, once the session's groups and topics are checked; each
        request in the latest shape and its answer back in the caller's version."""
        assert self._groups is not None
        service = self._groups[0]
        api_key, version = request.api_key, request.api_version
        ids = by_topic_id(api_key, version)
        body = request.body
        assert isinstance(body, ShardRequest), "GROUP_APIS route shard requests here"

        def serve(body: ShardRequest) -> Awaitable[ShardResponse]:
            return service.handle(api_key, shard_version(api_key) if ids else version, body,
                                  client_id=request.header.client_id or "",
                                  client_host="/" + session.client_host)
        handle = (existing_partitions_only(api_key, self._metadata.image, serve)
                  if api_key in COMMIT_APIS else serve)
        if ids:  # topics by id, resolved to names for the shards and back
            assert isinstance(body, OffsetRequest)
            answer = await answered_by_id(
                api_key, body, self._metadata.image.topics, access,
                lambda body: authorized_group_answer(api_key, body, access, handle))
            return await self._encode_large(request, lambda: answer)
        latest = await off_loop_if_large(lambda: to_latest(api_key, version, body))
        response = await authorized_group_answer(api_key, latest, access, handle)
        return await self._encode_large(
            request, lambda: to_version(api_key, version, response, latest))

    def _request_throttle(self, request: RequestFrame) -> int:
        """``request_percentage`` for the client of the request being served."""
        return self._quotas.throttle_request(request.api_key, request.header.client_id)

    def _failed(self, request: RequestFrame) -> bytes:
        """A group API's or Produce's UNKNOWN_SERVER_ERROR names every group or partition
        it asked about, in the caller's version's shape (a failed acks=0 Produce closes the
        connection; the others: the listener's rule)."""
        api_key, version = request.api_key, request.api_version
        if api_key == ApiKey.PRODUCE and self._produce is not None:
            refused = self._produce.refused(request.body_as(ProduceRequest), api_version=version,
                                            code=ErrorCode.UNKNOWN_SERVER_ERROR)
            if refused is None:
                raise CloseConnection("acks=0 produce failed")
            return self._encode(request, refused)
        if api_key not in GROUP_APIS:
            return super()._failed(request)
        body = request.body
        assert isinstance(body, GroupRequest), "GROUP_APIS are the group requests"
        if by_topic_id(api_key, version):
            assert isinstance(body, OffsetRequest)
            return self._encode(request, refused_by_id(api_key, body,
                                                       ErrorCode.UNKNOWN_SERVER_ERROR))
        latest = to_latest(api_key, version, body)
        return self._encode(request, to_version(api_key, version, error_response(
            api_key, latest, ErrorCode.UNKNOWN_SERVER_ERROR), latest))

    async def _produce_answer(self, request: RequestFrame, session: Session,
                              access: Access) -> bytes:
        """The Produce response; nothing for acks=0 (b""), and for a failed acks=0 request a
        closed connection, as Kafka answers. Its size counts against the client's
        ``producer_byte_rate`` once appended (acks=0 too: the connection is muted)."""
        assert self._produce is not None
        try:
            response = await self._produce.handle(
                request.body_as(ProduceRequest), api_version=request.api_version,
                client_id=request.header.client_id, denied=self._denied(request, access))
        except AcksZeroFailedError as exc:
            raise CloseConnection(str(exc)) from None
        throttle_ms = self._quotas.throttle_produce(session, request.header.client_id,
                                                    request.size)
        if response is None:
            return b""
        answer = dataclasses.replace(response, throttle_time_ms=throttle_ms)
        return await self._encode_large(request, lambda: answer)

    async def _enveloped(self, request: RequestFrame, session: Session) -> Enveloped | None:
        """The controller's answer to ``request`` forwarded inside an Envelope (as the
        client's own, for ``session``), or None when the active controller does not take
        Envelope (it did not advertise it): the caller then forwards it as the broker's."""
        async def send() -> object:
            envelope = await off_loop_if_large(envelope_for, request, session)
            response = await self._channel.send(envelope)
            return await off_loop_if_large(unwrapped, response, request)
        try:
            return Enveloped(await self._forward(request, send))
        except UnsupportedVersionError as exc:
            if exc.api_key == ApiKey.ENVELOPE:
                return None
            raise
        except EnvelopeRefusedError as exc:
            raise CloseConnection(str(exc)) from None

    async def _send_plain(self, request: RequestFrame, body: object | None = None) -> object:
        """``request`` (or its ``body`` instead) sent as the broker's own request, with
        its client's id, as in Kafka's envelope: no larger than it came (with the broker's
        own id, a request at socket.request.max.bytes was 23 bytes over the controller's
        limit, which closed the connection on every retry)."""
        return await self._channel.send(controller_body(request.body) if body is None else body,
                                        request.header.client_id or "")

    async def _forward(self, request: RequestFrame,
                       send: Callable[[], Awaitable[object]]) -> object:
        """The active controller's answer, by ``send``. While the controller changes (no
        leader known yet, a lost connection, an answer of NOT_CONTROLLER from a former
        leader), retry with backoff for up to :data:`FORWARD_TIMEOUT_MS`, as Kafka's
        forwarding does: some clients (librdkafka's CreateTopics) do not retry per-topic
        NOT_CONTROLLER errors. A controller that speaks no Envelope raises
        UnsupportedVersionError for the caller. A write's answer waits, within the same
        bound, until this broker's image holds it (:mod:`pykraft.broker.read_after_write`)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FORWARD_TIMEOUT_MS / 1000
        backoff = ExponentialBackoff(initial_ms=FORWARD_BACKOFF_MS)
        while True:
            try:
                with parked():  # out of the request queue meanwhile, as Kafka's forwarding
                    response = await send()
            except UnsupportedVersionError as exc:
                if exc.api_key == ApiKey.ENVELOPE:
                    raise
                return self._not_controller(request, exc)
            except RequestTooLargeError as exc:  # its every part answered: off the loop
                return await off_loop_if_large(error_answer, request.api_key, request.body,
                                   ErrorCode.REQUEST_TIMED_OUT, str(exc))
            except NetworkError as exc:
                response = self._not_controller(request, exc)
            if not is_not_controller(response):
                await settle(request.api_key, self._channel, self._metadata,
                             deadline - loop.time())
                return response
            delay = backoff.next_delay_ms() / 1000
            if loop.time() + delay >= deadline:
                return response
            await asyncio.sleep(delay)

    @staticmethod
    def _not_controller(request: RequestFrame, exc: Exception) -> object:
        return error_answer(request.api_key, request.body, ErrorCode.NOT_CONTROLLER, str(exc))

    def _api_versions(self, version: int) -> ApiVersionsResponse:
        """The same fixed set on every broker, so a client may talk to any of them."""
        image = self._metadata.image  # Kafka's broker: its image's offset is the epoch
        body = api_versions_response(Listener.BROKER, version, **node_features(
            image.features.finalized, self._node.core.kraft_version,
            image.provenance.last_offset))
        served = tuple(k for k in body.api_keys if k.api_key in self._served)
        return dataclasses.replace(body, api_keys=served)


_FORWARDED = BrokerApi(BrokerDispatcher._forwarded, forwarded=True)
_READ = BrokerApi(BrokerDispatcher._read, Needs.REPLICAS)
#: Every API a broker's client listener serves, and what answers it: the image, the
#: replica manager, the group coordinator, or the active controller (forwarded).
BROKER_APIS: Mapping[int, BrokerApi] = {
    # answered by the listener itself
    ApiKey.API_VERSIONS: BrokerApi(None),
    **dict.fromkeys(SASL_APIS, BrokerApi(None)),
    # from this broker's image (and its properties, for its own configs)
    ApiKey.METADATA: BrokerApi(BrokerDispatcher._metadata_answer),
    ApiKey.DESCRIBE_CLUSTER: BrokerApi(BrokerDispatcher._describe_cluster),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: BrokerApi(BrokerDispatcher._describe_topic_partitions),
    ApiKey.DESCRIBE_CONFIGS: BrokerApi(BrokerDispatcher._describe_configs_answer),
    ApiKey.DESCRIBE_ACLS: BrokerApi(BrokerDispatcher._describe_acls),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: BrokerApi(BrokerDispatcher._describe_scram),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: BrokerApi(BrokerDispatcher._describe_quotas),
    ApiKey.LIST_CONFIG_RESOURCES: BrokerApi(BrokerDispatcher._list_config_resources),
    ApiKey.DESCRIBE_DELEGATION_TOKEN: BrokerApi(BrokerDispatcher._describe_tokens),
    # checked here, then forwarded to the active controller as the client's
    **dict.fromkeys((ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
                     ApiKey.EXPIRE_DELEGATION_TOKEN), BrokerApi(BrokerDispatcher._token_request)),
    # from the producer id blocks the controller hands this broker
    ApiKey.INIT_PRODUCER_ID: BrokerApi(BrokerDispatcher._init_producer_id),
    # the data plane: partition logs
    ApiKey.PRODUCE: BrokerApi(BrokerDispatcher._produce_answer, Needs.PRODUCE),
    ApiKey.FETCH: BrokerApi(BrokerDispatcher._fetch, Needs.REPLICAS),
    ApiKey.LIST_OFFSETS: BrokerApi(BrokerDispatcher._list_offsets, Needs.REPLICAS),
    # OffsetForLeaderEpoch, DescribeLogDirs, DeleteRecords, DescribeProducers
    **dict.fromkeys(READS, _READ),
    ApiKey.WRITE_TXN_MARKERS: BrokerApi(BrokerDispatcher._write_txn_markers, Needs.REPLICAS),
    ApiKey.ALTER_REPLICA_LOG_DIRS: BrokerApi(BrokerDispatcher._alter_log_dirs,
                                             Needs.LOG_DIR_MOVES),
    # the transaction coordinator (InitProducerId above, for a transactional id)
    **dict.fromkeys(TRANSACTION_APIS, BrokerApi(BrokerDispatcher._transaction_answer,
                                                Needs.TRANSACTIONS)),
    # the group coordinator: FindCoordinator from the image, the rest from its shards
    ApiKey.FIND_COORDINATOR: BrokerApi(BrokerDispatcher._find_coordinator, Needs.GROUPS),
    **dict.fromkeys(SHARD_APIS, BrokerApi(BrokerDispatcher._group_answer, Needs.GROUPS)),
    # forwarded to the active controller (KIP-590)
    **dict.fromkeys((
        ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS,
        ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.UPDATE_FEATURES,
        ApiKey.DESCRIBE_QUORUM, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER,
        ApiKey.UNREGISTER_BROKER, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS,
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ApiKey.ELECT_LEADERS, ApiKey.ALTER_CLIENT_QUOTAS,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS), _FORWARDED),
}
