"""``storage format`` and ``storage info``: Kafka's ``kafka-storage.sh`` rules and messages.

Formatting writes, into every directory a node uses, ``meta.properties`` (v1) and
``bootstrap.checkpoint`` (metadata.version, and the ``--add-scram`` credentials); for a
dynamic quorum (``--standalone`` or ``--initial-controllers``) the metadata directory of an
initial voter also gets the 0-0 checkpoint with the voter set.
All checks run before the first byte is written, so a rejected command changes nothing.
"""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from pykraft.config.server import ServerConfig, VoterSpec, parse_voter
from pykraft.errors import ConfigError, PyKraftError, StorageError
from pykraft.features import (
    DEFAULT_METADATA_VERSION,
    DYNAMIC_QUORUM_METADATA_VERSION,
    KRAFT_VERSION_FEATURE,
    METADATA_VERSION_FEATURE,
    SUPPORTED_FEATURES,
    MetadataVersion,
    default_feature_level,
    dependency_problem,
    metadata_version_for_level,
)
from pykraft.ids import InvalidUuidError, random_uuid, uuid_from_str, uuid_to_str
from pykraft.image.scram import MV_3_5_IV2
from pykraft.raft.voter_set import SUPPORTED_KRAFT_VERSIONS
from pykraft.records.control import Voter, VoterEndpoint, VotersRecord
from pykraft.records.metadata import FeatureLevelRecord
from pykraft.storage.bootstrap import write_bootstrap_checkpoint, write_bootstrap_voters_snapshot
from pykraft.storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    is_reserved_directory_id,
    read_meta_properties,
    write_meta_properties,
)
from pykraft.tools.scram_args import parse_add_scram


class QuorumMode(Enum):
    """How the controller quorum is bootstrapped."""

    STATIC = "static"  # controller.quorum.voters, kraft.version 0
    STANDALONE = "standalone"  # --standalone: this controller is the only initial voter
    INITIAL_CONTROLLERS = "initial-controllers"  # --initial-controllers LIST
    NO_INITIAL_CONTROLLERS = "no-initial-controllers"  # join an existing dynamic quorum


class FormatError(PyKraftError):
    """The format request is invalid; nothing was written."""


@dataclass(frozen=True, slots=True)
class FormatRequest:
    config: ServerConfig
    cluster_id: str
    mode: QuorumMode
    initial_controllers: str | None = None
    release_version: MetadataVersion = DEFAULT_METADATA_VERSION
    features: tuple[tuple[str, int], ...] = ()
    ignore_formatted: bool = False
    scram: tuple[str, ...] = ()
    """--add-scram arguments (:mod:`pykraft.tools.scram_args`)."""


def parse_feature(text: str) -> tuple[str, int]:
    """``--feature name=level``."""
    name, sep, level = text.partition("=")
    if not sep or not name or not level.strip().lstrip("-").isdigit():
        raise FormatError(f"invalid --feature {text!r}: expected name=level")
    return name.strip(), int(level)


def _validate_cluster_id(cluster_id: str) -> None:
    # Kafka takes the id as given since 3.7 (3.6 refused a non-UUID with "Cluster ID string
    # ... does not appear to be a valid UUID"; KAFKA-20617 brought that check back and was
    # reverted because KIP-78 never required a UUID); reject only what would corrupt
    # meta.properties or be unusable in RPCs.
    if not cluster_id or any(c.isspace() or c in ",=:#!\\" for c in cluster_id):
        raise FormatError(f"invalid cluster id {cluster_id!r}")


def cluster_id_warning(cluster_id: str) -> str | None:
    """A warning for an id that ``storage random-uuid`` would never make: Kafka formats with
    it (see :func:`_validate_cluster_id`), but tools that parse the id as a UUID fail."""
    try:
        uuid_from_str(cluster_id)
    except InvalidUuidError:
        return (f"Warning: cluster id {cluster_id!r} is not a Kafka UUID (22 characters of "
                "URL-safe base64, as 'storage random-uuid' prints). Kafka accepts any cluster "
                "id (KIP-78), but tools that expect a UUID may not.")
    return None


def _kraft_version(request: FormatRequest) -> int:
    dynamic = request.mode is not QuorumMode.STATIC
    requested = dict(request.features).get(KRAFT_VERSION_FEATURE)
    if requested is None:
        return 1 if dynamic else 0
    low, high = SUPPORTED_FEATURES[KRAFT_VERSION_FEATURE]
    if not low <= requested <= high:
        raise FormatError(f"unsupported kraft.version {requested}")
    if requested == 0 and dynamic:
        raise FormatError(
            f"cannot set kraft.version=0 with --{request.mode.value}: a dynamic quorum needs "
            "kraft.version 1"
        )
    if requested == 1 and not dynamic:
        raise FormatError(
            "kraft.version=1 needs --standalone, --initial-controllers or "
            "--no-initial-controllers"
        )
    return requested


