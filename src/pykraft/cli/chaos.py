"""``pykraft chaos run|check``: fault injection on a local cluster, and the history checker."""

from __future__ import annotations

import json
import signal
import threading
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pykraft.chaos.schedule import BOUNDED, STRESS
from pykraft.cli.errors import fail
from pykraft.cli.kafka_options import (
    KafkaBrokersOption,
    KafkaControllersOption,
    KafkaHomeOption,
)
from pykraft.errors import PyKraftError

if TYPE_CHECKING:  # the run and the checker load with their command (seconds of imports)
    from pykraft.chaos.checker import Figures

#: A replay's fault count when --faults is not given: every recorded fault.
MAX_FAULTS = 1 << 31


class GroupProtocol(StrEnum):
    """The consumer group's protocol: classic (JoinGroup/SyncGroup) or KIP-848's (the
    values of :mod:`pykraft.chaos.group_workload`'s names, which load with the run)."""

    classic = "classic"
    consumer = "consumer"


class Mix(StrEnum):
    """The schedule's mix of faults (see :mod:`pykraft.chaos.schedule`)."""

    bounded = BOUNDED
    stress = STRESS


chaos_app = typer.Typer(help="Fault injection against a local cluster, checked for lost, "
                             "duplicated or reordered messages.", no_args_is_help=True)

_ROWS = (("messages acknowledged", "acknowledged"), ("sends failed", "failed"),
         ("lost", "lost"), ("duplicated", "duplicated"),
         ("resent after an epoch bump (client, allowed)", "resent_after_epoch_bump"),
         ("reordered", "reordered"),
         ("reads past the high watermark", "reads_past_hw"),
         ("divergent replicas", "divergent_replicas"), ("phantom values", "phantom"),
         ("brokers fenced on refused listeners while running", "false_fences"),
         ("brokers fenced on refused listeners when down (fast failover)",
          "fenced_on_refusal"),
         ("records read by consumers", "reads"))
_GROUP_ROWS = (("group: acknowledged messages consumed", "consumed"),
               ("group: records read", "reads"),
               ("group: read more than once (at-least-once, allowed)", "duplicates"),
               ("group: missed (below its committed offset, unread)", "missed"),
               ("group: committed offsets lost", "commits_lost"),
               ("group: reads of uncommitted values", "reads_uncommitted"),
               ("group: commits acknowledged", "commits_acked"),
               ("group: commits failed", "commits_failed"),
               ("group: commits of an older offset (allowed)", "commits_regressed"),
               ("group: partition assignments", "rebalances"),
               ("group: left unconsumed after the drain", "lag"))


_TXN_ROWS = (("transactions: committed", "committed"), ("transactions: aborted", "aborted"),
             ("transactions: outcome unknown (either is right)", "unknown"),
             ("transactions: unknown, found committed", "unknown_visible"),
             ("transactions: read_committed reads", "reads"),
             ("transactions: aborted values read", "aborted_reads"),
             ("transactions: partly visible", "partly_visible"),
             ("transactions: commits lost", "commits_lost"),
             ("transactions: values duplicated", "duplicated"),
             ("transactions: phantom values", "phantom"),
             ("exactly-once copies made", "copied"),
             ("exactly-once copier: client generations", "copy_generations"),
             ("exactly-once copier: client calls hung past their timeout", "copier_hangs"),
             ("exactly-once copies missing", "copies_missing"),
             ("exactly-once copies duplicated", "copies_duplicated"),
             ("exactly-once copies beyond the committed offset", "copies_extra"),
             ("exactly-once copies reordered (partitions)", "copies_reordered"))


