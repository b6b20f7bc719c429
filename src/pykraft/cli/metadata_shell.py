"""``pykraft metadata-shell``: Kafka's ``kafka-metadata-shell.sh`` over a snapshot or a
metadata log directory, interactive or running one command."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pykraft.errors import CorruptLogError, PyKraftError
from pykraft.storage.file_error import StateFileError

if TYPE_CHECKING:  # the image and the shell load with the command (the schema modules)
    from pykraft.image import MetadataImage
    from pykraft.shell import DirNode, MetadataShell, Output
    from pykraft.shell.kraft import KRaftRecords
    from pykraft.storage.log_verify import TornTail


def _verify(segments: list[Path]) -> TornTail | None:
    """Segments checked as the server's reader checks them, so damage is reported with its
    file and byte position; a torn end of the log (which the server would truncate) is left
    out of what is loaded, with a warning."""
    from pykraft.storage.log_verify import verify_segments

    tail = verify_segments(segments)
    if tail is not None:
        typer.echo(f"Warning: ignoring {tail.size} invalid bytes at the end of {tail.path} "
                   f"from byte position {tail.position} ({tail.reason}): a write cut short "
                   "or still under way; a node truncates them when it starts", err=True)
    return tail


def _load(snapshot: Path | None, directory: Path | None) -> DirNode:
    """The shell's tree and where it came from."""
    from pykraft.image import load_log_directory, load_segments, load_snapshot
    from pykraft.shell.kraft import read_kraft_records
    from pykraft.storage.bootstrap import METADATA_LOG_DIR_NAME
    from pykraft.storage.segment import LOG_SUFFIX
    from pykraft.storage.snapshot_files import list_snapshots

    if directory is not None and snapshot is None:
        partition = directory / METADATA_LOG_DIR_NAME
        partition = partition if partition.is_dir() else directory
        segments = sorted(partition.glob("*" + LOG_SUFFIX))
        tail = _verify(segments)
        image = load_log_directory(partition, tail)
        snapshots = [sid for sid in list_snapshots(partition) if sid.end_offset > 0]
        newest = snapshots[-1] if snapshots else None
        kraft = read_kraft_records(None if newest is None else partition / newest.file_name,
                                   segments, from_offset=0 if newest is None else
                                   newest.end_offset, tail=tail)
        return _tree(image, kraft, str(directory))
    if snapshot is None or directory is not None:
        raise typer.BadParameter("give exactly one of --snapshot and --directory")
    if not snapshot.is_file():
        raise typer.BadParameter(f"{snapshot} is not a file", param_hint="--snapshot")
    if snapshot.suffix == LOG_SUFFIX:
        tail = _verify([snapshot])
        return _tree(load_segments([snapshot], tail=tail),
                     read_kraft_records(None, [snapshot], tail=tail), str(snapshot))
    return _tree(load_snapshot(snapshot), read_kraft_records(snapshot), str(snapshot))


def _tree(image: MetadataImage, kraft: KRaftRecords, source: str) -> DirNode:
    """Kafka's ``/image`` and ``/local``, plus ``/raft`` for the KRaft control records."""
    from pykraft.shell import DirNode, image_tree
    from pykraft.shell.kraft import kraft_dir

    root = image_tree(image, source=source)
    return DirNode({**root.children, "raft": kraft_dir(kraft)})


def _print(out: Output) -> None:
    for text in out.lines:
        typer.echo(text)
    for text in out.errors:
        typer.echo(text, err=True)


def _interactive(shell: MetadataShell) -> None:
    import readline  # noqa: F401  (line editing and history for input())

    typer.echo("[ pykraft metadata shell ]  Type 'help' for the commands, 'exit' to leave.")
    while True:
        try:
            line = input(f"{shell.pwd()} >> ")
        except EOFError:
            typer.echo()
            return
        out = shell.execute(line)
        _print(out)
        if out.exit:
            return


def metadata_shell(
    command: Annotated[
        list[str] | None,
        typer.Argument(help="A command to run instead of the interactive shell (after --)."),
    ] = None,
    snapshot: Annotated[
        Path | None,
        typer.Option("--snapshot", help="A snapshot (.checkpoint, bootstrap.checkpoint) or "
                     "log segment (.log) to load."),
    ] = None,
    directory: Annotated[
        Path | None,
        typer.Option("--directory", help="A metadata log directory to replay: its newest "
                     "snapshot, then its segments."),
    ] = None,
) -> None:
    """Browse KRaft metadata as Kafka's metadata shell tree (/image, /local), plus /raft
    (kraft.version and the voter set from the KRaft control records)."""
    from pykraft.shell import MetadataShell

    try:
        tree = _load(snapshot, directory)
    except (CorruptLogError, StateFileError) as exc:  # the message names file and position
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None
    except PyKraftError as exc:
        typer.echo(f"Error: {snapshot or directory}: {exc}", err=True)
        raise typer.Exit(1) from None
    shell = MetadataShell(tree)
    if not command:
        _interactive(shell)
        return
    out = shell.execute(shlex.join(command))
    _print(out)
    if out.failed:
        raise typer.Exit(1)
