"""``pykraft delegation-tokens``: Kafka's ``kafka-delegation-tokens.sh`` (see
:mod:`pykraft.tools.delegation_tokens_tool`); usage errors and failures print their message
on stderr, as DelegationTokenCommand does."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError

_PRINCIPAL_HELP = "is a Kafka principal. They should be in principalType:name format."


def delegation_tokens(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST:PORT",
        help="REQUIRED: server(s) to use for bootstrapping.")] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="REQUIRED: A property file containing configs to be passed to Admin Client. "
        "Token management operations are allowed in secure mode only.")] = None,
    create: Annotated[bool, typer.Option(
        "--create", help="Create a new delegation token. Use --renewer-principal option to "
        "pass renewer principals.")] = False,
    renew: Annotated[bool, typer.Option(
        "--renew", help="Renew delegation token. Use --renew-time-period option to set renew "
        "time period.")] = False,
    expire: Annotated[bool, typer.Option(
        "--expire", help="Expire delegation token. Use --expiry-time-period option to expire "
        "the token.")] = False,
    describe: Annotated[bool, typer.Option(
        "--describe", help="Describe delegation tokens for the given principals. Use "
        "--owner-principal to pass owner/renewer principals.")] = False,
    owner_principal: Annotated[list[str] | None, typer.Option(
        "--owner-principal", metavar="PRINCIPAL", help=f"owner {_PRINCIPAL_HELP}")] = None,
    renewer_principal: Annotated[list[str] | None, typer.Option(
        "--renewer-principal", metavar="PRINCIPAL",
        help=f"renewer {_PRINCIPAL_HELP}")] = None,
    max_life_time_period: Annotated[int | None, typer.Option(
        "--max-life-time-period", metavar="MS",
        help="Max life period for the token in milliseconds. If the value is -1, then token "
        "max life time will default to the server side config value of "
        "(delegation.token.max.lifetime.ms).")] = None,
    renew_time_period: Annotated[int | None, typer.Option(
        "--renew-time-period", metavar="MS",
        help="Renew time period in milliseconds. If the value is -1, then the renew time "
        "period will default to the server side config value of "
        "(delegation.token.expiry.time.ms).")] = None,
    expiry_time_period: Annotated[int | None, typer.Option(
        "--expiry-time-period", metavar="MS",
        help="Expiry time period in milliseconds. If the value is -1, then the token will get "
        "invalidated immediately.")] = None,
    hmac: Annotated[str | None, typer.Option(
        "--hmac", metavar="HMAC", help="HMAC of the delegation token")] = None,
) -> None:
    """Create, renew, expire or describe delegation tokens (kafka-delegation-tokens.sh)."""
    from pykraft.security.session import KafkaPrincipal
    from pykraft.tools import delegation_tokens_tool as tool
    from pykraft.tools.admin_client import AdminClient, admin_settings

    def refuse(message: str) -> typer.Exit:
        typer.echo(message, err=True)
        return typer.Exit(1)

    if sum((create, renew, expire, describe)) != 1:
        raise refuse("Command must include exactly one action: --create, --renew, --expire "
                     "or --describe")
    required: list[tuple[str, object]] = [("bootstrap-server", bootstrap_server),
                                          ("command-config", command_config)]
    if create:
        required.append(("max-life-time-period", max_life_time_period))
    if renew or expire:
        required.append(("hmac", hmac))
    if renew:
        required.append(("renew-time-period", renew_time_period))
    if expire:
        required.append(("expiry-time-period", expiry_time_period))
    for name, value in required:
        if value is None:
            raise refuse(f'Missing required argument "[{name}]"')
    try:
        owners = [KafkaPrincipal.parse(p) for p in owner_principal or ()]
        renewers = [KafkaPrincipal.parse(p) for p in renewer_principal or ()]
    except ValueError as exc:
        raise refuse(str(exc)) from None

    # each action's call line and request; Kafka's tool prints the line before making the
    # call, so it stands when the call fails
    action: Callable[[AdminClient], Awaitable[str]]
    if create and max_life_time_period is not None:
        heading = tool.create_call(renewers, max_life_time_period)
        action = partial(tool.create, renewers=renewers, max_life_time_ms=max_life_time_period,
                         owner=owners[0] if owners else None)
    elif (renew or expire) and hmac is not None:
        period = renew_time_period if renew else expiry_time_period
        assert period is not None  # required above
        heading = (tool.renew_call if renew else tool.expire_call)(hmac, period)
        action = partial(tool.renew if renew else tool.expire, hmac=hmac, period_ms=period)
    else:
        heading = tool.describe_call(owners)
        action = partial(tool.describe, owners=owners)

    async def main() -> str:
        async with AdminClient(admin_settings(bootstrap_server or "", command_config)) as admin:
            return await action(admin)

    typer.echo(heading, nl=False)
    try:
        output = asyncio.run(main())
    except (PyKraftError, OSError, ValueError) as exc:
        raise refuse(str(exc)) from None
    # Kafka's tool ends a table with its last row's newline and a renewed or expired
    # token's date with none: the text is printed as it is
    typer.echo(output, nl=False)
