"""``pykraft analyze``: KRaft metadata logs to Parquet history tables and an HTML report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import PyKraftError

MasterOption = Annotated[str | None, typer.Option(
    help="Spark master: local[*] (default), spark://host:7077, yarn, k8s://...")]
RemoteOption = Annotated[str | None, typer.Option(
    help="Spark Connect server, e.g. sc://host:15002 (overrides --master).")]


def analyze(
    log_dirs: Annotated[list[Path], typer.Argument(
        help="Metadata log dirs: a node's data dir or a whole cluster dir; one cluster each.")],
    out: Annotated[Path, typer.Option("--out", help="Output directory.")],
    master: MasterOption = None,
    remote: RemoteOption = None,
) -> None:
    """Read the metadata logs (__cluster_metadata-0 segments and snapshots, and
    bootstrap.checkpoint; never topic partitions) with Spark, write the tables and
    report.html."""
    try:
        from pyspark.errors import PySparkException

        from pykraft.spark import analytics, report
        from pykraft.spark.session import spark_session
    except ImportError as exc:
        typer.echo(f"Error: {exc}; install the extra: pip install 'pykraft[spark]'", err=True)
        raise typer.Exit(2) from None
    missing = [str(p) for p in log_dirs if not p.exists()]
    if missing:
        typer.echo(f"Error: no such directory: {', '.join(missing)}", err=True)
        raise typer.Exit(2)
    started = time.perf_counter()
    spark = spark_session(master, remote, app_name="pykraft-analyze")
    try:
        inputs = analytics.cluster_inputs([str(p.resolve()) for p in log_dirs])
        tables = analytics.build_tables(analytics.load_records(spark, inputs))
        out.mkdir(parents=True, exist_ok=True)
        analytics.write_tables(tables, out.resolve())
        data = report.collect(tables)
    except (PyKraftError, PySparkException) as exc:
        typer.echo(f"Error: {str(exc).strip().splitlines()[-1]}", err=True)
        raise typer.Exit(1) from None
    finally:
        spark.stop()
    (out / "report.html").write_text(report.render(data), encoding="utf-8")
    for row in sorted(data["summary"], key=lambda r: r["cluster"]):
        typer.echo(f"{row['cluster']}: {row['records']} rows read ({row['errors']} with "
                   f"errors) from the metadata logs of {row['log_dirs']} log dir(s)")
    used, behind = report.replica_notes(data["log_replicas"])
    for line in used:
        typer.echo(line)
    for line in behind:
        typer.echo(f"Warning: {line}", err=True)
    typer.echo(f"Wrote {', '.join(analytics.TABLES)} and report.html to {out} in "
               f"{time.perf_counter() - started:.1f} s")
