"""``pykraft reassign-partitions``: Kafka's ``kafka-reassign-partitions.sh`` (see
:mod:`pykraft.tools.reassign_tool`). Everything goes to stdout as Kafka prints it; a
refusal Kafka does not expect is ``Error: <message>`` (Kafka adds a stack trace), a usage
error goes to stderr; both exit 1."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pykraft.errors import PyKraftError

if TYPE_CHECKING:
    from pykraft.tools.broker_clients import BrokerClients

_ACTIONS = ("generate", "execute", "verify", "cancel", "list")
#: How long --execute and --cancel wait for log directory moves to start (Kafka's --timeout).
TIMEOUT_MS_DEFAULT = 10_000
#: The options each action takes besides itself (ReassignPartitionsCommand's permittedArgs).
_PERMITTED = {
    "verify": {"reassignment-json-file", "preserve-throttles"},
    "generate": {"topics-to-move-json-file", "broker-list", "disable-rack-aware"},
    "execute": {"reassignment-json-file", "additional", "throttle",
                "replica-alter-log-dirs-throttle", "timeout",
                "disallow-replication-factor-change"},
    "cancel": {"reassignment-json-file", "preserve-throttles", "timeout"},
    "list": set(),
}
_REQUIRED = {"verify": ("reassignment-json-file",),
             "generate": ("topics-to-move-json-file", "broker-list"),
             "execute": ("reassignment-json-file",), "cancel": ("reassignment-json-file",),
             "list": ()}


def reassign_partitions(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST:PORT",
        help="the server(s) to use for bootstrapping. REQUIRED.")] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="Property file containing configs to be passed to Admin Client.")] = None,
    generate: Annotated[bool, typer.Option(
        "--generate", help="Generate a candidate partition reassignment configuration (it "
        "is not executed).")] = False,
    execute: Annotated[bool, typer.Option(
        "--execute", help="Kick off the reassignment of --reassignment-json-file.")] = False,
    verify: Annotated[bool, typer.Option(
        "--verify", help="Verify that the reassignment of --reassignment-json-file "
        "completed; once it has, the throttles are removed.")] = False,
    cancel: Annotated[bool, typer.Option(
        "--cancel", help="Cancel an active reassignment.")] = False,
    list_: Annotated[bool, typer.Option(
        "--list", help="List all active partition reassignments.")] = False,
    reassignment_json_file: Annotated[Path | None, typer.Option(
        "--reassignment-json-file", metavar="FILE",
        help='The reassignment: {"version":1,"partitions":[{"topic":"foo","partition":1,'
        '"replicas":[1,2,3],"log_dirs":["any","any","any"]}]} (log_dirs optional).')] = None,
    topics_to_move_json_file: Annotated[Path | None, typer.Option(
        "--topics-to-move-json-file", metavar="FILE",
        help='The topics to move with --generate: {"topics":[{"topic":"foo"}],"version":1}.'
    )] = None,
    broker_list: Annotated[str | None, typer.Option(
        "--broker-list", metavar="BROKERLIST",
        help='The brokers to move the partitions to, as "0,1,2" (with --generate).')] = None,
    disable_rack_aware: Annotated[bool, typer.Option(
        "--disable-rack-aware", help="Disable rack aware replica assignment.")] = False,
    throttle: Annotated[int | None, typer.Option(
        "--throttle", metavar="BYTES/S",
        help="Throttle the movement of partitions between brokers to this rate; resubmit "
        "with --additional to change it.")] = None,
    replica_alter_log_dirs_throttle: Annotated[int | None, typer.Option(
        "--replica-alter-log-dirs-throttle", metavar="BYTES/S",
        help="Throttle moves between log directories of a broker to this rate.")] = None,
    timeout: Annotated[int | None, typer.Option(
        "--timeout", metavar="MS",
        help="The maximum time in ms to wait for log directory replica assignment to begin."
    )] = None,
    additional: Annotated[bool, typer.Option(
        "--additional", help="Execute this reassignment in addition to any ongoing ones (or "
        "change the throttle of an ongoing one).")] = False,
    preserve_throttles: Annotated[bool, typer.Option(
        "--preserve-throttles", help="Do not modify broker or topic throttles.")] = False,
    disallow_replication_factor_change: Annotated[bool, typer.Option(
        "--disallow-replication-factor-change",
        help="Refuse a reassignment that changes a partition's replication factor.")] = False,
) -> None:
    """Move partitions between brokers (kafka-reassign-partitions.sh)."""
    from pykraft.tools import reassign_tool as tool
    from pykraft.tools.admin_client import admin_settings
    from pykraft.tools.broker_clients import BrokerClients
    from pykraft.tools.reassign_plan import ReassignError, TerseError

    given = {"reassignment-json-file": reassignment_json_file is not None,
             "topics-to-move-json-file": topics_to_move_json_file is not None,
             "broker-list": broker_list is not None, "disable-rack-aware": disable_rack_aware,
             "throttle": throttle is not None,
             "replica-alter-log-dirs-throttle": replica_alter_log_dirs_throttle is not None,
             "timeout": timeout is not None, "additional": additional,
             "preserve-throttles": preserve_throttles,
             "disallow-replication-factor-change": disallow_replication_factor_change}
    chosen = [a for a, on in zip(_ACTIONS, (generate, execute, verify, cancel, list_),
                                 strict=True) if on]
    action = _check_usage(chosen, given, bootstrap_server)

    timeout_ms = TIMEOUT_MS_DEFAULT if timeout is None else timeout

    def read(path: Path | None) -> str:
        assert path is not None
        return path.read_text(encoding="utf-8")

    runs: dict[str, Callable[[BrokerClients], Awaitable[str]]] = {
        "list": tool.list_reassignments,
        "verify": lambda c: tool.verify(c, read(reassignment_json_file),
                                        preserve_throttles=preserve_throttles),
        "cancel": lambda c: tool.cancel(c, read(reassignment_json_file),
                                        preserve_throttles=preserve_throttles,
                                        timeout_ms=timeout_ms),
        "generate": lambda c: tool.generate(c, read(topics_to_move_json_file),
                                            broker_list or "", rack_aware=not disable_rack_aware),
        "execute": lambda c: tool.execute(
            c, read(reassignment_json_file), throttle=-1 if throttle is None else throttle,
            log_dir_throttle=-1 if replica_alter_log_dirs_throttle is None
            else replica_alter_log_dirs_throttle, additional=additional,
            allow_replication_factor_change=not disallow_replication_factor_change,
            timeout_ms=timeout_ms),
    }

    async def main() -> str:
        settings = admin_settings(bootstrap_server or "", command_config,
                                  client_id=tool.CLIENT_ID)
        async with BrokerClients(settings) as clients:
            return await runs[action](clients)

    try:
        output = asyncio.run(main())
    except TerseError as exc:
        typer.echo(exc.output + str(exc))
        raise typer.Exit(1) from None
    except ReassignError as exc:
        typer.echo(f"{exc.output}Error: {exc}")
        raise typer.Exit(1) from None
    except (PyKraftError, OSError) as exc:
        typer.echo(f"Error: {exc}")
        raise typer.Exit(1) from None
    typer.echo(output, nl=False)


def _check_usage(chosen: list[str], given: dict[str, bool], bootstrap: str | None) -> str:
    """ReassignPartitionsCommand's ``validateAndParseArgs``: one action, a bootstrap server,
    the action's required options and no option it does not take (stderr, exit 1)."""
    def refuse(message: str) -> typer.Exit:
        typer.echo(message, err=True)
        return typer.Exit(1)

    if len(chosen) != 1:
        raise refuse("Command must include exactly one action: "
                     + ", ".join(f"--{a}" for a in _ACTIONS))
    action = chosen[0]
    if bootstrap is None:
        raise refuse("Please specify either --bootstrap-server or --bootstrap-controller")
    missing = [o for o in _REQUIRED[action] if not given[o]]
    if missing:
        raise refuse(f"Missing required argument \"[{missing[0]}]\"")
    extra = next((o for o, on in given.items() if on and o not in _PERMITTED[action]), None)
    if extra is not None:
        raise refuse(f'Option "[{extra}]" can\'t be used with action "[{action}]"')
    return action
