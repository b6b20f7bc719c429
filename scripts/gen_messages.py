"""Generate pykraft's Kafka message classes from Kafka's JSON message schemas.

Kafka declares its KRaft metadata records (``metadata/src/main/resources/common/metadata``)
and its RPC messages, requests, responses and their headers, beside the "data" messages other
bytes carry (control records, the consumer protocol, the Envelope's principal:
``clients/src/main/resources/common/message``), in JSON schema files and generates its Java
classes from them. This script does the same for both families in two steps, so the classes
can be regenerated (and checked) without Kafka at hand:

1. distil the schema files into a facts file per family (``records/schemas/
   metadata_records.json``, ``messages/schemas/rpc_messages.json``): per message its name,
   kind, api key, versions and fields (name, type, versions, nullable, tagged and flexible
   versions, tag, default, ignorable, mapKey, entityType, zeroCopy, nested fields) and its
   common structs, no prose;
2. render the facts into Python: ``records/metadata_records.py`` (one module), and one module
   per RPC or data message under ``messages/kafka/`` with its nested structs, plus the package's
   ``__init__.py`` naming every api.

The facts name the Kafka release they describe (4.4.0) and its commit as Kafka's jars record
it (``kafka/kafka-version.properties``: 16 hex digits). A third, frozen family holds the
controller-to-broker RPCs Kafka 4 removed (LeaderAndIsr, StopReplica, UpdateMetadata,
ControlledShutdown: api keys 4-7), which a migrating KRaft controller still sends to
ZooKeeper-mode brokers: its facts (``messages/schemas/legacy_rpc_messages.json``) come from
Kafka 3.9.1's ``kafka-clients`` jar (``--legacy-libs``) and render to ``messages/legacy/``,
a package pykraft never serves or advertises. The records' 4.4.0 changes
(RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3's CordonedLogDirs,
ClearElrRecord, UnregisterControllerRecord) were checked field by field, version by version,
against the release's compiled record classes (their ``SCHEMAS`` and default instances).

Usage::

    python scripts/gen_messages.py --kafka-libs .cache/kafka/4.4.0/libs  # a release's jars
    python scripts/gen_messages.py --legacy-libs .cache/kafka-zk/3.9.1/libs  # frozen 3.9.1
    python scripts/gen_messages.py --git-dir KAFKA_GIT_DIR --commit SHA --release X.Y.Z
    python scripts/gen_messages.py --source-dir KAFKA_CHECKOUT --commit SHA --release X.Y.Z
    python scripts/gen_messages.py           # the modules from the facts files alone
    python scripts/gen_messages.py --check   # exit 1 when a facts file or module is stale
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_WIDTH = 100
_COMMENT = re.compile(r"^\s*//.*$", re.M)  # Kafka's schema files are JSON with // comments
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# A field ruff's RUF009 flags: one typed a UUID or a struct.
_RUF009 = re.compile(r": uuid\.UUID( \| None)? = |= kafka_field\([A-Z]")
_FACT_KEYS = (
    "name",
    "type",
    "versions",
    "nullableVersions",
    "tag",
    "taggedVersions",
    "flexibleVersions",
    "default",
    "ignorable",
    "mapKey",
    "entityType",
    "zeroCopy",
)
_MESSAGE_KEYS = (
    "name",
    "type",
    "apiKey",
    "validVersions",
    "flexibleVersions",
    "latestVersionUnstable",
)
_PYTHON_TYPES = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "uint32": "int",
    "int64": "int",
    "float64": "float",
    "string": "str",
    "bytes": "bytes",
    "records": "bytes",
    "uuid": "uuid.UUID",
}


@dataclass(frozen=True)
class Family:
    """One family of Kafka schemas: where Kafka keeps them and where pykraft's facts go."""

    name: str
    kinds: frozenset[str]  # the schema files' "type"s this family keeps
    directory: str  # in Kafka's source tree
    jar: str  # the release jar that ships them (``<jar>-<release>.jar``)
    facts: Path
    message_keys: tuple[str, ...]
    api_keys: frozenset[int] = frozenset()  # only these apis (none named: every one)