def _report(figures: Figures, *, as_json: bool, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    if as_json:
        typer.echo(json.dumps(figures.as_dict(), indent=2))
    else:
        console = Console()
        table = Table(title=title)
        table.add_column("figure")
        table.add_column("value", justify="right")
        for label, name in _ROWS:
            table.add_row(label, str(getattr(figures, name)))
        if figures.group.final_offsets is not None:
            for label, name in _GROUP_ROWS:
                table.add_row(label, str(getattr(figures.group, name)))
        if figures.txn.committed + figures.txn.aborted + figures.txn.unknown:
            for label, name in _TXN_ROWS:
                table.add_row(label, str(getattr(figures.txn, name)))
        table.add_row("longest produce gap", f"{figures.longest_produce_gap_ms} ms")
        for kind, count in sorted(figures.faults.items()):
            table.add_row(f"faults: {kind}", str(count))
        table.add_row("faults skipped (no target then)", str(figures.faults_skipped))
        console.print(table)
        for example in figures.examples:
            console.print(f"[red]{example}[/red]", highlight=False)
        for gap in figures.gaps:
            writable = ", ".join(f"p{p} {ms / 1000:.1f} s" for p, ms in gap.writable_ms.items())
            console.print(f"produce gap {gap.start / 1000:.1f}-{gap.end / 1000:.1f} s: "
                          f"{len(gap.faults)} faults in force"
                          + (f"; writable (live leader and ISR, ISR >= min.insync): {writable}"
                             if writable else "") + " (--json for the details)",
                          highlight=False)
        verdict = ("[green]no anomaly[/green]" if not figures.anomalies
                   else f"[red]{figures.anomalies} anomalies[/red]")
        console.print(verdict)
    if figures.anomalies:
        raise typer.Exit(1)


@chaos_app.command("run")
def run_command(
    directory: Annotated[Path, typer.Option("--dir", help="Run directory (cluster and "
                                                          "history.jsonl); must be new.")],
    seed: Annotated[int, typer.Option(help="Seed of the fault schedule.")] = 0,
    faults: Annotated[int | None, typer.Option(
        min=0, help="Number of faults, one at a time [default: 10; a replay: all]."),
    ] = None,
    brokers: Annotated[int, typer.Option(min=0, help="Brokers (ids from 1000).")] = 3,
    controllers: Annotated[int, typer.Option(min=0, help="Controllers (voters).")] = 3,
    kafka_brokers: KafkaBrokersOption = 0,
    kafka_controllers: KafkaControllersOption = 0,
    kafka_home: KafkaHomeOption = None,
    partitions: Annotated[int, typer.Option(min=1, help="Partitions of the topic.")] = 3,
    replication_factor: Annotated[int, typer.Option(min=1, help="Its replication factor.")] = 3,
    min_insync_replicas: Annotated[int, typer.Option(min=1, help="Its min.insync.replicas.")]
    = 2,
    producers: Annotated[int, typer.Option(min=1, help="Idempotent producers.")] = 2,
    consumers: Annotated[int, typer.Option(min=0, help="Consumers (assigned, no group).")] = 1,
    group_consumers: Annotated[int, typer.Option(
        min=0, help="Members of one consumer group (0: no group).")] = 3,
    group_protocol: Annotated[GroupProtocol, typer.Option(
        help="The group's protocol: classic, or KIP-848's consumer.")] = GroupProtocol.classic,
    txn_producers: Annotated[int, typer.Option(
        min=0, help="Transactional producers (commits and aborts) on a topic of their own, "
                    "read by a read_committed consumer, and an exactly-once copier of the "
                    "topic (consume-transform-produce) (0: none of them).")] = 1,
    rate: Annotated[float, typer.Option(min=1, help="Messages per second per producer.")]
    = 100.0,
    short: Annotated[bool, typer.Option("--short", help="Short waits and faults (0.2-0.8 s "
                                                        "apart, held 0.3-1.5 s).")] = False,
    safe: Annotated[bool, typer.Option("--safe", help="Only faults on brokers that lead no "
                                                      "partition of the topic.")] = False,
    mix: Annotated[Mix, typer.Option(
        help="bounded: broker kills, pauses and restarts, link cuts, one active-controller "
             "kill per 50 faults, each fault once the cluster is whole again; stress: every "
             "kind alike on any node (a fifth kill the active controller), no waiting, so "
             "faults can outpace recovery.")] = Mix.bounded,
    replay: Annotated[Path | None, typer.Option(
        help="Carry out the faults a run's history.jsonl recorded, on the nodes they hit "
             "then, at the times they began, on a cluster and workload like that run's "
             "(those options are taken from it).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Start a cluster, write to and read from an RF=3 topic (assigned consumers and a
    consumer group) under a seeded schedule of faults (kill -9, SIGSTOP, restarts, network
    cuts between two nodes, the active controller killed), let the group drain, then check
    the history; exit code 1 on any anomaly. SIGTERM ends the faults early: the run then
    heals, reads back and checks what it did."""
    from pykraft.chaos.run import RunOptions, run

    if faults is None:
        faults = 10 if replay is None else MAX_FAULTS
    options = RunOptions(directory=directory, seed=seed, faults=faults, brokers=brokers,
                         controllers=controllers, partitions=partitions,
                         replication_factor=replication_factor,
                         min_insync_replicas=min_insync_replicas, producers=producers,
                         consumers=consumers, group_consumers=group_consumers,
                         group_protocol=group_protocol.value, txn_producers=txn_producers,
                         rate_per_s=rate, short=short,
                         safe=safe, mix=mix.value, replay=replay,
                         kafka_brokers=kafka_brokers, kafka_controllers=kafka_controllers,
                         kafka_home=kafka_home)
    enough = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: enough.set())
    try:
        result = run(options, progress=lambda line: typer.echo(line, err=True), enough=enough)
    except PyKraftError as exc:
        raise fail(str(exc)) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    what = f"replay of {replay}" if replay else f"seed {seed}: {faults} faults"
    _report(result.figures, as_json=as_json, title=f"chaos {what} ({result.history})")


@chaos_app.command("check")
def check_command(
    history: Annotated[Path, typer.Argument(help="A run's history.jsonl.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Check a history file again; exit code 1 on any anomaly."""
    from pykraft.chaos.checker import check
    from pykraft.chaos.recorder import read_history

    try:
        events = read_history(history)
    except (OSError, PyKraftError) as exc:
        raise fail(str(exc)) from None
    _report(check(events), as_json=as_json, title=f"chaos history {history}")