def _initial_voters(request: FormatRequest, voter_dir_id: uuid.UUID) -> list[VoterSpec]:
    config = request.config
    if request.mode is QuorumMode.STANDALONE:
        endpoints = config.advertised_controller_endpoints()
        if not config.is_controller or not endpoints:
            raise FormatError(
                "--standalone needs a controller with a listener named in "
                "controller.listener.names"
            )
        host = endpoints[0].host or "localhost"
        return [VoterSpec(config.node_id, host, endpoints[0].port, voter_dir_id)]
    if request.mode is QuorumMode.INITIAL_CONTROLLERS:
        text = request.initial_controllers or ""
        try:
            voters = [
                parse_voter(item, "--initial-controllers", with_directory=True)
                for item in text.split(",") if item.strip()
            ]
        except ConfigError as exc:
            raise FormatError(str(exc)) from None
        if not voters:
            raise FormatError("--initial-controllers needs at least one id@host:port:dirId")
        for voter in voters:
            if voter.directory_id and is_reserved_directory_id(voter.directory_id):
                raise FormatError(
                    f"reserved directory id for voter {voter.node_id} in --initial-controllers"
                )
        ids = [v.node_id for v in voters]
        if len(set(ids)) != len(ids):
            raise FormatError(f"duplicate ids in --initial-controllers: {text}")
        return voters
    return []


def _voters_record(voters: list[VoterSpec], listener: str) -> VotersRecord:
    return VotersRecord(
        version=0,
        voters=tuple(
            Voter(
                voter_id=v.node_id,
                voter_directory_id=v.directory_id or uuid.UUID(int=0),
                endpoints=(VoterEndpoint(name=listener, host=v.host, port=v.port),),
                kraft_version_feature=SUPPORTED_KRAFT_VERSIONS,
            )
            for v in voters
        ),
    )


def _check_modes(request: FormatRequest) -> None:
    config = request.config
    if request.mode is QuorumMode.STATIC:
        if config.is_controller and not config.static_voters:
            raise FormatError(
                "Because controller.quorum.voters is not set on this controller, you must "
                "specify one of the following: --standalone, --initial-controllers, or "
                "--no-initial-controllers."
            )
    else:
        if config.static_voters:
            raise FormatError(
                f"--{request.mode.value} cannot be used when controller.quorum.voters is set; "
                "remove it and use controller.quorum.bootstrap.servers for a dynamic quorum"
            )
        if request.release_version < DYNAMIC_QUORUM_METADATA_VERSION:
            raise FormatError(
                f"a dynamic quorum needs metadata.version "
                f"{DYNAMIC_QUORUM_METADATA_VERSION.name} or later, not "
                f"{request.release_version.name}"
            )
    for name, _ in request.features:
        if name not in SUPPORTED_FEATURES:
            raise FormatError(f"unsupported feature {name!r}")
        if name == METADATA_VERSION_FEATURE:
            raise FormatError("set metadata.version with --release-version")


def _feature_records(request: FormatRequest) -> list[FeatureLevelRecord]:
    """The other features' levels: as given (``--feature``), else Kafka's default for the
    release version; a level of 0 is not finalized (no record, as Kafka writes none)."""
    given = dict(request.features)
    records = []
    for name in sorted(SUPPORTED_FEATURES):
        if name in (METADATA_VERSION_FEATURE, KRAFT_VERSION_FEATURE):
            continue
        level = given.get(name)
        if level is None:
            level = default_feature_level(name, request.release_version)
        low, high = SUPPORTED_FEATURES[name]
        if not low <= level <= high:
            raise FormatError(f"unsupported {name} level {level}: this software supports "
                              f"{low}-{high}")
        problem = dependency_problem(name, level, request.release_version.level)
        if problem is not None:
            raise FormatError(problem)
        if level:
            records.append(FeatureLevelRecord(name=name, feature_level=level))
    return records


def _random_salt() -> bytes:
    """Kafka salts with the text of 130 random bits; this is as long and as random."""
    return secrets.token_urlsafe(20).encode()


def _scram_records(request: FormatRequest, new_salt: Callable[[], bytes]) -> list[object]:
    if request.scram and request.release_version.level < MV_3_5_IV2:
        raise FormatError(f"SCRAM is only supported in {METADATA_VERSION_FEATURE} "
                          f"{metadata_version_for_level(MV_3_5_IV2).name} or later.")
    return [parse_add_scram(argument, new_salt=new_salt) for argument in request.scram]


