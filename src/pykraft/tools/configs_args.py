"""``pykraft configs`` arguments: Kafka's ConfigCommand option checks and messages.

Scripts grep kafka-configs.sh's refusals, so the checks and their texts are ConfigCommand's:
one action (``--describe`` or ``--alter``), the entity from ``--entity-type``/
``--entity-name``/``--entity-default`` or a shorthand (``--topic``, ``--broker``,
``--broker-defaults``, ``--user``, ``--user-defaults``, ``--client``, ``--client-defaults``,
``--ip``, ``--ip-defaults``, ``--broker-logger``), ``--add-config k1=v1,k2=[v2,v3]`` split at
commas outside brackets. Entity types Kafka knows but pykraft's nodes do not serve (broker
loggers, client metrics, groups) are refused with a message that says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.config.properties import load_properties
from pykraft.errors import ConfigError
from pykraft.runtime.host_names import ip_resolves

TOPICS, CLIENTS, USERS, BROKERS, IPS = "topics", "clients", "users", "brokers", "ips"
BROKER_LOGGERS = "broker-loggers"
#: Kafka's ConfigType values after broker-loggers, the order its refusal lists them in.
ENTITY_TYPES = (BROKER_LOGGERS, TOPICS, CLIENTS, USERS, BROKERS, IPS, "client-metrics",
                "groups")
SCRAM_KEYS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
#: What pykraft's nodes do not serve, per entity type Kafka accepts.
_UNSERVED = {
    BROKER_LOGGERS: "pykraft's nodes have no dynamic logger levels (BROKER_LOGGER configs)",
    "client-metrics": "pykraft's brokers keep no client metrics subscriptions",
    "groups": "pykraft's brokers keep no dynamic group configs",
}
#: Split at a comma (or, inside a pair, at ``=``) that is not inside ``[...]``.
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
_KEY = re.compile(r"[$a-zA-Z0-9._-]*")


class ConfigsArgumentError(ConfigError):
    """Arguments kafka-configs.sh refuses; the message is Kafka's."""


@dataclass(frozen=True, slots=True)
class ConfigsArgs:
    """The options as given; shorthands are folded in by :func:`check_args`."""

    bootstrap_server: str | None = None
    bootstrap_controller: str | None = None
    describe: bool = False
    alter: bool = False
    describe_all: bool = False
    entity_types: tuple[str, ...] = ()
    entity_names: tuple[str, ...] = ()
    entity_default: bool = False
    topic: str | None = None
    broker: str | None = None
    broker_defaults: bool = False
    broker_logger: str | None = None
    user: str | None = None
    user_defaults: bool = False
    client: str | None = None
    client_defaults: bool = False
    ip: str | None = None
    ip_defaults: bool = False
    add_config: str | None = None
    add_config_file: Path | None = None
    delete_config: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Entity:
    """The entity to describe or alter: one type; a name, "" for the default entity, or
    none (describe every entity of the type)."""

    type: str
    name: str | None

    @property
    def singular(self) -> str:
        return self.type[:-1]


@dataclass(frozen=True, slots=True)
class ConfigsCommand:
    bootstrap: str
    controllers: bool
    #: Every entity type given with its name (None: none given); one but for a user's
    #: client (``users`` and ``clients``).
    entities: tuple[Entity, ...]
    alter: bool
    describe_all: bool = False
    to_add: dict[str, str] = field(default_factory=dict)
    to_delete: tuple[str, ...] = ()

    @property
    def entity(self) -> Entity:
        """The first entity: the one Kafka's messages name."""
        return self.entities[0]


def _fail(message: str) -> ConfigsArgumentError:
    return ConfigsArgumentError(message)


def _shorthands(args: ConfigsArgs) -> tuple[list[str], list[str]]:
    """(types, names) given by the shorthand flags, in Kafka's entityFlags order."""
    named = [(args.topic, TOPICS), (args.client, CLIENTS), (args.user, USERS),
             (args.broker, BROKERS), (args.broker_logger, BROKER_LOGGERS), (args.ip, IPS)]
    defaults = [(args.client_defaults, CLIENTS), (args.user_defaults, USERS),
                (args.broker_defaults, BROKERS), (args.ip_defaults, IPS)]
    types = [t for value, t in named if value is not None] + [t for on, t in defaults if on]
    names = [value for value, _ in named if value is not None] + ["" for on, _ in defaults if on]
    return types, names


def _entity(args: ConfigsArgs) -> tuple[list[str], list[str]]:
    """Kafka's ``entityTypes()`` and ``entityNames()``: the generic options, then the
    shorthands."""
    types, names = _shorthands(args)
    return ([*args.entity_types, *types],
            [*args.entity_names, *([""] if args.entity_default else []), *names])


