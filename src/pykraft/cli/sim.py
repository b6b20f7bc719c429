"""``pykraft sim``: replay one simulated run with a trace, or sweep many seeds in parallel."""

from __future__ import annotations

import dataclasses
import json
import time
from collections import defaultdict
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:  # the simulator loads with its commands, not with every CLI call
    from rich.console import Console

    from pykraft.sim.runner import RunResult

sim_app = typer.Typer(help="Deterministic simulation of a KRaft quorum and of partition "
                      "replication.", no_args_is_help=True)


def _scenario_names(scenario: str) -> list[str]:
    from pykraft.sim.runner import scenario_names

    names = scenario_names()
    if scenario == "all":
        return names
    if scenario not in names:
        raise typer.BadParameter(
            f"unknown scenario {scenario!r}; choose all or one of: {', '.join(names)}"
        )
    return [scenario]


def _seed_range(text: str) -> range:
    start, sep, end = text.partition(":")
    try:
        return range(int(start), int(end)) if sep else range(int(start), int(start) + 1)
    except ValueError:
        raise typer.BadParameter(
            f"seeds must look like A:B (end exclusive), got {text!r}"
        ) from None


@sim_app.command("run")
def run(
    scenario: Annotated[str, typer.Option(help="Scenario name.")],
    seed: Annotated[int, typer.Option(help="Seed of the run.")],
    trace: Annotated[bool, typer.Option("--trace", help="Print every event.")] = False,
) -> None:
    """Replay one scenario with one seed; exit code 1 if an invariant is violated."""
    from pykraft.sim.runner import run_scenario

    (name,) = _scenario_names(scenario)
    result = run_scenario(name, seed, trace=typer.echo if trace else None)
    typer.echo(
        f"{name} seed {seed}: {result.events} events, {result.elections} elections, "
        f"{result.simulated_ms / 1000:.1f} simulated s in {result.wall_s:.2f} wall s"
    )
    if result.violation:
        typer.echo(f"VIOLATION {result.violation}", err=True)
        raise typer.Exit(1)


@sim_app.command("sweep")
def sweep_command(
    scenario: Annotated[str, typer.Option(help="Scenario name or 'all'.")] = "all",
    seeds: Annotated[str, typer.Option(help="Seed range A:B (end exclusive).")] = "0:100",
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
    spark: Annotated[bool, typer.Option("--spark", help="Fan out over Spark executors.")] = False,
    master: Annotated[str | None, typer.Option(help="With --spark: Spark master URL.")] = None,
    remote: Annotated[str | None, typer.Option(help="With --spark: sc:// Connect URL.")] = None,
    out: Annotated[str, typer.Option(help="With --spark: Parquet output path.")] = "sweep.parquet",
    json_out: Annotated[str | None, typer.Option(
        "--json", help="Also write every run's outcome (no wall time) as JSON lines, in "
        "task order, to diff sweeps of two commits.")] = None,
) -> None:
    """Run every (scenario, seed) pair and print a summary with percentiles of the simulated
    election and recovery times; exit code 1 if any run violates an invariant."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from pykraft.sim.runner import sweep

    names = _scenario_names(scenario)
    if spark or master or remote:
        _spark_sweep(names, _seed_range(seeds), master, remote, out)
        return
    tasks = [(name, seed) for name in names for seed in _seed_range(seeds)]
    console = Console()
    results: list[RunResult] = []
    started = time.perf_counter()
    columns = (*Progress.get_default_columns()[:1], BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        bar = progress.add_task("simulating", total=len(tasks))
        for result in sweep(tasks, workers):
            results.append(result)
            progress.advance(bar)
            if result.violation:
                console.print(f"[red]VIOLATION[/red] {result.scenario} seed {result.seed}: "
                              f"{result.violation}\n  replay: {result.replay_command}")
    wall = time.perf_counter() - started
    _print_summary(console, results, wall)
    if json_out is not None:
        _write_outcomes(json_out, tasks, results)
    if any(r.violation for r in results):
        raise typer.Exit(1)


def _write_outcomes(path: str, tasks: list[tuple[str, int]], results: list[RunResult]) -> None:
    """Workers finish out of order; task order makes two sweeps' files diffable line by line."""
    order = {task: index for index, task in enumerate(tasks)}
    with open(path, "w", encoding="utf-8") as out:
        for result in sorted(results, key=lambda r: order[(r.scenario, r.seed)]):
            row = dataclasses.asdict(result)
            del row["wall_s"]
            out.write(json.dumps(row, sort_keys=True) + "\n")


def _print_summary(console: Console, results: list[RunResult], wall: float) -> None:
    from rich.table import Table

    from pykraft.sim.sweep_stats import timing_percentiles

    by_name: dict[str, list[RunResult]] = defaultdict(list)
    for result in results:
        by_name[result.scenario].append(result)
    table = Table(title="simulation sweep")
    table.add_column("scenario", no_wrap=True)
    for column in ("runs", "violations", "events/run", "elections", "commits/run", "sim s",
                   "wall s"):
        table.add_column(column, justify="right")
    for name, runs in by_name.items():
        table.add_row(
            name, str(len(runs)), str(sum(1 for r in runs if r.violation)),
            f"{sum(r.events for r in runs) / len(runs):.0f}",
            str(sum(r.elections for r in runs)),
            f"{sum(r.commit_count for r in runs) / len(runs):.0f}",
            f"{sum(r.simulated_ms for r in runs) / 1000:.0f}",
            f"{sum(r.wall_s for r in runs):.1f}",
        )
    console.print(table)
    simulated = sum(r.simulated_ms for r in results) / 1000
    console.print(
        f"{len(results)} runs, {sum(1 for r in results if r.violation)} violations, "
        f"{simulated:.0f} simulated s in {wall:.1f} wall s: "
        f"{simulated / wall if wall else 0:.0f} simulated s per wall s"
    )
    timings = Table(title="simulated ms: first leader | recovery after the first fault")
    for column in ("scenario", "runs", "p50", "p90", "p99", "max",
                   "runs", "p50", "p90", "p99", "max"):
        timings.add_column(column, justify="left" if column == "scenario" else "right")
    for cells in timing_percentiles(results):
        timings.add_row(*cells)
    console.print(timings)


def _spark_sweep(names: list[str], seeds: range, master: str | None, remote: str | None,
                 out: str) -> None:
    """``sweep --spark``: the same runs on Spark executors, one Parquet row per run, then
    the local sweep's summary."""
    from rich.console import Console

    from pykraft.spark.session import spark_session
    from pykraft.spark.sweep import run_result, spark_sweep

    console = Console()
    started = time.perf_counter()
    session = spark_session(master, remote, app_name="pykraft-sim-sweep")
    try:
        rows = spark_sweep(session, names, seeds, out)
    finally:
        session.stop()
    wall = time.perf_counter() - started
    for row in rows:
        if row["outcome"] != "ok":
            console.print(f"[red]{row['outcome'].upper()}[/red] {row['scenario']} seed "
                          f"{row['seed']}: {row['violation']}")
    _print_summary(console, [run_result(row) for row in rows], wall)
    console.print(f"{len(rows)} rows written to {out}")
    if any(row["outcome"] != "ok" for row in rows):
        raise typer.Exit(1)