RECORDS = Family(
    "records",
    frozenset({"metadata"}),
    "metadata/src/main/resources/common/metadata",
    "kafka-metadata",
    ROOT / "src/pykraft/records/schemas/metadata_records.json",
    ("name", "apiKey", "validVersions", "flexibleVersions"),
)
MESSAGES = Family(
    "messages",
    frozenset({"request", "response", "header", "data"}),
    "clients/src/main/resources/common/message",
    "kafka-clients",
    ROOT / "src/pykraft/messages/schemas/rpc_messages.json",
    _MESSAGE_KEYS,
)
LEGACY = Family(
    "legacy",
    frozenset({"request", "response"}),
    "clients/src/main/resources/common/message",
    "kafka-clients",
    ROOT / "src/pykraft/messages/schemas/legacy_rpc_messages.json",
    _MESSAGE_KEYS,
    frozenset({4, 5, 6, 7}),
)
FAMILIES = (RECORDS, MESSAGES)  # regenerated from the current release's schemas
LEGACY_RELEASE = "3.9.1"  # the last release with the ZooKeeper-era controller RPCs
RECORDS_OUTPUT = ROOT / "src/pykraft/records/metadata_records.py"
MESSAGES_PACKAGE = ROOT / "src/pykraft/messages/kafka"
LEGACY_PACKAGE = ROOT / "src/pykraft/messages/legacy"


# --- step 1: schema files -> facts ----------------------------------------------------------


@dataclass(frozen=True)
class Release:
    """The Kafka release the schema texts come from."""

    version: str
    commit: str


def schemas_from_git(git_dir: Path, commit: str, family: Family) -> dict[str, str]:
    """File name -> text of every schema file of a family at a commit of a Kafka git dir."""
    names = _git(git_dir, "ls-tree", "--name-only", commit, family.directory + "/").split()
    return {
        Path(name).name: _git(git_dir, "show", f"{commit}:{name}")
        for name in names
        if name.endswith(".json")
    }


def schemas_from_tree(root: Path, family: Family) -> dict[str, str]:
    """The schema files of a family in a Kafka source tree on disk."""
    directory = root / family.directory
    return {path.name: path.read_text() for path in sorted(directory.glob("*.json"))}


def schemas_from_jars(libs: Path, family: Family) -> tuple[dict[str, str], Release]:
    """The schema files a release's jar ships (``common/<dir>/*.json``) and the release."""
    properties = _jar_properties(libs)
    release = Release(properties["version"], properties["commitId"])
    prefix = "common/" + Path(family.directory).name + "/"
    with zipfile.ZipFile(libs / f"{family.jar}-{release.version}.jar") as jar:
        texts = {
            Path(name).name: jar.read(name).decode("utf-8")
            for name in sorted(jar.namelist())
            if name.startswith(prefix) and name.endswith(".json")
        }
    return texts, release


def _jar_properties(libs: Path) -> dict[str, str]:
    """``kafka/kafka-version.properties`` of the clients jar: version and commitId."""
    jars = sorted(libs.glob("kafka-clients-*.jar"))
    if len(jars) != 1:
        raise SystemExit(f"expected one kafka-clients jar in {libs}, found {len(jars)}")
    with zipfile.ZipFile(jars[0]) as jar:
        text = jar.read("kafka/kafka-version.properties").decode("utf-8")
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
    ).stdout


