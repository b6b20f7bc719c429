"""``pykraft cluster up|down``: a local controller quorum with a live status table."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer

from pykraft.cli.errors import fail
from pykraft.cli.kafka_options import (
    KafkaBrokersOption,
    KafkaControllersOption,
    KafkaHomeOption,
)
from pykraft.cli.server import parse_overrides
from pykraft.errors import PyKraftError

if TYPE_CHECKING:  # loaded by the commands: the cluster tool imports the whole runtime
    from rich.table import Table

    from pykraft.tools.kafka_runtime import KafkaRuntime
    from pykraft.tools.local_cluster import LocalCluster

cluster_app = typer.Typer(help="Run a local KRaft controller quorum.", no_args_is_help=True)

DirOption = Annotated[Path, typer.Option("--dir", help="Cluster directory.")]
_REFRESH_S = 1.0


def _status_table(cluster: LocalCluster) -> Table:
    from rich.table import Table

    from pykraft.tools.quorum_tool import describe_quorum, parse_bootstrap

    table = Table(title=f"pykraft cluster {cluster.cluster_id} ({cluster.base})")
    for column in ("node", "process", "role", "log end offset", "lag", "last fetch"):
        table.add_column(column)
    try:
        info = asyncio.run(describe_quorum(*parse_bootstrap(cluster.bootstrap_controllers),
                                           timeout_s=1.0, security=cluster.security()))
    except PyKraftError as exc:
        table.caption = f"no leader yet ({exc})"
        info = None
    now = time.time_ns() // 1_000_000
    replicas = {r.replica_id: r for r in info.voters} if info is not None else {}
    leader_end = info.leader.log_end_offset if info is not None and info.leader else 0
    for node_id in sorted(cluster.nodes):
        alive = "running" if cluster.is_running(node_id) else "stopped"
        replica = replicas.get(node_id)
        if info is not None and replica is None:
            replica = next((r for r in info.observers if r.replica_id == node_id), None)
        if replica is None or info is None:
            table.add_row(str(node_id), alive, "?", "?", "?", "?")
            continue
        role = ("leader" if node_id == info.leader_id else "follower"
                if node_id in {v.replica_id for v in info.voters} else "observer (broker)")
        fetched = f"{now - replica.last_fetch_ms} ms ago" if replica.last_fetch_ms >= 0 else "-"
        table.add_row(str(node_id), alive, role, str(replica.log_end_offset),
                      str(leader_end - replica.log_end_offset), fetched)
    if info is not None:
        table.caption = (f"leader {info.leader_id}, epoch {info.leader_epoch}, high watermark "
                         f"{info.high_watermark}. Ctrl-C stops the cluster.")
    return table


@cluster_app.command("up")
def up(
    controllers: Annotated[int, typer.Option(help="Number of controllers (voters).")] = 3,
    brokers: Annotated[int, typer.Option(help="Number of brokers (ids from 1000).")] = 0,
    directory: DirOption = Path("data/cluster"),
    detach: Annotated[
        bool, typer.Option("--detach", help="Start in the background; stop with `down`.")
    ] = False,
    override: Annotated[
        list[str] | None,
        typer.Option("--override", help="key=value added to every node's server.properties."),
    ] = None,
    dynamic: Annotated[
        bool, typer.Option("--dynamic", help="A dynamic quorum (KIP-853): controller 1 "
                                             "standalone, the others added as voters.")
    ] = False,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Delete the stopped cluster in --dir (its data "
                                           "too) and make a new one.")
    ] = False,
    secure: Annotated[
        bool, typer.Option("--secure", help="Every listener SASL_SSL (a CA and node "
                                            "certificates in --dir, SCRAM-SHA-512 user admin "
                                            "in <dir>/client.properties) with ACLs.")
    ] = False,
    kafka_brokers: KafkaBrokersOption = 0,
    kafka_controllers: KafkaControllersOption = 0,
    kafka_home: KafkaHomeOption = None,
) -> None:
    """Start the quorum on 127.0.0.1 and show its status until Ctrl-C.

    A new --dir is formatted first; a stopped cluster there restarts on its data. With
    --kafka-brokers or --kafka-controllers, Apache Kafka's own nodes join it (a mixed
    cluster, formatted at metadata.version 3.9-IV0, which both kinds support)."""
    from rich.console import Console
    from rich.live import Live

    from pykraft.tools.kafka_runtime import KafkaRuntime
    from pykraft.tools.local_cluster import STATE_FILE

    restarted = (directory / STATE_FILE).exists() and not fresh
    try:
        properties = parse_overrides(override or [])
        kafka = (KafkaRuntime.locate(kafka_home) if kafka_brokers or kafka_controllers
                 else None)
        cluster = _cluster_to_start(directory, controllers, properties, brokers,
                                    dynamic=dynamic, fresh=fresh, secure=secure,
                                    kafka=_KafkaNodes(kafka_controllers, kafka_brokers, kafka))
    except (PyKraftError, OSError) as exc:
        raise fail(str(exc)) from None
    try:
        cluster.start_all()
        for line in cluster.add_voters() if dynamic else []:
            typer.echo(line)
        # a broker opens its client listener once the controller unfences it: wait, so the
        # producer or kcat a user runs next finds it
        cluster.wait_listening(cluster.brokers)
    except (PyKraftError, OSError) as exc:
        cluster.stop_all()  # no half-started cluster left behind
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        _stop(cluster)
        raise typer.Exit(130) from None
    kafka_text = (f" (Apache Kafka: {kafka_controllers} controllers and {kafka_brokers} "
                  "brokers)" if kafka_brokers or kafka_controllers else "")
    typer.echo(f"{'Restarted' if restarted else 'Started'} {controllers} controllers and "
               f"{brokers} brokers{kafka_text} of cluster {cluster.cluster_id}; "
               "bootstrap controllers "
               f"{cluster.bootstrap_controllers}"
               + (f"; bootstrap servers {cluster.bootstrap_servers}"
                  if cluster.brokers else "")
               + f"; logs in {directory}/node-*/server.log")
    if secure:
        typer.echo("\n".join(cluster.security_files.usage_lines(
            cluster.bootstrap_servers or "<no broker>", cluster.bootstrap_controllers)))
    if detach:
        return
    console = Console()
    try:
        with Live(_status_table(cluster), console=console, refresh_per_second=2) as live:
            while any(cluster.is_running(n) for n in cluster.nodes):
                time.sleep(_REFRESH_S)
                live.update(_status_table(cluster))
    except KeyboardInterrupt:
        pass
    _stop(cluster)


def _stop(cluster: LocalCluster) -> None:
    """Stop every node after Ctrl-C; a second Ctrl-C must not abandon them half-stopped
    (the stop is bounded anyway)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    codes = cluster.stop_all()
    typer.echo(f"Stopped: {', '.join(f'node {n} exit {c}' for n, c in codes.items())}. "
               f"Its data stays in {cluster.base}: `pykraft cluster up` restarts it.")


