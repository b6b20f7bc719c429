"""``pykraft dump-log``: Kafka's ``kafka-dump-log.sh`` for KRaft segments and snapshots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from pykraft.tools.dump_log_tool import DumpOptions, UnknownFileError, dump_file, format_text


def dump_log(
    files: Annotated[
        str, typer.Option("--files", help="Comma-separated .log or .checkpoint files to dump.")
    ],
    cluster_metadata_decoder: Annotated[
        bool,
        typer.Option(
            "--cluster-metadata-decoder", help="Decode records as KRaft metadata records."
        ),
    ] = False,
    print_data_log: Annotated[
        bool, typer.Option("--print-data-log", help="Print record contents.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON document with every file, for machines.")
    ] = False,
) -> None:
    """Print the batches and records of KRaft log segments and snapshot files."""
    paths = [Path(p) for p in files.split(",") if p.strip()]
    if not paths:
        raise typer.BadParameter("no files given", param_hint="--files")
    options = DumpOptions(cluster_metadata_decoder, print_data_log)
    failed = False
    documents = []
    for path in paths:
        if not path.is_file():
            typer.echo(f"Error: {path} does not exist or is not a file", err=True)
            failed = True
            continue
        try:
            dump = dump_file(path, options)
        except UnknownFileError as exc:
            typer.echo(str(exc), err=True)
            failed = True
            continue
        failed |= dump.error is not None or any(
            not b["isvalid"] or "error" in b for b in dump.batches
        )
        if as_json:
            documents.append(dump.to_json())
        else:
            for line in format_text(dump):
                typer.echo(line)
    if as_json:
        typer.echo(json.dumps({"files": documents}, indent=2))
    if failed:
        raise typer.Exit(1)