def distil(family: Family, schemas: Mapping[str, str], release: Release) -> dict[str, Any]:
    """The facts of every schema of a family, ordered by api key (headers first)."""
    messages = []
    for text in schemas.values():
        schema = json.loads(_COMMENT.sub("", text))
        if schema.get("type") not in family.kinds or schema["validVersions"] == "none":
            continue  # not this family, or an api Kafka removed (LeaderAndIsr...)
        if family.api_keys and schema.get("apiKey") not in family.api_keys:
            continue
        facts = {key: schema[key] for key in family.message_keys if key in schema}
        facts["fields"] = [_field_facts(field) for field in schema.get("fields", ())]
        if "commonStructs" in schema:
            facts["commonStructs"] = [
                {
                    "name": struct["name"],
                    "versions": struct["versions"],
                    "fields": [_field_facts(field) for field in struct["fields"]],
                }
                for struct in schema["commonStructs"]
            ]
        messages.append(facts)
    messages.sort(key=lambda facts: (facts.get("apiKey", -1), facts["name"]))
    return {
        "source": {
            "repository": "apache/kafka",
            "release": release.version,
            "commit": release.commit,
            "directory": family.directory,
        },
        family.name: messages,
    }


def _field_facts(field: Mapping[str, Any]) -> dict[str, Any]:
    facts = {key: field[key] for key in _FACT_KEYS if key in field}
    if "tag" in facts:
        facts["tag"] = int(facts["tag"])  # some schemas write the tag as a string
    default = facts.get("default")
    if isinstance(default, bool):  # a few schemas write a JSON boolean or number
        facts["default"] = "true" if default else "false"
    elif isinstance(default, int):
        facts["default"] = str(default)
    if "fields" in field:
        facts["fields"] = [_field_facts(child) for child in field["fields"]]
    return facts


def dump_facts(facts: Mapping[str, Any]) -> str:
    """The facts as JSON with one line per field, so a schema change is a one-line diff."""
    (family,) = (key for key in facts if key != "source")
    lines = ["{", f'  "source": {_one_line(facts["source"])},', f'  "{family}": [']
    messages = facts[family]
    for i, message in enumerate(messages):
        head = {key: value for key, value in message.items() if key not in _NESTED}
        lines.append(f"    {_one_line(head)[:-1]}, \"fields\": [")
        lines.extend(_dump_fields(message["fields"], "      "))
        if "commonStructs" in message:
            lines.append('    ], "commonStructs": [')
            lines.extend(_dump_fields(message["commonStructs"], "      "))
        lines.append("    ]}" + ("," if i + 1 < len(messages) else ""))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


_NESTED = ("fields", "commonStructs")


def _dump_fields(fields: list[dict[str, Any]], indent: str) -> Iterator[str]:
    for i, field in enumerate(fields):
        comma = "," if i + 1 < len(fields) else ""
        if "fields" not in field:
            yield indent + _one_line(field) + comma
            continue
        head = {key: value for key, value in field.items() if key != "fields"}
        yield f'{indent}{_one_line(head)[:-1]}, "fields": ['
        yield from _dump_fields(field["fields"], indent + "  ")
        yield f"{indent}]}}{comma}"


def _one_line(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))


# --- step 2: facts -> Python modules --------------------------------------------------------


def _preamble(source: Mapping[str, Any], where: str, docstring: list[str]) -> list[str]:
    """The header every generated module starts with: provenance, then its docstring."""
    return [
        "# Generated by scripts/gen_messages.py from Kafka",
        f"# {source['repository']}@{source['commit']}",
        f"# ({where}); do not edit.",
        *docstring,
    ]


def _classes_module(
    preamble: list[str], body: list[str], exported: list[str], tail: list[str]
) -> str:
    """A module of ``@message`` classes: preamble, imports, ``__all__``, classes, ``tail``."""
    text = "\n".join(body)
    imports = ["import uuid"] if "uuid.UUID" in text else []
    splices = ["from pykraft.messages.splice import Splice"] if "| Splice" in text else []
    noqa = [
        "# kafka_field() returns a dataclasses.Field, which ruff cannot see for uuid-typed fields:",
        "# ruff: noqa: RUF009",
        "",
    ] if _RUF009.search(text) else []
    schema_names = ", ".join(
        name
        for name, used in (
            ("TaggedField", _UNKNOWN_TAGS_LINE in text),
            ("array", "array(" in text),
            ("kafka_field", True),
            ("message", True),
            ("unknown_tags", _UNKNOWN_TAGS_LINE in text),
        )
        if used
    )
    lines = [
        *preamble,
        "",
        *noqa,
        "from __future__ import annotations",
        "",
        *imports,
        "from dataclasses import dataclass",
        "",
        f"from pykraft.messages import {schema_names}",
        *splices,
        "",
        "__all__ = [",
        *(f'    "{name}",' for name in sorted(exported, key=_isort_key)),
        "]",
        text,
        *tail,
    ]
    return "\n".join(lines) + "\n"