def _check_types(args: ConfigsArgs, types: Sequence[str]) -> None:
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise _fail(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    if args.bootstrap_server is None and args.bootstrap_controller is None:
        raise _fail("Either --bootstrap-server or --bootstrap-controller must be specified.")
    for entity_type in types:
        if entity_type not in ENTITY_TYPES:
            raise _fail(f"Invalid entity type {entity_type}, the entity type must be one of "
                        f"{', '.join(ENTITY_TYPES)} with a --bootstrap-server or "
                        "--bootstrap-controller argument")
    if not types:
        raise _fail("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise _fail(f"Only '{USERS}' and '{CLIENTS}' entity types may be specified together")


def _check_broker_ids(types: Sequence[str], names: Sequence[str]) -> None:
    if types[0] not in (BROKERS, BROKER_LOGGERS):
        return
    for name in names:
        if name and not re.fullmatch(r"[+-]?\d{1,10}", name):
            raise _fail(f"The entity name for {types[0]} must be a valid integer broker id, "
                        f"but it is: {name}")


def _check_ips(args: ConfigsArgs, types: Sequence[str]) -> None:
    """ConfigCommand's ``validateIpEntity`` of every ip name given: an address."""
    if IPS not in types:
        return
    for name in [*args.entity_names, *([args.ip] if args.ip is not None else [])]:
        if name and not ip_resolves(name):
            raise _fail(f"The entity name for {types[0]} must be a valid IP or resolvable "
                        f"host, but it is: {name}")


def check_args(args: ConfigsArgs) -> ConfigsCommand:
    """Kafka's ``checkArgs`` and ``processCommand`` checks, then pykraft's refusal of what
    its nodes do not serve; the add and delete lists parsed."""
    if args.describe + args.alter != 1:
        raise _fail("Command must include exactly one action: --describe, --alter")
    if args.describe:
        for option, given in (("add-config", args.add_config is not None),
                              ("delete-config", bool(args.delete_config))):
            if given:
                raise _fail(f"Option \"[describe]\" can't be used with option \"[{option}]\"")
    types, names = _entity(args)
    _check_types(args, types)
    if (args.entity_types or args.entity_names or args.entity_default) and any(_shorthands(args)):
        raise _fail("--entity-{type,name,default} should not be used in conjunction with "
                    "specific entity flags")
    if args.bootstrap_server is not None and args.bootstrap_controller is not None:
        raise _fail("Only one of --bootstrap-server or --bootstrap-controller can be "
                    "specified")
    _check_broker_ids(types, names)
    _check_ips(args, types)
    has_name, has_default = any(names), "" in names
    if args.describe:
        if types[0] not in (USERS, CLIENTS, BROKERS, "ips") and args.entity_default:
            raise _fail(f"--entity-default must not be specified with --describe of "
                        f"{','.join(types)}")
        if BROKER_LOGGERS in types and not has_name:
            raise _fail(f"An entity name must be specified with --describe of "
                        f"{','.join(types)}")
    else:
        _check_alter(args, types, has_name, has_default)
        if len(types) != len(names):
            raise _fail("An entity name must be specified for every entity type")
    for entity_type in types:
        if entity_type in _UNSERVED:
            raise _fail(f"Entity type {entity_type} is not supported: {_UNSERVED[entity_type]}")
    if len(names) > len(types) and set(types) & {USERS, CLIENTS, IPS}:
        raise _fail("More entity names specified than entity types")
    return ConfigsCommand(
        bootstrap=args.bootstrap_server or args.bootstrap_controller or "",
        controllers=args.bootstrap_server is None,
        entities=tuple(Entity(t, names[i] if i < len(names) else None)
                       for i, t in enumerate(types)), alter=args.alter,
        describe_all=args.describe_all,
        to_add=parse_configs_to_add(args.add_config, args.add_config_file) if args.alter
        else {},
        to_delete=parse_configs_to_delete(args.delete_config))


def _check_alter(args: ConfigsArgs, types: Sequence[str], has_name: bool,
                 has_default: bool) -> None:
    if set(types) & {USERS, CLIENTS, BROKERS, "ips"}:
        if not has_name and not has_default:
            raise _fail("An entity-name or default entity must be specified with --alter of "
                        "users, clients, brokers or ips")
    elif not has_name:
        raise _fail(f"An entity name must be specified with --alter of {','.join(types)}")
    if args.add_config is not None and args.add_config_file is not None:
        raise _fail("Only one of --add-config or --add-config-file must be specified")
    if args.add_config is None and args.add_config_file is None and not args.delete_config:
        raise _fail("At least one of --add-config, --add-config-file, or --delete-config "
                    "must be specified with --alter")


def _java_split(text: str, pattern: str) -> list[str]:
    """Java's ``String.split(regex)``: trailing empty strings dropped."""
    parts = re.split(pattern, text)
    while len(parts) > 1 and not parts[-1]:
        parts.pop()
    return parts


def parse_add_config(text: str) -> dict[str, str]:
    """``k1=v1,k2=[v2,v3]``: pairs split at commas outside brackets, then at the ``=``
    outside brackets; brackets are dropped from values, keys and values trimmed."""
    configs: dict[str, str] = {}
    for pair in _java_split(text, "," + _OUTSIDE_BRACKETS):
        parts = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, pair)
        if len(parts) != 2:
            raise _fail("Invalid entity config: all configs to be added must be in the format "
                        "\"key=val\" or  \"key=[val1,val2]\" to group values which contain "
                        "commas.")
        configs[parts[0].strip()] = re.sub(r"[\[\]]", "", parts[1]).strip()
    return configs


def parse_configs_to_add(text: str | None, path: Path | None) -> dict[str, str]:
    """``--add-config`` or the properties of ``--add-config-file``, keys checked."""
    configs = load_properties(path) if path is not None else {}
    if text is not None:
        configs.update(parse_add_config(text))
    for key in configs:
        if not _KEY.fullmatch(key):
            raise _fail(f"Invalid character found for config key: {key}")
    return configs


def parse_configs_to_delete(values: Sequence[str]) -> tuple[str, ...]:
    """``--delete-config k1,k2`` (repeatable): comma-separated keys, trimmed."""
    return tuple(key.strip() for value in values for key in value.split(","))
