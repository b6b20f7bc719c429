"""Which operation on which resource each API needs (Kafka's KafkaApis and ControllerApis).

Pure rules for both listeners: :data:`BROKER_RULES` and :data:`CONTROLLER_RULES` name,
for every api key a node serves, the resource and operation it checks and how a refusal is
answered (its :class:`Scope`); :class:`Access` answers the questions a handler asks for one
request's session over one image's ACLs. Without an authorizer every question is answered
yes and an authorized-operations bitfield lists every operation the resource type
supports, as Kafka's ``AuthHelper`` does with no authorizer configured.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pykraft.config.authorizer import AuthorizerConfig
from pykraft.image.acls import (
    CLUSTER_NAME,
    AclOperation,
    AclPermissionType,
    AclsImage,
    PatternType,
    ResourceType,
)
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.security.authorizer import SUPPORTED_OPERATIONS, StandardAuthorizer
from pykraft.security.session import Session

_O = AclOperation
#: Kafka's AUTHORIZED_OPERATIONS_OMITTED: the client did not ask for the bitfield.
OPERATIONS_OMITTED = -(2**31)
_R = ResourceType


class Scope(enum.Enum):
    """What a refusal covers."""

    NONE = "no check"  # ApiVersions, SaslHandshake, SaslAuthenticate
    CLUSTER = "the whole request, CLUSTER_AUTHORIZATION_FAILED"
    TOPICS = "each topic it names, TOPIC_AUTHORIZATION_FAILED"
    GROUP = "its group(s), GROUP_AUTHORIZATION_FAILED (and its topics where it names some)"
    RESOURCES = "each config resource, by the resource's type"
    CUSTOM = "the API's own rule (see its handler)"


@dataclass(frozen=True, slots=True)
class ApiRule:
    """One API's check: ``operation`` on ``resource_type`` (None for NONE and RESOURCES)."""

    scope: Scope
    operation: AclOperation | None = None
    resource_type: ResourceType | None = None


NO_CHECK = ApiRule(Scope.NONE)


def _cluster(operation: AclOperation) -> ApiRule:
    return ApiRule(Scope.CLUSTER, operation, _R.CLUSTER)


def _topics(operation: AclOperation) -> ApiRule:
    return ApiRule(Scope.TOPICS, operation, _R.TOPIC)


def _group(operation: AclOperation) -> ApiRule:
    return ApiRule(Scope.GROUP, operation, _R.GROUP)