def _message_classes(
    facts: Mapping[str, Any],
    common: Mapping[str, list[dict[str, Any]]],
    rendered: dict[str, list[dict[str, Any]]],
) -> tuple[list[str], list[str]]:
    """(source lines, class names) of a message and the structs it uses not yet ``rendered``,
    each struct before its first use. Every class of a message with flexible versions keeps
    the unknown tagged fields it reads, as Kafka's ``_unknownTaggedFields``."""
    name, fields = facts["name"], facts["fields"]
    keeps = facts["flexibleVersions"] != "none"
    body: list[str] = []
    names: list[str] = []
    for struct_name, struct_fields in _structs(fields, common):
        known = rendered.setdefault(struct_name, struct_fields)
        if known is not struct_fields and known != struct_fields:
            raise ValueError(f"two different structs are named {struct_name}")
        if struct_name in names or known is not struct_fields:
            continue
        body += _class(struct_name, struct_fields, "@message()", keeps)
        names.append(struct_name)
    body += _class(name, fields, _decorator(facts), keeps)
    return body, [*names, name]


def _decorator(facts: Mapping[str, Any]) -> str:
    return (
        f'@message(versions="{facts["validVersions"]}", '
        f'flexible="{facts["flexibleVersions"]}")'
    )


def render_records(facts: Mapping[str, Any]) -> str:
    """The generated metadata records module's text."""
    source = facts["source"]
    body: list[str] = []
    registry: list[str] = []
    names: list[str] = []
    rendered: dict[str, list[dict[str, Any]]] = {}
    for record in facts["records"]:
        lines, classes = _message_classes(record, {}, rendered)
        body += lines
        names += classes
        enum_name = snake_case(record["name"]).upper()
        registry.append(f'    ({record["apiKey"]}, "{enum_name}", {record["name"]}),')
    preamble = _preamble(source, source["directory"], [
        '"""KRaft metadata records: one ``@message`` dataclass per Kafka record schema.',
        "",
        "Fields are in wire order, named as the schema names them in snake case. The facts come",
        "from ``records/schemas/metadata_records.json``; framing and decoding live in",
        ":mod:`pykraft.records.metadata`.",
        '"""',
    ])
    tail = [
        "",
        "",
        "RECORD_CLASSES: tuple[tuple[int, str, type], ...] = (",
        *registry,
        ")",
        '"""(api key, Kafka\'s ``MetadataRecordType`` name, class) of every record, by api key."""',
    ]
    return _classes_module(preamble, body, [*names, "RECORD_CLASSES"], tail)


def render_messages(facts: Mapping[str, Any], family: Family = MESSAGES) -> dict[str, str]:
    """File name -> text of every module of a family's package (``messages/kafka`` or
    ``messages/legacy``)."""
    source = facts["source"]
    modules: dict[str, str] = {}
    apis: dict[int, str] = {}
    for message in facts[family.name]:
        name = message["name"]
        common = {struct["name"]: struct["fields"] for struct in message.get("commonStructs", ())}
        body, names = _message_classes(message, common, {})
        kind = message["type"]
        if kind in ("request", "response"):
            api = name.removesuffix(kind.capitalize())
            if apis.setdefault(message["apiKey"], api) != api:
                raise ValueError(f"api key {message['apiKey']} has two names")
        about = f"api key {message['apiKey']}, " if "apiKey" in message else ""
        preamble = _preamble(source, f"common/message/{name}.json", [
            f'"""Kafka\'s {name}.',
            "",
            "One class for every version, after the structs it nests. "
            f"{about.capitalize()}versions {message['validVersions']},",
            f"flexible {message['flexibleVersions']}; conventions: :mod:`pykraft.messages.kafka`.",
            '"""',
        ])
        modules[f"{snake_case(name)}.py"] = _classes_module(preamble, body, names, [])
    if family is LEGACY:
        modules["__init__.py"] = _package_init(source, apis, _LEGACY_DOC, "LEGACY_API_MESSAGES")
    else:
        modules["__init__.py"] = _package_init(source, apis, _CONVENTIONS, "API_MESSAGES")
    return modules


