"""AlterUserScramCredentials (KIP-554), as Kafka's ScramControlManager decides it.

The client salts the password itself (SaltedPassword = Hi(password, salt, i)); the
controller keeps only the keys derived from it. Each user may be named once per request,
deletions and upsertions together (a second mention fails both with DUPLICATE_RESOURCE);
names must not be empty, mechanisms known, iterations within 4096..16384, and a deleted
credential must exist. Valid alterations are written in one batch (deletions first), the
others are answered with their error; nothing is written below metadata.version 3.5-IV2.
"""

from __future__ import annotations

from pykraft.controller.context import ControllerContext, ControllerResult
from pykraft.image.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    MV_3_5_IV2,
    ScramCredential,
    ScramImage,
    ScramMechanism,
)
from pykraft.messages.kafka.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from pykraft.messages.kafka.alter_user_scram_credentials_response import (
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import RemoveUserScramCredentialRecord, UserScramCredentialRecord

Failure = tuple[ErrorCode, str]

_TWICE: Failure = (ErrorCode.DUPLICATE_RESOURCE,
                   "A user credential cannot be altered twice in the same request")
_UNSUPPORTED: Failure = (ErrorCode.UNSUPPORTED_VERSION,
                         "The current metadata.version does not support SCRAM")


def _name_and_mechanism(name: str, mechanism: int) -> Failure | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if ScramMechanism.of(mechanism) is ScramMechanism.UNKNOWN:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _deletion_failure(scram: ScramImage, deletion: ScramCredentialDeletion) -> Failure | None:
    failure = _name_and_mechanism(deletion.name, deletion.mechanism)
    if failure is None and scram.get(deletion.name, ScramMechanism(deletion.mechanism)) is None:
        return (ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist")
    return failure


def _upsertion_failure(upsertion: ScramCredentialUpsertion) -> Failure | None:
    failure = _name_and_mechanism(upsertion.name, upsertion.mechanism)
    if failure is None and upsertion.iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if failure is None and upsertion.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return failure


def _credential_record(upsertion: ScramCredentialUpsertion) -> UserScramCredentialRecord:
    mechanism = ScramMechanism(upsertion.mechanism)
    credential = ScramCredential.from_salted_password(
        mechanism, upsertion.salt, upsertion.iterations, upsertion.salted_password)
    return UserScramCredentialRecord(
        name=upsertion.name, mechanism=mechanism, salt=credential.salt,
        stored_key=credential.stored_key, server_key=credential.server_key,
        iterations=credential.iterations)


def alter_user_scram_credentials(ctx: ControllerContext,
                                 request: AlterUserScramCredentialsRequest) -> ControllerResult:
    supported = ctx.metadata_version >= MV_3_5_IV2
    scram = ctx.image.scram
    deletions: dict[str, ScramCredentialDeletion] = {}
    upsertions: dict[str, ScramCredentialUpsertion] = {}
    failures: dict[str, Failure] = {}
    for deletion in request.deletions:
        name = deletion.name
        if name in failures:
            continue
        failure = _TWICE if deletions.pop(name, None) is not None else (
            _deletion_failure(scram, deletion) if supported else _UNSUPPORTED)
        if failure is None:
            deletions[name] = deletion
        else:
            failures[name] = failure
    for upsertion in request.upsertions:
        name = upsertion.name
        if name in failures:
            continue
        twice = deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None
        failure = _TWICE if twice else (
            _upsertion_failure(upsertion) if supported else _UNSUPPORTED)
        if failure is None:
            upsertions[name] = upsertion
        else:
            failures[name] = failure
    records: list[object] = [
        RemoveUserScramCredentialRecord(name=d.name, mechanism=d.mechanism)
        for d in deletions.values()]
    records += [_credential_record(u) for u in upsertions.values()]
    results = [AlterUserScramCredentialsResult(user=name, error_code=ErrorCode.NONE,
                                               error_message=None)
               for name in [*deletions, *upsertions]]
    results += [AlterUserScramCredentialsResult(user=name, error_code=code, error_message=text)
                for name, (code, text) in failures.items()]
    return ControllerResult(tuple(records), AlterUserScramCredentialsResponse(
        results=tuple(results)))