_K = ApiKey
_COMMON: dict[int, ApiRule] = {
    _K.API_VERSIONS: NO_CHECK, _K.SASL_HANDSHAKE: NO_CHECK, _K.SASL_AUTHENTICATE: NO_CHECK,
    _K.CREATE_TOPICS: _topics(_O.CREATE),  # or CREATE on the cluster for every topic
    _K.DELETE_TOPICS: _topics(_O.DELETE),  # and DESCRIBE for a topic named by id
    _K.CREATE_PARTITIONS: _topics(_O.ALTER),
    _K.DESCRIBE_CONFIGS: ApiRule(Scope.RESOURCES, _O.DESCRIBE_CONFIGS),
    _K.ALTER_CONFIGS: ApiRule(Scope.RESOURCES, _O.ALTER_CONFIGS),
    _K.INCREMENTAL_ALTER_CONFIGS: ApiRule(Scope.RESOURCES, _O.ALTER_CONFIGS),
    _K.UPDATE_FEATURES: _cluster(_O.ALTER),
    _K.DESCRIBE_QUORUM: _cluster(_O.DESCRIBE),
    _K.ADD_RAFT_VOTER: _cluster(_O.ALTER), _K.REMOVE_RAFT_VOTER: _cluster(_O.ALTER),
    _K.UNREGISTER_BROKER: _cluster(_O.ALTER),
    _K.CREATE_ACLS: _cluster(_O.ALTER), _K.DELETE_ACLS: _cluster(_O.ALTER),
    _K.DESCRIBE_ACLS: _cluster(_O.DESCRIBE),
    _K.ALTER_USER_SCRAM_CREDENTIALS: _cluster(_O.ALTER),
    _K.ELECT_LEADERS: _cluster(_O.ALTER),
    _K.ALTER_PARTITION_REASSIGNMENTS: _cluster(_O.ALTER),
    _K.LIST_PARTITION_REASSIGNMENTS: _cluster(_O.DESCRIBE),
    _K.ALTER_CLIENT_QUOTAS: _cluster(_O.ALTER_CONFIGS),
    # token requests: refused over unauthenticated channels and token authentications;
    # CREATE_TOKENS on the owner's USER to create for another (security.token_requests)
    _K.CREATE_DELEGATION_TOKEN: ApiRule(Scope.CUSTOM, _O.CREATE_TOKENS, _R.USER),
    _K.RENEW_DELEGATION_TOKEN: ApiRule(Scope.CUSTOM),  # the owner or a renewer
    _K.EXPIRE_DELEGATION_TOKEN: ApiRule(Scope.CUSTOM),
}
#: KafkaApis. Forwarded requests are checked on the broker before they are forwarded (no
#: Envelope carries the client's principal to the controller), with the controller's rules.
BROKER_RULES: dict[int, ApiRule] = _COMMON | {
    _K.METADATA: ApiRule(Scope.CUSTOM, _O.DESCRIBE, _R.TOPIC),  # filters; CREATE to create
    _K.DESCRIBE_CLUSTER: NO_CHECK,  # only its authorized operations need DESCRIBE
    # leaves out (all topics) or refuses (named) each topic without DESCRIBE
    _K.DESCRIBE_TOPIC_PARTITIONS: ApiRule(Scope.CUSTOM, _O.DESCRIBE, _R.TOPIC),
    _K.LIST_CONFIG_RESOURCES: _cluster(_O.DESCRIBE_CONFIGS),
    _K.PRODUCE: _topics(_O.WRITE),  # and WRITE on its transactional id
    _K.FETCH: _topics(_O.READ),  # a follower's (replica_id >= 0): CLUSTER_ACTION
    _K.LIST_OFFSETS: _topics(_O.DESCRIBE),
    _K.OFFSET_FOR_LEADER_EPOCH: _topics(_O.DESCRIBE),  # or CLUSTER_ACTION for every topic
    _K.DELETE_RECORDS: _topics(_O.DELETE),
    _K.DESCRIBE_LOG_DIRS: _cluster(_O.DESCRIBE),
    _K.ALTER_REPLICA_LOG_DIRS: _cluster(_O.ALTER),
    _K.DESCRIBE_PRODUCERS: _topics(_O.READ),
    # the transaction APIs check their transactional id, topics and group themselves
    # (pykraft.broker.txn_apis); AddPartitionsToTxn v4+ needs CLUSTER_ACTION
    _K.ADD_PARTITIONS_TO_TXN: ApiRule(Scope.CUSTOM, _O.WRITE, _R.TRANSACTIONAL_ID),
    _K.ADD_OFFSETS_TO_TXN: ApiRule(Scope.CUSTOM, _O.WRITE, _R.TRANSACTIONAL_ID),
    _K.END_TXN: ApiRule(Scope.CUSTOM, _O.WRITE, _R.TRANSACTIONAL_ID),
    _K.DESCRIBE_TRANSACTIONS: ApiRule(Scope.CUSTOM, _O.DESCRIBE, _R.TRANSACTIONAL_ID),
    _K.LIST_TRANSACTIONS: ApiRule(Scope.CUSTOM, _O.DESCRIBE, _R.TRANSACTIONAL_ID),
    # CLUSTER_ACTION, or ALTER on the cluster (Kafka 4 checks ALTER first)
    _K.WRITE_TXN_MARKERS: ApiRule(Scope.CUSTOM, _O.CLUSTER_ACTION, _R.CLUSTER),
    _K.DESCRIBE_USER_SCRAM_CREDENTIALS: _cluster(_O.DESCRIBE),
    # its own tokens, or DESCRIBE on the token or DESCRIBE_TOKENS on its owner's USER
    _K.DESCRIBE_DELEGATION_TOKEN: ApiRule(Scope.CUSTOM, _O.DESCRIBE_TOKENS, _R.USER),
    _K.DESCRIBE_CLIENT_QUOTAS: _cluster(_O.DESCRIBE_CONFIGS),
    # idempotent: IDEMPOTENT_WRITE on the cluster or WRITE on any topic; transactional:
    # WRITE on its transactional id
    _K.INIT_PRODUCER_ID: ApiRule(Scope.CUSTOM, _O.IDEMPOTENT_WRITE, _R.CLUSTER),
    _K.FIND_COORDINATOR: ApiRule(Scope.CUSTOM, _O.DESCRIBE, _R.GROUP),  # or transactional id
    _K.JOIN_GROUP: _group(_O.READ), _K.SYNC_GROUP: _group(_O.READ),
    _K.HEARTBEAT: _group(_O.READ), _K.LEAVE_GROUP: _group(_O.READ),
    _K.OFFSET_COMMIT: _group(_O.READ),  # then READ on each topic
    # WRITE on its transactional id, then READ on the group and on each topic
    _K.TXN_OFFSET_COMMIT: _group(_O.READ),
    _K.OFFSET_FETCH: _group(_O.DESCRIBE),  # then DESCRIBE on each topic (filtered)
    _K.DESCRIBE_GROUPS: _group(_O.DESCRIBE),
    _K.LIST_GROUPS: ApiRule(Scope.CUSTOM, _O.DESCRIBE, _R.CLUSTER),  # or each group's
    _K.DELETE_GROUPS: _group(_O.DELETE),
    _K.OFFSET_DELETE: _group(_O.DELETE),  # then READ on each topic
    _K.CONSUMER_GROUP_HEARTBEAT: _group(_O.READ),
    _K.CONSUMER_GROUP_DESCRIBE: _group(_O.DESCRIBE),
}
#: ControllerApis, over the controller's own image.
CONTROLLER_RULES: dict[int, ApiRule] = _COMMON | {
    _K.VOTE: _cluster(_O.CLUSTER_ACTION), _K.BEGIN_QUORUM_EPOCH: _cluster(_O.CLUSTER_ACTION),
    _K.END_QUORUM_EPOCH: _cluster(_O.CLUSTER_ACTION), _K.FETCH: _cluster(_O.CLUSTER_ACTION),
    _K.FETCH_SNAPSHOT: _cluster(_O.CLUSTER_ACTION),
    _K.UPDATE_RAFT_VOTER: _cluster(_O.CLUSTER_ACTION),
    _K.DESCRIBE_CLUSTER: _cluster(_O.ALTER),  # Kafka's controller asks ALTER, not DESCRIBE
    _K.BROKER_REGISTRATION: _cluster(_O.CLUSTER_ACTION),
    _K.BROKER_HEARTBEAT: _cluster(_O.CLUSTER_ACTION),
    _K.CONTROLLER_REGISTRATION: _cluster(_O.CLUSTER_ACTION),
    _K.ALTER_PARTITION: _cluster(_O.CLUSTER_ACTION),
    _K.ALLOCATE_PRODUCER_IDS: _cluster(_O.CLUSTER_ACTION),
    _K.ASSIGN_REPLICAS_TO_DIRS: _cluster(_O.CLUSTER_ACTION),
    _K.ENVELOPE: _cluster(_O.CLUSTER_ACTION),  # then the inner request, as its client
}