_CONVENTIONS = '''"""Kafka's RPC messages: one generated class per request, response and header,
and per "data" message other bytes carry (``DefaultPrincipalData``, ``VotersRecord``...),
for every version Kafka defines, and one per struct they nest.

The classes are rendered by ``scripts/gen_messages.py`` from the facts of Kafka's JSON
message schemas (``messages/schemas/rpc_messages.json``); :mod:`pykraft.messages.rpc` encodes
and decodes them, bodies alone or whole frames with their headers. Conventions:

- One class serves every version: a field is present in the versions its schema names and
  keeps its default elsewhere. Writing a non-default value of a field at a version that lacks
  it raises :class:`~pykraft.errors.UnsupportedVersionError`, unless Kafka's schema marks the
  field ``ignorable``: then it is dropped, as Kafka's generated writers do.
- Names are Kafka's: classes as the schema names its messages and structs (``MetadataRequest``,
  ``MetadataRequestTopic``), fields in snake case (``allow_auto_topic_creation``); modules are
  the message names in snake case (``metadata_request``).
- Defaults are Kafka's: 0, ``""``, ``b""``, empty tuples, the zero UUID, or the schema's
  ``default`` (``None`` where it says ``null``). Arrays are tuples.
- The zero UUID stays a :class:`uuid.UUID` (``pykraft.ids.ZERO_UUID``), never ``None``.
- Error codes are the wire's ``int``; :class:`pykraft.protocol.errors.ErrorCode` names them.
- Times and durations are the wire's ``int`` milliseconds.
- ``records`` fields decode to ``bytes`` and are written from any bytes-like value, or from a
  :class:`~pykraft.messages.splice.Splice` into a ``SplicedBuffer`` (a Fetch answer's file
  regions).
- Nullable fields are typed ``T | None``; ``None`` is written as Kafka's null.
- Tagged fields the schema does not define are kept raw by the struct that reads them, nested
  ones too (``unknown_tagged_fields``, Kafka's ``_unknownTaggedFields``), and written back
  among the known ones in tag order.
"""'''


_LEGACY_DOC = '''"""The controller-to-broker RPCs of ZooKeeper-era Kafka, frozen at Kafka 3.9.1:
LeaderAndIsr, StopReplica, UpdateMetadata and ControlledShutdown (api keys 4-7).

Kafka 4 removed them; a KRaft controller migrating a ZooKeeper cluster (KIP-866) still sends
the first three to the ZooKeeper-mode brokers, so pykraft's migrating controller builds them
(:mod:`pykraft.migration.propagator`). pykraft never serves or advertises them: they are not
in :data:`pykraft.messages.kafka.API_MESSAGES`, which the servers decode with. Rendered by
``scripts/gen_messages.py`` from ``messages/schemas/legacy_rpc_messages.json``, with the
conventions of :mod:`pykraft.messages.kafka`.
"""'''


def _package_init(
    source: Mapping[str, Any], apis: Mapping[int, str], docstring: str, registry: str
) -> str:
    lines = [
        *_preamble(source, source["directory"], [docstring]),
        "",
        "from __future__ import annotations",
        "",
        f'__all__ = ["{registry}"]',
        "",
        f"{registry}: dict[int, tuple[str, str]] = {{",
        *(f'    {key}: ("{name}", "{snake_case(name)}"),' for key, name in sorted(apis.items())),
        "}",
        '"""Api key -> (Kafka\'s api name, module stem): the classes ``<name>Request`` and',
        "``<name>Response`` live in this package's modules ``<stem>_request`` and",
        '``<stem>_response``."""',
    ]
    return "\n".join(lines) + "\n"


