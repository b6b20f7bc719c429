"""``meta.properties``: which node and cluster a log directory belongs to.

Version 0 is the legacy (ZooKeeper-era) form keyed by ``broker.id``; version 1 is KRaft's,
with ``node.id`` and ``cluster.id`` required. ``directory.id`` is the directory's UUID, which
for the metadata directory is the node's raft replica directory id (part of its ReplicaKey).
Kafka writes the file with Java's ``Properties.store`` via a ``.tmp`` file and an atomic
move; we do the same and produce the same bytes (see :mod:`.java_properties`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from pykraft.config.properties import parse_properties
from pykraft.errors import ConfigError
from pykraft.ids import InvalidUuidError, random_uuid, uuid_from_str, uuid_to_str
from pykraft.storage.file_error import StateFileError
from pykraft.storage.fsutil import atomic_write
from pykraft.storage.java_properties import store

META_PROPERTIES = "meta.properties"
VERSION_KEY = "version"
NODE_ID_KEY = "node.id"
BROKER_ID_KEY = "broker.id"
CLUSTER_ID_KEY = "cluster.id"
DIRECTORY_ID_KEY = "directory.id"
_KNOWN_KEYS = (VERSION_KEY, NODE_ID_KEY, BROKER_ID_KEY, CLUSTER_ID_KEY, DIRECTORY_ID_KEY)
_INT = re.compile(r"[+-]?[0-9]+")
_RESERVED_DIRECTORY_IDS = 100  # Kafka reserves the UUIDs (0, 0..99): unassigned, lost, ...


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """The parsed file; ``extra`` keeps unknown keys so a rewrite does not lose them."""

    version: int
    node_id: int
    cluster_id: str | None
    directory_id: uuid.UUID | None
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.version not in (0, 1):
            raise ValueError(f"meta.properties version must be 0 or 1, not {self.version}")
        if self.version == 1 and self.cluster_id is None:
            raise ValueError("meta.properties version 1 requires a cluster id")
        if not 0 <= self.node_id < 2**31:
            raise ValueError(f"node id {self.node_id} is outside 0..2^31-1")
        clash = set(self.extra) & set(_KNOWN_KEYS)
        if clash:
            raise ValueError(f"extra properties may not redefine {sorted(clash)}")

    def to_items(self) -> list[tuple[str, str]]:
        """Keys in the order Kafka's ``MetaProperties.toProperties`` sets them."""
        items = [(VERSION_KEY, str(self.version))]
        if self.cluster_id is not None:
            items.append((CLUSTER_ID_KEY, self.cluster_id))
        items.append((BROKER_ID_KEY if self.version == 0 else NODE_ID_KEY, str(self.node_id)))
        if self.directory_id is not None:
            items.append((DIRECTORY_ID_KEY, uuid_to_str(self.directory_id)))
        items.extend(self.extra.items())
        return items


def parse_meta_properties(text: str, source: str) -> MetaProperties:
    """Validate the properties of one file; errors name ``source`` and the bad key."""
    try:
        props = parse_properties(text, source)
    except ConfigError as exc:
        raise StateFileError(source, str(exc).removeprefix(f"{source}: ")) from None
    if not set(props) & set(_KNOWN_KEYS):
        found = ", ".join(sorted(props)[:5]) or "none"
        raise StateFileError(
            source, f"not a valid meta.properties file: it has none of the keys "
            f"{', '.join(_KNOWN_KEYS)} (keys found: {found})")
    version_text = props.get(VERSION_KEY, "0")
    if version_text not in ("0", "1"):
        raise StateFileError(
            source, f"unsupported {VERSION_KEY} {version_text!r} (expected 0 or 1)"
        )
    version = int(version_text)
    id_key = BROKER_ID_KEY if version == 0 else NODE_ID_KEY
    node_id = _required_node_id(props, id_key, source)
    cluster_id = props.get(CLUSTER_ID_KEY)
    if version == 1 and cluster_id is None:
        raise StateFileError(source, f"{CLUSTER_ID_KEY} is required in version 1")
    directory_id = _optional_directory_id(props, source)
    extra = {key: value for key, value in props.items() if key not in _KNOWN_KEYS}
    return MetaProperties(version, node_id, cluster_id, directory_id, extra)


def read_meta_properties(path: Path) -> MetaProperties:
    """Read a ``meta.properties`` file (ISO-8859-1, like ``Properties.load(InputStream)``)."""
    try:
        text = path.read_bytes().decode("latin-1")
    except OSError as exc:
        raise StateFileError(path, f"cannot read: {exc.strerror or exc}") from None
    return parse_meta_properties(text, str(path))


def write_meta_properties(
    path: Path,
    meta: MetaProperties,
    *,
    clock: Callable[[], datetime] = lambda: datetime.now().astimezone(),
) -> None:
    """Atomically write the file as Kafka does; ``clock`` gives the header's date."""
    atomic_write(path, store(meta.to_items(), clock()))


def ensure_directory_ids(
    directories: Iterable[Path],
    *,
    new_uuid: Callable[[], uuid.UUID] = random_uuid,
    clock: Callable[[], datetime] = lambda: datetime.now().astimezone(),
) -> dict[Path, MetaProperties]:
    """Give every formatted directory a ``directory.id``, as Kafka does at start-up.

    A directory formatted before KIP-858 has none, and without one its controller has no
    replica directory id, so it could never join a dynamic quorum (KIP-853). Like Kafka's
    ``MetaPropertiesEnsemble.Copier``, a missing id is a fresh random UUID that is neither
    reserved nor used by another of the node's directories, and only the files that change
    are rewritten (atomically, in Kafka's byte layout). Returns each directory's properties.
    """
    found = {d: read_meta_properties(d / META_PROPERTIES) for d in directories}
    taken = {m.directory_id for m in found.values() if m.directory_id is not None}
    for directory, meta in found.items():
        if meta.directory_id is not None:
            continue
        candidate = new_uuid()
        while is_reserved_directory_id(candidate) or candidate in taken:
            candidate = new_uuid()
        taken.add(candidate)
        found[directory] = replace(meta, directory_id=candidate)
        path = directory / META_PROPERTIES
        try:
            write_meta_properties(path, found[directory], clock=clock)
        except OSError as exc:
            raise StateFileError(path, f"cannot write: {exc.strerror or exc}") from None
    return found


def _required_node_id(props: dict[str, str], key: str, source: str) -> int:
    text = props.get(key)
    if text is None:
        raise StateFileError(source, f"required property {key} is missing")
    if not _INT.fullmatch(text):
        raise StateFileError(source, f"{key} {text!r} is not an integer")
    value = int(text)
    if not 0 <= value < 2**31:
        raise StateFileError(source, f"{key} {value} is outside 0..2147483647")
    return value


def is_reserved_directory_id(value: uuid.UUID) -> bool:
    """Kafka reserves the first 100 UUIDs (unassigned, lost, migrating, ...) as directory ids."""
    return value.int < _RESERVED_DIRECTORY_IDS


def _optional_directory_id(props: dict[str, str], source: str) -> uuid.UUID | None:
    text = props.get(DIRECTORY_ID_KEY)
    if text is None:
        return None
    try:
        value = uuid_from_str(text)
    except InvalidUuidError as exc:
        raise StateFileError(source, f"{DIRECTORY_ID_KEY}: {exc}") from None
    if is_reserved_directory_id(value):
        raise StateFileError(source, f"{DIRECTORY_ID_KEY} {text!r} is a reserved directory id")
    return value