#: DescribeConfigs/AlterConfigs resource type codes -> the ACL resource and the refusal.
_CONFIG_RESOURCES: dict[int, tuple[ResourceType, ErrorCode]] = {
    2: (_R.TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    4: (_R.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),  # BROKER
    8: (_R.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),  # BROKER_LOGGER
    16: (_R.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),  # CLIENT_METRICS
    32: (_R.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED),
}
REFUSALS: dict[ResourceType, ErrorCode] = {
    _R.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    _R.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    _R.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    _R.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


def config_resource(resource_type: int, name: str) -> tuple[ResourceType, str, ErrorCode]:
    """The ACL resource a config resource is checked on, and the error a refusal carries
    (an unknown type: the cluster's, as the controller then answers it anyway)."""
    acl_type, code = _CONFIG_RESOURCES.get(int(resource_type), _CONFIG_RESOURCES[4])
    return acl_type, CLUSTER_NAME if acl_type == _R.CLUSTER else name, code


class AuthorizerCache:
    """One :class:`StandardAuthorizer` per ACLs image: its index is rebuilt only when the
    image's ACLs change."""

    def __init__(self, config: AuthorizerConfig | None) -> None:
        self.config = config
        self._built: tuple[AclsImage, StandardAuthorizer] | None = None

    def access(self, current: Callable[[], AclsImage], session: Session) -> Access:
        """What ``session`` may do over the ``current`` ACLs (everything without an
        authorizer, and then the image is not read)."""
        if self.config is None:
            return Access(None, session, AclsImage())
        acls = current()
        if self._built is None or self._built[0] is not acls:
            self._built = (acls, StandardAuthorizer.configured(acls, self.config))
        return Access(self._built[1], session, acls)


@dataclass(frozen=True, slots=True)
class Access:
    """One request's questions: may its session do this?"""

    authorizer: StandardAuthorizer | None
    session: Session
    acls: AclsImage

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def allows(self, operation: AclOperation, resource_type: ResourceType,
               name: str = CLUSTER_NAME) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(self.session.principal, self.session.client_host,
                                         operation, resource_type, name)

    def allowed(self, operation: AclOperation, resource_type: ResourceType,
                names: Iterable[str]) -> frozenset[str]:
        """Those of ``names`` the session may do ``operation`` on."""
        return frozenset(n for n in set(names) if self.allows(operation, resource_type, n))

    def operations(self, resource_type: ResourceType, name: str = CLUSTER_NAME) -> int:
        """The authorized-operations bitfield of a resource."""
        if self.authorizer is None:
            bits = 0
            for operation in SUPPORTED_OPERATIONS.get(resource_type, ()):
                bits |= 1 << operation
            return bits
        return self.authorizer.authorized_operations(
            self.session.principal, self.session.client_host, resource_type, name)

    def cluster_operations(self, requested: bool) -> int:
        """DescribeCluster's and Metadata's cluster bitfield: Kafka's "omitted" value when
        not requested, none without DESCRIBE on the cluster."""
        if not requested:
            return OPERATIONS_OMITTED
        allowed = self.allows(AclOperation.DESCRIBE, ResourceType.CLUSTER)
        return self.operations(ResourceType.CLUSTER) if allowed else 0

    def allows_any(self, operation: AclOperation, resource_type: ResourceType,
                   existing: Iterable[str] = ()) -> bool:
        """Kafka's ``authorizeByResourceType``: may the session do ``operation`` on some
        resource of the type? Tried on every name an ALLOW ACL of the type names (a
        PREFIXED pattern's prefix is such a name) and on the ``existing`` resources (for
        ``allow.everyone.if.no.acl.found``)."""
        if self.authorizer is None:
            return True
        candidates = {acl.resource_name for acl in self.acls.acls.values()
                      if acl.resource_type == resource_type
                      and acl.permission_type == AclPermissionType.ALLOW
                      and acl.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED)}
        return any(self.allows(operation, resource_type, name)
                   for name in candidates | set(existing))
