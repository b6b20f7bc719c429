"""DescribeUserScramCredentials (50) from the broker's metadata image (Kafka's
``ScramImage.describe``): mechanisms and iteration counts, never salts or keys.

No users (null or an empty list) describes every user with a credential; a user named twice
gets DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND, each with Kafka's
message. Results follow the request's order (Kafka's follow a hash map's). Kafka's
``ScramImage.describe`` sets no message where nothing failed: the schema's default, empty.
"""

from __future__ import annotations

from collections import Counter

from pykraft.image.scram import ScramImage
from pykraft.messages.kafka.describe_user_scram_credentials_request import (
    DescribeUserScramCredentialsRequest,
)
from pykraft.messages.kafka.describe_user_scram_credentials_response import (
    CredentialInfo,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResult,
)
from pykraft.protocol.errors import ErrorCode

_DUPLICATE = "Cannot describe SCRAM credentials for the same user twice in a single request: "
_NOT_FOUND = "Attempt to describe a user credential that does not exist: "


def _result(scram: ScramImage, user: str, duplicate: bool
            ) -> DescribeUserScramCredentialsResult:
    if duplicate:
        return DescribeUserScramCredentialsResult(
            user=user, error_code=ErrorCode.DUPLICATE_RESOURCE,
            error_message=_DUPLICATE + user, credential_infos=())
    infos = tuple(CredentialInfo(mechanism=mechanism, iterations=credential.iterations)
                  for mechanism, credential in scram.credentials_of(user))
    if not infos:
        return DescribeUserScramCredentialsResult(
            user=user, error_code=ErrorCode.RESOURCE_NOT_FOUND,
            error_message=_NOT_FOUND + user, credential_infos=())
    return DescribeUserScramCredentialsResult(user=user, error_code=ErrorCode.NONE,
                                              error_message="", credential_infos=infos)


def describe_user_scram_credentials(scram: ScramImage,
                                    request: DescribeUserScramCredentialsRequest
                                    ) -> DescribeUserScramCredentialsResponse:
    asked = Counter([u.name for u in request.users or ()] or scram.users())
    return DescribeUserScramCredentialsResponse(
        error_code=ErrorCode.NONE, error_message="",
        results=tuple(_result(scram, user, times > 1) for user, times in asked.items()))