class _KafkaNodes(NamedTuple):
    """The Apache Kafka nodes asked for, and the Kafka that runs them."""

    controllers: int
    brokers: int
    runtime: KafkaRuntime | None


def _cluster_to_start(directory: Path, controllers: int, properties: dict[str, str],
                      brokers: int, *, dynamic: bool, fresh: bool, secure: bool,
                      kafka: _KafkaNodes) -> LocalCluster:
    """A new cluster, or the stopped one already in ``directory``."""
    from pykraft.tools.local_cluster import STATE_FILE, ClusterError, LocalCluster

    if fresh and (directory / STATE_FILE).exists():
        existing = LocalCluster.load(directory)
        if existing.running():
            raise ClusterError(f"the cluster in {directory} is running; stop it with "
                               f"`pykraft cluster down --dir {directory}` first")
        existing.delete()
    if not (directory / STATE_FILE).exists():
        return LocalCluster.create(directory, controllers, properties, brokers,
                                   dynamic=dynamic, secure=secure,
                                   kafka_controllers=kafka.controllers,
                                   kafka_brokers=kafka.brokers, kafka=kafka.runtime)
    return LocalCluster.reopen(directory, controllers, properties, brokers, dynamic=dynamic,
                               secure=secure, kafka_controllers=kafka.controllers,
                               kafka_brokers=kafka.brokers, kafka=kafka.runtime)


@cluster_app.command("down")
def down(directory: DirOption = Path("data/cluster")) -> None:
    """Stop the cluster's processes; its data stays.

    SIGTERM to every node, a bounded wait, then SIGKILL."""
    from pykraft.tools.local_cluster import ClusterError, LocalCluster

    try:
        cluster = LocalCluster.load(directory)
    except ClusterError as exc:
        raise fail(str(exc)) from None
    cluster.stop_all()
    typer.echo(f"Stopped the cluster in {directory}; `pykraft cluster up` restarts it, "
               "`pykraft cluster delete` removes it.")


@cluster_app.command("delete")
def delete(directory: DirOption = Path("data/cluster")) -> None:
    """Stop the cluster if it runs and remove its files, data included."""
    from pykraft.tools.local_cluster import ClusterError, LocalCluster

    try:
        cluster = LocalCluster.load(directory)
    except ClusterError as exc:
        raise fail(str(exc)) from None
    cluster.delete()
    typer.echo(f"Deleted the cluster in {directory}")