def _structs(
    fields: list[dict[str, Any]], common: Mapping[str, list[dict[str, Any]]]
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Nested structs, innermost first, so each class is defined before it is used: inline
    ones and the message's common structs its fields name."""
    for field in fields:
        name = field["type"].removeprefix("[]")
        if "fields" in field:
            yield from _structs(field["fields"], common)
            yield name, field["fields"]
        elif name in common:
            yield from _structs(common[name], common)
            yield name, common[name]


def _class(name: str, fields: list[dict[str, Any]], decorator: str, keeps: bool) -> list[str]:
    lines = ["", "", decorator, "@dataclass(frozen=True, slots=True)", f"class {name}:"]
    lines += [_field_line(field) for field in fields]
    if keeps:
        lines.append(f"    {_UNKNOWN_TAGS_LINE}")
    return lines if len(lines) > 5 else [*lines, "    pass"]


_UNKNOWN_TAGS_LINE = "unknown_tagged_fields: tuple[TaggedField, ...] = unknown_tags()"


def _field_line(field: dict[str, Any]) -> str:
    kafka_type: str = field["type"]
    element = kafka_type.removeprefix("[]")
    is_array = element != kafka_type
    is_struct = element not in _PYTHON_TYPES
    py_type = element if is_struct else _PYTHON_TYPES[element]
    if element == "records":  # written from any bytes-like value or a splice, read as bytes
        py_type = "bytes | bytearray | memoryview | Splice"
    annotation = f"tuple[{py_type}, ...]" if is_array else py_type
    if "nullableVersions" in field:
        annotation += " | None"
    first = (f"array({element})" if is_array else element) if is_struct else f'"{kafka_type}"'
    args = [first]
    if field["versions"] != "0+":
        args.append(f'versions="{field["versions"]}"')
    if "nullableVersions" in field:
        args.append(f'nullable_versions="{field["nullableVersions"]}"')
    if "tag" in field:
        args += [f"tag={field['tag']}", f'tagged_versions="{field["taggedVersions"]}"']
    if "flexibleVersions" in field:
        args.append(f'flexible_versions="{field["flexibleVersions"]}"')
    default = _default(field, element, is_array or is_struct)
    if default is not None:
        args.append(f"default={default}")
    if field.get("ignorable"):
        args.append("ignorable=True")
    attr = snake_case(field["name"])
    if _camel(attr) != field["name"]:
        args.append(f'name="{field["name"]}"')
    line = f"    {attr}: {annotation} = kafka_field({', '.join(args)})"
    if len(line) <= _WIDTH:
        return line
    inner = f"        {', '.join(args)}"
    if len(inner) > _WIDTH:
        inner = ",\n".join(f"        {arg}" for arg in args) + ","
    return f"    {attr}: {annotation} = kafka_field(\n{inner}\n    )"


def _default(field: dict[str, Any], element: str, compound: bool) -> str | None:
    """``default=`` source when the schema's default is not the type's zero value, else None."""
    text = field.get("default")
    if text is None:
        return None
    if text == "null":
        return "None"
    if compound:
        raise ValueError(f"{field['name']}: arrays and structs take only a null default")
    value: Any
    if element == "bool":
        value = {"true": True, "false": False}[text]
    elif element == "float64":
        value = float(text)
    elif element in ("string", "bytes", "uuid", "records"):
        if text:
            raise ValueError(f"{field['name']}: unsupported {element} default {text!r}")
        return None
    else:
        value = int(text, 0)
    return None if value == 0 else repr(value)  # False and 0.0 are 0 too


def snake_case(name: str) -> str:
    """``LastKnownElr`` -> ``last_known_elr``, ``KRaftVersion`` -> ``k_raft_version``."""
    return _WORD_START.sub("_", name).lower()


def _camel(attr: str) -> str:
    """The Kafka name ``kafka_field`` derives from an attribute (as messages/schema.py)."""
    return "".join(part[:1].upper() + part[1:] for part in attr.split("_"))


def _isort_key(name: str) -> tuple[int, str]:
    """``__all__`` order as ruff's RUF022 wants: constants, then classes."""
    return (0 if name.isupper() else 1, name)


# --- command line ---------------------------------------------------------------------------


def outputs(family: Family, facts: Mapping[str, Any]) -> dict[Path, str]:
    """Path -> text of every module a family's facts render to."""
    if family is RECORDS:
        return {RECORDS_OUTPUT: render_records(facts)}
    package = _package(family)
    return {package / name: text for name, text in render_messages(facts, family).items()}


def _package(family: Family) -> Path:
    return LEGACY_PACKAGE if family is LEGACY else MESSAGES_PACKAGE


def stale_modules(family: Family, facts: Mapping[str, Any]) -> list[Path]:
    """Generated files that differ from what the facts render, or that they no longer render."""
    wanted = outputs(family, facts)
    stale = [path for path, text in wanted.items() if not _same(path, text)]
    if family is not RECORDS:
        stale += sorted(set(_package(family).glob("*.py")) - set(wanted))
    return stale


def _same(path: Path, text: str) -> bool:
    return path.is_file() and path.read_text() == text


def _facts_texts(args: argparse.Namespace) -> dict[Family, str]:
    texts = {LEGACY: _legacy_facts_text(args.legacy_libs)}
    for family in FAMILIES:
        if args.kafka_libs:
            schemas, release = schemas_from_jars(args.kafka_libs, family)
        elif args.git_dir or args.source_dir:
            release = Release(args.release, args.commit)
            schemas = (
                schemas_from_git(args.git_dir, args.commit, family)
                if args.git_dir
                else schemas_from_tree(args.source_dir, family)
            )
        else:
            texts[family] = family.facts.read_text()
            continue
        texts[family] = dump_facts(distil(family, schemas, release))
    return texts


def _legacy_facts_text(libs: Path | None) -> str:
    """The frozen legacy facts: read from Kafka 3.9.1's jars when given, else the file."""
    if libs is None:
        return LEGACY.facts.read_text()
    schemas, release = schemas_from_jars(libs, LEGACY)
    if release.version != LEGACY_RELEASE:
        raise SystemExit(f"the legacy RPCs are frozen at {LEGACY_RELEASE}, not {release.version}")
    return dump_facts(distil(LEGACY, schemas, release))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--kafka-libs", type=Path, help="a Kafka release's libs/ directory")
    source.add_argument("--git-dir", type=Path, help="a Kafka git directory to read schemas from")
    source.add_argument("--source-dir", type=Path, help="a Kafka source tree on disk")
    parser.add_argument("--legacy-libs", type=Path,
                        help=f"Kafka {LEGACY_RELEASE}'s libs/ directory (the legacy RPCs)")
    parser.add_argument("--commit", help="the Kafka commit the schemas are taken from")
    parser.add_argument("--release", help="the Kafka release that commit is")
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = parser.parse_args(argv)
    if (args.git_dir or args.source_dir) and not (args.commit and args.release):
        parser.error("--commit and --release are required with --git-dir or --source-dir")
    stale: list[Path] = []
    for family, facts_text in _facts_texts(args).items():
        facts = json.loads(facts_text)
        if args.check:
            stale += [] if _same(family.facts, facts_text) else [family.facts]
            stale += stale_modules(family, facts)
            continue
        family.facts.parent.mkdir(parents=True, exist_ok=True)
        family.facts.write_text(facts_text)
        wanted = outputs(family, facts)
        for path in stale_modules(family, facts):
            if path in wanted:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(wanted[path])
            else:
                path.unlink()
        print(f"{family.name}: {family.facts.relative_to(ROOT)} and {len(wanted)} module(s)")
    for path in stale:
        print(f"{path.relative_to(ROOT)} is out of date: run {Path(__file__).name}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
