"""``pykraft acls``: Kafka's ``kafka-acls.sh`` (see :mod:`pykraft.tools.acls_tool`);
failures print their message on stderr."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError

_MANY = "(repeatable)"


def acls(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST:PORT",
        help="REQUIRED: A list of host/port pairs to connect to the Kafka cluster.")] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="A property file containing configs to be passed to the admin client.")] = None,
    add: Annotated[bool, typer.Option("--add", help="Indicates you are trying to add ACLs.")
                   ] = False,
    remove: Annotated[bool, typer.Option(
        "--remove", help="Indicates you are trying to remove ACLs.")] = False,
    list_: Annotated[bool, typer.Option(
        "--list", help="List ACLs for the specified resource, use --topic <topic> or "
        "--group <group> or --cluster to specify a resource.")] = False,
    topic: Annotated[list[str] | None, typer.Option(
        "--topic", help=f"Topic to which ACLs should be added or removed {_MANY}.")] = None,
    group: Annotated[list[str] | None, typer.Option(
        "--group", help=f"Consumer group to which the ACLs should be added or removed "
        f"{_MANY}.")] = None,
    cluster: Annotated[bool, typer.Option("--cluster", help="Add/Remove cluster ACLs.")
                       ] = False,
    transactional_id: Annotated[list[str] | None, typer.Option(
        "--transactional-id", help=f"The transactionalId to which ACLs should be added or "
        f"removed {_MANY}.")] = None,
    resource_pattern_type: Annotated[str, typer.Option(
        "--resource-pattern-type", metavar="TYPE",
        help="LITERAL (default), PREFIXED, or, for --list and --remove, ANY or MATCH.")
    ] = "LITERAL",
    operation: Annotated[list[str] | None, typer.Option(
        "--operation", help=f"Operation being allowed or denied (default All) {_MANY}.")
    ] = None,
    allow_principal: Annotated[list[str] | None, typer.Option(
        "--allow-principal", help=f"principalType:name, e.g. User:alice {_MANY}.")] = None,
    deny_principal: Annotated[list[str] | None, typer.Option(
        "--deny-principal", help=f"principalType:name to deny {_MANY}.")] = None,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help=f"Host the allowed principals may connect from (default *) "
        f"{_MANY}.")] = None,
    deny_host: Annotated[list[str] | None, typer.Option(
        "--deny-host", help=f"Host the denied principals are refused from (default *) "
        f"{_MANY}.")] = None,
    principal: Annotated[list[str] | None, typer.Option(
        "--principal", help=f"With --list: the ACLs of this principal only {_MANY}.")] = None,
    producer: Annotated[bool, typer.Option(
        "--producer", help="Convenience option for the producer role: WRITE, DESCRIBE and "
        "CREATE on the topics.")] = False,
    consumer: Annotated[bool, typer.Option(
        "--consumer", help="Convenience option for the consumer role: READ and DESCRIBE on "
        "the topics, READ on the groups.")] = False,
    idempotent: Annotated[bool, typer.Option(
        "--idempotent", help="With --producer: IDEMPOTENT_WRITE on the cluster.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Assume Yes to all queries and do not prompt.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="With --list: the bindings as a JSON list.")] = False,
) -> None:
    """Add, remove and list ACLs (kafka-acls.sh)."""
    from pykraft.tools import acls_tool as tool
    from pykraft.tools.admin_client import AdminClient, admin_settings

    if sum((add, remove, list_)) != 1:
        typer.echo("Command must include exactly one action: --list, --add, --remove. ",
                   err=True)
        raise typer.Exit(1)
    if bootstrap_server is None:
        typer.echo('Missing required argument "[bootstrap-server]"', err=True)
        raise typer.Exit(1)
    options = tool.AclOptions(
        topics=tuple(topic or ()), groups=tuple(group or ()),
        transactional_ids=tuple(transactional_id or ()), cluster=cluster,
        pattern_type=resource_pattern_type, operations=tuple(operation or ()),
        allow_principals=tuple(allow_principal or ()),
        deny_principals=tuple(deny_principal or ()), allow_hosts=tuple(allow_host or ()),
        deny_hosts=tuple(deny_host or ()), producer=producer, consumer=consumer,
        idempotent=idempotent)

    async def main() -> list[str]:
        async with AdminClient(admin_settings(bootstrap_server or "", command_config)) as a:
            if add:
                return await tool.add_acls(a.request, options)
            if remove:
                for question, pattern, entries in tool.remove_prompts(options):
                    if not force:
                        typer.echo(question)
                        if input().strip().lower() != "y":
                            continue
                    await tool.remove_acls(a.request, pattern, entries)
                return []
            found = await tool.describe(a.request, options)
            if as_json:
                return [json.dumps(tool.as_json(found))]
            return tool.list_lines(found, [p.strip() for p in principal or ()])

    try:
        lines = asyncio.run(main())
    except (PyKraftError, OSError, EOFError) as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    for line in lines:
        typer.echo(line)
