"""kafka-delegation-tokens.sh's table, as pykraft's tool prints it."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any, cast

from pykraft.messages.kafka.describe_delegation_token_request import (
    DescribeDelegationTokenRequest,
)
from pykraft.messages.kafka.describe_delegation_token_response import (
    DescribedDelegationToken,
    DescribedDelegationTokenRenewer,
    DescribeDelegationTokenResponse,
)
from pykraft.security.session import KafkaPrincipal
from pykraft.tools.admin_client import AdminClient
from pykraft.tools.delegation_tokens_tool import date, describe, describe_call, token_table


def test_a_token_row_is_kafkas_printf_with_local_dates() -> None:
    day = int(datetime.datetime(2026, 1, 2, 3, 4).timestamp() * 1000)
    token = DescribedDelegationToken(
        principal_type="User", principal_name="alice", token_requester_principal_type="User",
        token_requester_principal_name="admin", issue_timestamp=day, expiry_timestamp=day,
        max_timestamp=day, token_id="tid", hmac=b"\x01\x02",
        renewers=(DescribedDelegationTokenRenewer(principal_type="User", principal_name="b"),))
    assert date(day) == "2026-01-02T03:04"
    lines = token_table([token]).split("\n")
    assert lines[0] == "" and lines[1].startswith("TOKENID         HMAC        ")
    assert lines[3] == (f"{'tid':<15} {'AQI=':<30} {'User:alice':<15} {'User:admin':<15} "
                        f"{'[User:b]':<25} {'2026-01-02T03:04':<15} {'2026-01-02T03:04':<15} "
                        f"{'2026-01-02T03:04':<15}")


class _Asked:
    """An admin client that records the requests and answers no token."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    async def request(self, body: Any) -> DescribeDelegationTokenResponse:
        self.requests.append(body)
        return DescribeDelegationTokenResponse(error_code=0)


def test_describe_without_owners_sends_an_empty_owner_list_as_kafkas_tool() -> None:
    admin = _Asked()
    out = asyncio.run(describe(cast(AdminClient, admin), []))
    assert admin.requests == [DescribeDelegationTokenRequest(owners=())]  # not null: all
    assert describe_call([]) + out == (
        "Calling describe token operation for current user.\nTotal number of tokens : 0"
        + token_table([]))
    asyncio.run(describe(cast(AdminClient, admin), [KafkaPrincipal("User", "alice")]))
    assert [o.principal_name for o in admin.requests[1].owners] == ["alice"]
