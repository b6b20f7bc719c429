"""Entry point of the ``pykraft`` console script; each tool lives in its own module."""

from __future__ import annotations

from typing import Annotated

import typer

from pykraft.cli.acls import acls
from pykraft.cli.analyze import analyze
from pykraft.cli.chaos import chaos_app
from pykraft.cli.cluster import cluster_app
from pykraft.cli.configs import configs
from pykraft.cli.console_consumer import console_consumer
from pykraft.cli.console_producer import console_producer
from pykraft.cli.consumer_groups import consumer_groups
from pykraft.cli.delegation_tokens import delegation_tokens
from pykraft.cli.delete_records import delete_records
from pykraft.cli.dump_log import dump_log
from pykraft.cli.features import features_app
from pykraft.cli.get_offsets import get_offsets
from pykraft.cli.leader_election import leader_election
from pykraft.cli.log_dirs import log_dirs
from pykraft.cli.metadata_shell import metadata_shell
from pykraft.cli.quorum import quorum_app
from pykraft.cli.reassign_partitions import reassign_partitions
from pykraft.cli.server import server
from pykraft.cli.sim import sim_app
from pykraft.cli.storage import storage_app
from pykraft.cli.topics import topics
from pykraft.cli.transactions import transactions_app

app = typer.Typer(
    name="pykraft",
    help="Apache Kafka's KRaft metadata quorum in Python.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Click's plain help (every sub-app inherits it): Typer's rich help shows a ``<bool>``
    # value placeholder beside flags, which take no value.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    """Kafka's tools' ``--version``: the version alone on stdout, then exit."""
    if value:
        from pykraft import __version__

        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Display pykraft's version and exit.")] = False,
) -> None:
    """Apache Kafka's KRaft metadata quorum in Python: tools, servers and simulator."""


@app.command("version")
def version() -> None:
    """Print pykraft's version."""
    from pykraft import __version__

    typer.echo(__version__)


app.command("dump-log")(dump_log)
app.command("server")(server)
app.command("metadata-shell")(metadata_shell)
app.command("analyze")(analyze)
app.command("topics")(topics)
app.command("console-producer")(console_producer)
app.command("console-consumer")(console_consumer)
app.command("get-offsets")(get_offsets)
app.command("log-dirs")(log_dirs)
app.command("delete-records")(delete_records)
app.command("leader-election")(leader_election)
app.command("reassign-partitions")(reassign_partitions)
app.command("consumer-groups")(consumer_groups)
app.command("acls")(acls)
app.command("configs")(configs)
app.command("delegation-tokens")(delegation_tokens)
app.add_typer(storage_app, name="storage")
app.add_typer(sim_app, name="sim")
app.add_typer(quorum_app, name="metadata-quorum")
app.add_typer(features_app, name="features")
app.add_typer(cluster_app, name="cluster")
app.add_typer(chaos_app, name="chaos")
app.add_typer(transactions_app, name="transactions")
