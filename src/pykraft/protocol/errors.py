"""Kafka error codes on the wire.

kio already ships Kafka's complete error table as an IntEnum (``kio.schema.errors.ErrorCode``,
with a ``retriable`` flag), and kio bodies carry that type, so it is re-exported rather than
duplicated. The groups below name the codes the KRaft RPCs and the admin APIs answer with.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ADMIN_ERRORS", "KRAFT_ERRORS", "ErrorCode", "error_name", "for_code"]

KRAFT_ERRORS = frozenset(
    {
        ErrorCode.none,
        ErrorCode.unknown_server_error,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_leader_or_follower,
        ErrorCode.request_timed_out,
        ErrorCode.broker_not_available,
        ErrorCode.cluster_authorization_failed,
        ErrorCode.unsupported_version,
        ErrorCode.not_controller,
        ErrorCode.invalid_request,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_leader_epoch,
        ErrorCode.stale_broker_epoch,
        ErrorCode.inconsistent_voter_set,
        ErrorCode.snapshot_not_found,
        ErrorCode.position_out_of_range,
        ErrorCode.duplicate_broker_registration,
        ErrorCode.broker_id_not_registered,
        ErrorCode.inconsistent_cluster_id,
        ErrorCode.ineligible_replica,
        ErrorCode.new_leader_elected,
        ErrorCode.invalid_registration,
        ErrorCode.invalid_voter_key,
        ErrorCode.duplicate_voter,
        ErrorCode.voter_not_found,
    }
)

ADMIN_ERRORS = frozenset(
    {
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_topic_exception,
        ErrorCode.topic_authorization_failed,
        ErrorCode.cluster_authorization_failed,
        ErrorCode.unsupported_version,
        ErrorCode.topic_already_exists,
        ErrorCode.invalid_partitions,
        ErrorCode.invalid_replication_factor,
        ErrorCode.invalid_replica_assignment,
        ErrorCode.invalid_config,
        ErrorCode.not_controller,
        ErrorCode.invalid_request,
        ErrorCode.policy_violation,
        ErrorCode.topic_deletion_disabled,
        ErrorCode.unknown_topic_id,
        ErrorCode.invalid_update_version,
        ErrorCode.feature_update_failed,
        ErrorCode.resource_not_found,
        ErrorCode.unsupported_sasl_mechanism,
        ErrorCode.illegal_sasl_state,
        ErrorCode.sasl_authentication_failed,
        ErrorCode.throttling_quota_exceeded,
    }
)


def error_name(code: int) -> str:
    """Kafka's own spelling (``Errors.name()``), e.g. ``NOT_CONTROLLER``; tools print it."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


def for_code(code: int) -> ErrorCode:
    """Kafka's ``Errors.forCode``: a generated class's ``error_code`` as the member it names,
    UNKNOWN_SERVER_ERROR for a code this table lacks (a peer's, newer or hostile)."""
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.unknown_server_error
