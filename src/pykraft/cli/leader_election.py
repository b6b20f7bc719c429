"""``pykraft leader-election``: Kafka's ``kafka-leader-election.sh`` (see
:mod:`pykraft.tools.leader_election_tool`); usage errors and failures print their message
on stderr, as LeaderElectionCommand does."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError


def leader_election(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", metavar="HOST:PORT",
        help="A hostname and port for the broker to connect to, in the form host:port. "
        "Multiple comma separated URLs can be given. REQUIRED.")] = None,
    election_type: Annotated[str | None, typer.Option(
        "--election-type", metavar="ELECTION_TYPE",
        help='Type of election to attempt: "preferred" moves leadership to the preferred '
        'replica if it does not lead; "unclean" elects a leader for a partition that has '
        'none, from outside the ISR if it must. REQUIRED.')] = None,
    all_topic_partitions: Annotated[bool, typer.Option(
        "--all-topic-partitions",
        help="Perform election on all of the eligible topic partitions based on the type of "
        "election. Not allowed if --topic or --path-to-json-file is specified.")] = False,
    topic: Annotated[str | None, typer.Option(
        "--topic", metavar="TOPIC", help="Name of topic for which to perform an election. Not "
        "allowed if --path-to-json-file or --all-topic-partitions is specified.")] = None,
    partition: Annotated[int | None, typer.Option(
        "--partition", metavar="PARTITION",
        help="Partition id for which to perform an election. REQUIRED if --topic is "
        "specified.")] = None,
    path_to_json_file: Annotated[Path | None, typer.Option(
        "--path-to-json-file", metavar="FILE",
        help='The JSON file with the partitions to elect leaders for: {"partitions": '
        '[{"topic": "foo", "partition": 1}]}. Not allowed if --all-topic-partitions or '
        '--topic is specified.')] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="FILE",
        help="Config properties file to pass to the admin client.")] = None,
    admin_config: Annotated[Path | None, typer.Option(
        "--admin.config", metavar="FILE",
        help="(DEPRECATED) Configuration properties files to pass to the admin client. Use "
        "--command-config instead.")] = None,
) -> None:
    """Elect preferred or unclean leaders for partitions (kafka-leader-election.sh)."""
    from pykraft.ids import TopicPartition
    from pykraft.tools import leader_election_tool as tool
    from pykraft.tools.admin_client import AdminClient, admin_settings
    from pykraft.tools.leader_election_tool import ElectionFailedError

    def refuse(message: str) -> typer.Exit:
        typer.echo(message, err=True)
        return typer.Exit(1)

    missing = [name for name, value in (("bootstrap-server", bootstrap_server),
                                        ("election-type", election_type)) if value is None]
    if missing:
        raise refuse(f"Missing required option(s): {', '.join(missing)}")
    chosen = [topic is not None, all_topic_partitions, path_to_json_file is not None]
    if sum(chosen) != 1:
        raise refuse("One and only one of the following options is required: topic, "
                     "all-topic-partitions, path-to-json-file")
    if topic is not None and partition is None:
        raise refuse("Missing required option(s): partition")
    if topic is None and partition is not None:
        raise refuse("Option partition is only allowed if topic is used")

    async def main() -> list[str]:
        kind = tool.election_type(election_type or "")
        partitions = None
        if path_to_json_file is not None:
            partitions = tool.parse_election_json(path_to_json_file.read_text(encoding="utf-8"))
        elif topic is not None and partition is not None:
            partitions = {TopicPartition(topic, partition)}
        settings = admin_settings(bootstrap_server or "", command_config or admin_config)
        async with AdminClient(settings) as admin:
            return await tool.elect_leaders(admin, kind, partitions)

    try:
        lines = asyncio.run(main())
    except ElectionFailedError as exc:
        for line in exc.lines:
            typer.echo(line)
        raise refuse(str(exc)) from None
    except (PyKraftError, OSError) as exc:
        raise refuse(str(exc)) from None
    for line in lines:
        typer.echo(line)
