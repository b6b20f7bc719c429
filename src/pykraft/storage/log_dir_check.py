"""Which log directories a node starts with: Kafka's start-up checks of ``log.dirs`` and
the metadata directory (``MetaPropertiesEnsemble.Loader`` and ``verify``, then
``LogManager.createAndValidateLogDirs``), before anything is written.

A directory whose ``meta.properties`` cannot be read (no permission, an I/O error, the path
is not a directory, a value that does not parse), or that is not a readable directory,
starts offline: the broker serves its other directories and registers without it, so the
controller takes the replicas placed there as offline. The node refuses to start (Kafka's
fatal errors, in its order) when no ``meta.properties`` can be read at all, when a readable
one belongs to another cluster or node, when two directories share a ``directory.id``,
when the metadata directory is the failed one, when a directory is not formatted, and, on
a broker, when every ``log.dirs`` entry failed.

Interface::

    found = check_log_dirs(log_dirs, metadata_log_dir, node_id, broker=True)
    found.cluster_id            # the one cluster id of the readable files
    found.metas                 # each usable directory's meta.properties
    found.offline               # each failed directory -> why (Kafka's message)
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from pykraft.errors import StorageError
from pykraft.storage.file_error import StateFileError
from pykraft.storage.meta_properties import META_PROPERTIES, MetaProperties, read_meta_properties


@dataclass(frozen=True, slots=True)
class LogDirsOnDisk:
    """What start-up found: the cluster id, the usable directories' ``meta.properties``
    (in the configured order) and the failed ones with the reason each failed."""

    cluster_id: str
    metas: Mapping[Path, MetaProperties]
    offline: Mapping[Path, str]


def check_log_dirs(log_dirs: Sequence[Path], metadata_log_dir: Path, node_id: int, *,
                   broker: bool) -> LogDirsOnDisk:
    """Read and check every directory (``log_dirs`` and ``metadata_log_dir``); see the
    module docstring. Raises :class:`StorageError` with Kafka's reason when the node may
    not start (the file's own :class:`StateFileError` when one ``meta.properties`` is at
    fault, so the refusal line names it and what to do)."""
    directories = [*log_dirs, *([] if metadata_log_dir in log_dirs else [metadata_log_dir])]
    metas: dict[Path, MetaProperties] = {}
    unformatted: list[Path] = []
    errors: dict[Path, StateFileError] = {}
    for directory in directories:
        path = directory / META_PROPERTIES
        try:
            os.stat(path)
        except FileNotFoundError:  # Kafka's NoSuchFileException: not formatted
            unformatted.append(directory)
            continue
        except OSError as exc:  # no permission, not a directory, an I/O error
            errors[directory] = StateFileError(path, f"cannot read: {exc.strerror or exc}")
            continue
        try:
            metas[directory] = read_meta_properties(path)
        except StateFileError as exc:
            errors[directory] = exc
    if not metas:
        if len(errors) == 1:  # the one file at fault, as the refusal line words it
            raise next(iter(errors.values()))
        if errors:
            raise StorageError("No readable meta.properties files found: "
                               + "; ".join(str(e) for e in errors.values()))
        _refuse_unformatted(unformatted[0])
    cluster_id = _verify(metas, node_id)
    if metadata_log_dir in errors:
        error = errors[metadata_log_dir]
        raise StateFileError(error.path, f"{error.problem}; Encountered I/O error in metadata "
                                         f"log directory {metadata_log_dir}. Cannot continue.")
    if unformatted:
        _refuse_unformatted(unformatted[0])
    offline = {d: f"Failed to load {d} during broker startup: {errors[d]}" for d in errors}
    for directory in list(metas):
        if not (directory.is_dir() and os.access(directory, os.R_OK)):
            offline[directory] = f"{directory} is not a readable log directory."
            del metas[directory]
    if metadata_log_dir in offline:
        raise StorageError(f"Encountered I/O error in metadata log directory "
                           f"{metadata_log_dir}. Cannot continue: {offline[metadata_log_dir]}")
    if broker and all(d in offline for d in log_dirs):
        raise StorageError(
            "Shutdown broker because none of the specified log dirs from "
            f"{', '.join(str(d) for d in log_dirs)} can be created or validated: "
            + "; ".join(offline[d] for d in log_dirs))
    return LogDirsOnDisk(cluster_id, metas, {d: offline[d] for d in directories
                                             if d in offline})


def _refuse_unformatted(directory: Path) -> NoReturn:
    raise StorageError(f"no {META_PROPERTIES} found in {directory} (have you run "
                       "`pykraft storage format` to format the directory?)")


def _verify(metas: Mapping[Path, MetaProperties], node_id: int) -> str:
    """Kafka's ``MetaPropertiesEnsemble.verify`` of the readable files (of this node, of one
    cluster, no directory id twice), then its start-up's check that each names a cluster;
    returns the cluster id. A version 0 file (a ZooKeeper-era broker's, ``broker.id``) is
    accepted as Kafka's KRaft start accepts it: a broker rolled from ZooKeeper mode keeps
    its log directories as they are."""
    cluster_id: str | None = None
    seen: dict[uuid.UUID, Path] = {}
    for directory, meta in metas.items():
        path = directory / META_PROPERTIES
        if meta.node_id != node_id:
            raise StorageError(f"{path}: stored node.id {meta.node_id} does not match the "
                               f"configured node.id {node_id}")
        if meta.cluster_id is None:  # only a version 0 file may lack it
            pass
        elif cluster_id is not None and meta.cluster_id != cluster_id:
            raise StorageError(f"{path}: cluster.id {meta.cluster_id} does not match "
                               f"cluster.id {cluster_id} of the other log directories")
        else:
            cluster_id = meta.cluster_id
        if meta.directory_id is not None:
            if meta.directory_id in seen:
                raise StorageError(f"Duplicate directory ID {meta.directory_id} found. It was "
                                   f"the ID of {seen[meta.directory_id]}, but also of "
                                   f"{directory}")
            seen[meta.directory_id] = directory
    for directory, meta in metas.items():
        if meta.cluster_id is None:
            raise StorageError(f"Error: cluster ID not found in {directory}")
    assert cluster_id is not None  # metas is not empty: checked by the caller
    return cluster_id
