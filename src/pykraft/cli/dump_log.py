"""``pykraft dump-log``: Kafka's ``kafka-dump-log.sh`` for segments, indexes and snapshots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pykraft.errors import PyKraftError
from pykraft.storage.offset_index import INDEX_SUFFIX
from pykraft.storage.segment import TXN_INDEX_SUFFIX
from pykraft.storage.time_index import TIME_INDEX_SUFFIX

if TYPE_CHECKING:  # the decoders load with the command (record and schema modules)
    from pykraft.tools.dump_index_tool import IndexOptions, IndexReport

#: Kafka's DumpLogSegments ``--max-message-size`` default (``dump_index_tool``'s too).
_MAX_MESSAGE_SIZE = 5 * 1024 * 1024


def dump_log(
    files: Annotated[str, typer.Option(
        "--files", help="REQUIRED: The comma separated list of data and index log files to be "
        "dumped (.log, .checkpoint, .index, .timeindex, producer .snapshot).")],
    cluster_metadata_decoder: Annotated[bool, typer.Option(
        "--cluster-metadata-decoder",
        help="If set, log data will be parsed as cluster metadata records.")] = False,
    offsets_decoder: Annotated[bool, typer.Option(
        "--offsets-decoder", help="If set, log data will be parsed as offset data from the "
        "__consumer_offsets topic.")] = False,
    transaction_log_decoder: Annotated[bool, typer.Option(
        "--transaction-log-decoder", help="If set, log data will be parsed as transaction "
        "metadata from the __transaction_state topic.")] = False,
    print_data_log: Annotated[bool, typer.Option(
        "--print-data-log", help="If set, printing the messages content when dumping data "
        "logs. Automatically set if any decoder option is specified.")] = False,
    deep_iteration: Annotated[bool, typer.Option(
        "--deep-iteration", help="If set, uses deep instead of shallow iteration. "
        "Automatically set if print-data-log is enabled.")] = False,
    max_bytes: Annotated[int | None, typer.Option(
        "--max-bytes", min=0, help="Limit the amount of total batches read in bytes avoiding "
        "reading the whole .log file(s).")] = None,
    index_sanity_check: Annotated[bool, typer.Option(
        "--index-sanity-check", help="If set, just checks the index sanity without printing "
        "its content. This is the same check that is executed on broker startup to "
        "determine if an index needs rebuilding or not.")] = False,
    verify_index_only: Annotated[bool, typer.Option(
        "--verify-index-only",
        help="If set, just verify the index log without printing its content.")] = False,
    max_message_size: Annotated[int, typer.Option(
        "--max-message-size", min=1, help="Size of largest message.")
    ] = _MAX_MESSAGE_SIZE,
    as_json: Annotated[bool, typer.Option(
        "--json", help="One JSON document with every .log/.checkpoint file, for machines.")
    ] = False,
) -> None:
    """Print the contents of log segments, their indexes, producer state and KRaft snapshots.

    Exits 1 when a file is missing, unknown or damaged; an index that disagrees with its log
    is reported on stderr with exit 0, as Kafka's tool does.
    """
    from pykraft.log.producer_snapshot import SUFFIX as PRODUCER_SNAPSHOT_SUFFIX
    from pykraft.tools.dump_index_tool import IndexOptions, IndexReport
    from pykraft.tools.dump_log_tool import DumpOptions, UnknownFileError, dump_file, format_text

    paths = [Path(p) for p in files.split(",") if p.strip()]
    if not paths:
        raise typer.BadParameter("no files given", param_hint="--files")
    options = DumpOptions(
        cluster_metadata_decoder, print_data_log, deep_iteration, max_bytes, offsets_decoder,
        transaction_log_decoder
    )
    index_options = IndexOptions(index_sanity_check, verify_index_only, max_message_size)
    report = IndexReport()
    failed = False
    documents: list[dict[str, Any]] = []
    for path in paths:
        if not path.is_file():
            typer.echo(f"Error: {path} does not exist or is not a file", err=True)
            failed = True
            continue
        if not as_json:
            typer.echo(f"Dumping {path}")
        try:
            if path.name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX,
                                   PRODUCER_SNAPSHOT_SUFFIX)):
                if as_json:
                    raise UnknownFileError(f"--json covers .log and .checkpoint files, not {path}")
                for line in _side_file(path, index_options, report):
                    typer.echo(line)
                continue
            dump = dump_file(path, options)
        except PyKraftError as exc:  # unknown file, failed sanity check, corrupt snapshot
            typer.echo(str(exc), err=True)
            failed = True
            continue
        failed |= dump.failed
        if dump.non_consecutive:
            report.non_consecutive[str(path.absolute())] = dump.non_consecutive
        if as_json:
            documents.append(dump.to_json())
        else:
            for line in format_text(dump):
                typer.echo(line)
    if as_json:
        typer.echo(json.dumps({"files": documents}, indent=2))
    for line in report.error_lines():
        typer.echo(line, err=True)
    if failed:
        raise typer.Exit(1)


def _side_file(path: Path, options: IndexOptions, report: IndexReport) -> list[str]:
    from pykraft.tools.dump_index_tool import (
        dump_offset_index,
        dump_producer_snapshot,
        dump_time_index,
        dump_txn_index,
    )

    if path.name.endswith(TIME_INDEX_SUFFIX):
        return dump_time_index(path, options, report)
    if path.name.endswith(TXN_INDEX_SUFFIX):
        return dump_txn_index(path)
    if path.name.endswith(INDEX_SUFFIX):
        return dump_offset_index(path, options, report)
    return dump_producer_snapshot(path)