def format_storage(
    request: FormatRequest,
    *,
    clock: Callable[[], int] = lambda: int(time.time() * 1000),
    new_uuid: Callable[[], uuid.UUID] = random_uuid,
    new_salt: Callable[[], bytes] = _random_salt,
) -> list[str]:
    """Format the node's directories; returns Kafka's progress lines."""
    request.config.require_quorum()
    _validate_cluster_id(request.cluster_id)
    _check_modes(request)
    kraft_version = _kraft_version(request)
    config = request.config
    node_id = config.node_id
    metadata_dir = config.metadata_log_dir
    voter_dir_id = new_uuid()
    voters = _initial_voters(request, voter_dir_id)
    own_voter = next((v for v in voters if v.node_id == node_id), None)
    if own_voter is not None and not config.is_controller:
        raise FormatError(f"node {node_id} is listed as an initial controller but is not one")
    listener_names = config.controller_listener_names
    if voters and not listener_names:
        raise FormatError("missing required configuration controller.listener.names")
    bootstrap = [FeatureLevelRecord(name=METADATA_VERSION_FEATURE,
                                    feature_level=request.release_version.level),
                 *_feature_records(request), *_scram_records(request, new_salt)]

    pending = []
    for directory in config.all_log_dirs:
        if (directory / META_PROPERTIES).exists():
            if not request.ignore_formatted:
                raise FormatError(
                    f"Log directory {directory} is already formatted. Use --ignore-formatted "
                    "to ignore this directory and format the others."
                )
            continue
        pending.append(directory)
    if not pending:
        return ["All of the log directories are already formatted."]

    lines = []
    for directory in pending:
        is_metadata = directory == metadata_dir
        if is_metadata and own_voter is not None:
            description, directory_id = "dynamic metadata voter directory", own_voter.directory_id
        elif is_metadata and request.mode is not QuorumMode.STATIC:
            description, directory_id = "dynamic metadata directory", new_uuid()
        elif is_metadata:
            description, directory_id = "metadata directory", new_uuid()
        else:
            description, directory_id = "data directory", new_uuid()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            write_meta_properties(
                directory / META_PROPERTIES,
                MetaProperties(1, node_id, request.cluster_id, directory_id),
            )
            write_bootstrap_checkpoint(directory, bootstrap, clock=clock)
            if is_metadata and own_voter is not None and kraft_version == 1:
                write_bootstrap_voters_snapshot(
                    directory, _voters_record(voters, listener_names[0]), clock=clock
                )
        except OSError as exc:
            raise StorageError(f"cannot format {directory}: {exc}") from None
        lines.append(
            f"Formatting {description} {directory} with {METADATA_VERSION_FEATURE} "
            f"{request.release_version.name}."
        )
    return lines


@dataclass(frozen=True, slots=True)
class StorageInfo:
    lines: list[str]
    ok: bool


def storage_info(config: ServerConfig) -> StorageInfo:
    """Kafka's ``storage info``: the directories, their metadata, and any problem found."""
    dirs = config.all_log_dirs
    found: list[MetaProperties] = []
    problems: list[str] = []
    for directory in dirs:
        path = directory / META_PROPERTIES
        if not directory.is_dir():
            problems.append(f"{directory} does not exist or is not a directory.")
        elif not path.exists():
            problems.append(f"{directory} is not formatted.")
        else:
            try:
                found.append(read_meta_properties(path))
            except StorageError as exc:
                problems.append(str(exc))
    clusters = {m.cluster_id for m in found}
    if len(clusters) > 1:
        problems.append(f"Multiple cluster ids found: {sorted(c or '' for c in clusters)}")
    nodes = {m.node_id for m in found}
    if nodes and nodes != {config.node_id}:
        problems.append(f"node.id {config.node_id} in the config does not match {sorted(nodes)}")
    lines = ["Found log directory:" if len(dirs) == 1 else "Found log directories:"]
    lines += [f"  {d}" for d in dirs]
    lines.append("")
    for meta in found:
        props = dict(meta.to_items())
        if meta.directory_id is not None:
            props["directory.id"] = uuid_to_str(meta.directory_id)
        rendered = ", ".join(f"{k}={v}" for k, v in sorted(props.items()))
        lines.append(f"Found metadata: {{{rendered}}}")
    if found:
        lines.append("")
    if problems:
        lines.append("Found problem:" if len(problems) == 1 else "Found problems:")
        lines += [f"  {p}" for p in problems]
        lines.append("")
    return StorageInfo(lines, not problems)
