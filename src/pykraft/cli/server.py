"""``pykraft server server.properties [--override key=value]...``: run a KRaft node."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from pykraft.errors import ConfigError, PyKraftError, StorageError


def parse_overrides(items: list[str]) -> dict[str, str]:
    """``key=value`` options as properties; a :class:`ConfigError` names a malformed one."""
    overrides: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"invalid --override {item!r}: expected key=value")
        overrides[key.strip()] = value
    return overrides


def server(
    config: Annotated[Path, typer.Argument(help="The server's .properties file.")],
    override: Annotated[
        list[str] | None,
        typer.Option("--override", help="key=value that replaces the file's value."),
    ] = None,
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR.")] = "INFO",
) -> None:
    """Run a KRaft node: process.roles controller, broker or both (static quorum voters)."""
    from pykraft.config.server import ServerConfig
    from pykraft.process import run_server
    from pykraft.runtime import event_loop
    from pykraft.runtime.logfmt import configure_logging
    from pykraft.runtime.settings import load_settings
    from pykraft.storage.dir_lock import DirectoryLocks
    from pykraft.storage.meta_properties import ensure_directory_ids
    from pykraft.storage.refusal import refusal_line

    try:
        server_config = ServerConfig.load(config, parse_overrides(override or []))
        settings = load_settings(server_config)  # checks the directories before any write
        usable = [d for d in server_config.all_log_dirs if d not in settings.offline_log_dirs]
        locks = DirectoryLocks.acquire(usable)  # held until the exit; not a failed dir's
        ids = {d: meta.directory_id for d, meta in ensure_directory_ids(usable).items()}
        settings = replace(settings, directory_id=ids[server_config.metadata_log_dir],
                           log_dir_ids={d: dir_id for d, dir_id in ids.items()
                                        if dir_id is not None and d in server_config.log_dirs})
        configure_logging(settings.node_id, log_level)
        for warning in settings.config_warnings:  # unknown keys: Kafka warns, and starts
            logging.getLogger("pykraft.config").warning(warning)
        code = event_loop.run(run_server(settings), settings.event_loop)
        locks.release()
    except StorageError as exc:  # a damaged file: name it, the byte, and what to do
        typer.echo(f"Error: {refusal_line(exc)}", err=True)
        raise typer.Exit(1) from None
    except (PyKraftError, OSError) as exc:  # e.g. a bad key, or the listener port is taken
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None
    raise typer.Exit(code)
