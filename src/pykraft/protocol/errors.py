"""Kafka error codes on the wire.

Kafka's complete error table is generated from the pinned Kafka (:mod:`.error_codes`, with
Kafka's names and ``retriable``) and re-exported here with the groups that name the codes the
KRaft RPCs and the admin APIs answer with.
"""

from __future__ import annotations

from pykraft.protocol.error_codes import ErrorCode

__all__ = ["ADMIN_ERRORS", "KRAFT_ERRORS", "ErrorCode", "error_name", "for_code"]

KRAFT_ERRORS = frozenset(
    {
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_SERVER_ERROR,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.BROKER_NOT_AVAILABLE,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.STALE_BROKER_EPOCH,
        ErrorCode.INCONSISTENT_VOTER_SET,
        ErrorCode.SNAPSHOT_NOT_FOUND,
        ErrorCode.POSITION_OUT_OF_RANGE,
        ErrorCode.DUPLICATE_BROKER_REGISTRATION,
        ErrorCode.BROKER_ID_NOT_REGISTERED,
        ErrorCode.INCONSISTENT_CLUSTER_ID,
        ErrorCode.INELIGIBLE_REPLICA,
        ErrorCode.NEW_LEADER_ELECTED,
        ErrorCode.INVALID_REGISTRATION,
        ErrorCode.INVALID_VOTER_KEY,
        ErrorCode.DUPLICATE_VOTER,
        ErrorCode.VOTER_NOT_FOUND,
    }
)

ADMIN_ERRORS = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.TOPIC_ALREADY_EXISTS,
        ErrorCode.INVALID_PARTITIONS,
        ErrorCode.INVALID_REPLICATION_FACTOR,
        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ErrorCode.INVALID_CONFIG,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.POLICY_VIOLATION,
        ErrorCode.TOPIC_DELETION_DISABLED,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.FEATURE_UPDATE_FAILED,
        ErrorCode.RESOURCE_NOT_FOUND,
        ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        ErrorCode.ILLEGAL_SASL_STATE,
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        ErrorCode.THROTTLING_QUOTA_EXCEEDED,
    }
)


def error_name(code: int) -> str:
    """Kafka's own spelling (``Errors.name()``), e.g. ``NOT_CONTROLLER``; tools print it."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


def for_code(code: int) -> ErrorCode:
    """Kafka's ``Errors.forCode``: a generated class's ``error_code`` as the member it names,
    UNKNOWN_SERVER_ERROR for a code this table lacks (a peer's, newer or hostile)."""
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR
