"""Generate pykraft's KRaft metadata record classes from Kafka's record schemas.

Kafka declares each metadata record in ``metadata/src/main/resources/common/metadata/*.json``
and generates its Java classes from them. This script does the same in two steps, so the
classes can be regenerated (and checked) without a Kafka checkout:

1. distil the schema files into the facts file ``src/pykraft/records/schemas/
   metadata_records.json``: per record its name, api key, versions and fields (name, type,
   versions, nullable and tagged versions, tag, default, nested fields), no prose;
2. render the facts file into ``src/pykraft/records/metadata_records.py``.

The facts name the Kafka release they describe (4.4.0) and its commit as Kafka's jars record
it (``kafka/kafka-version.properties``: 16 hex digits). The 4.4.0 changes (RegisterBrokerRecord
v4 and BrokerRegistrationChangeRecord v3's CordonedLogDirs, ClearElrRecord,
UnregisterControllerRecord) were checked field by field, version by version, against the
release's compiled record classes (their ``SCHEMAS`` and default instances).

Usage::

    python scripts/gen_messages.py --git-dir KAFKA_GIT_DIR --commit SHA
    python scripts/gen_messages.py --schema-dir DIR --commit SHA  # files on disk
    python scripts/gen_messages.py           # the module from the facts file alone
    python scripts/gen_messages.py --check   # exit 1 when the module is out of date
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FACTS = ROOT / "src/pykraft/records/schemas/metadata_records.json"
OUTPUT = ROOT / "src/pykraft/records/metadata_records.py"
SCHEMA_DIR = "metadata/src/main/resources/common/metadata"
_WIDTH = 100
_COMMENT = re.compile(r"^\s*//.*$", re.M)  # Kafka's schema files are JSON with // comments
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_FACT_KEYS = ("name", "type", "versions", "nullableVersions", "tag", "taggedVersions", "default")
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


# --- step 1: schema files -> facts ----------------------------------------------------------


def schemas_from_git(git_dir: Path, commit: str) -> dict[str, str]:
    """File name -> text of every ``*Record.json`` in Kafka's schema directory at a commit."""
    names = _git(git_dir, "ls-tree", "--name-only", commit, SCHEMA_DIR + "/").split()
    return {
        Path(name).name: _git(git_dir, "show", f"{commit}:{name}")
        for name in names
        if name.endswith("Record.json")
    }


def schemas_from_dir(directory: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(directory.glob("*Record.json"))}


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
    ).stdout


def distil(schemas: Mapping[str, str], commit: str) -> dict[str, Any]:
    """The facts of every metadata record schema, ordered by api key."""
    records = []
    for text in schemas.values():
        schema = json.loads(_COMMENT.sub("", text))
        if schema.get("type") != "metadata":
            continue
        records.append({
            "name": schema["name"],
            "apiKey": schema["apiKey"],
            "validVersions": schema["validVersions"],
            "flexibleVersions": schema["flexibleVersions"],
            "fields": [_field_facts(field) for field in schema["fields"]],
        })
    records.sort(key=lambda record: record["apiKey"])
    return {
        "source": {"repository": "apache/kafka", "commit": commit, "directory": SCHEMA_DIR},
        "records": records,
    }


def _field_facts(field: Mapping[str, Any]) -> dict[str, Any]:
    facts = {key: field[key] for key in _FACT_KEYS if key in field}
    if "tag" in facts:
        facts["tag"] = int(facts["tag"])  # some schemas write the tag as a string
    if "fields" in field:
        facts["fields"] = [_field_facts(child) for child in field["fields"]]
    return facts


def dump_facts(facts: Mapping[str, Any]) -> str:
    """The facts as JSON with one line per field, so a schema change is a one-line diff."""
    lines = ["{", f'  "source": {_one_line(facts["source"])},', '  "records": [']
    for i, record in enumerate(facts["records"]):
        head = {key: value for key, value in record.items() if key != "fields"}
        lines.append(f"    {_one_line(head)[:-1]}, \"fields\": [")
        lines.extend(_dump_fields(record["fields"], "      "))
        lines.append("    ]}" + ("," if i + 1 < len(facts["records"]) else ""))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


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


# --- step 2: facts -> Python module ---------------------------------------------------------


def render(facts: Mapping[str, Any]) -> str:
    """The generated module's text."""
    source = facts["source"]
    body: list[str] = []
    registry: list[str] = []
    names: list[str] = []
    structs: dict[str, list[dict[str, Any]]] = {}
    for record in facts["records"]:
        for name, fields in _structs(record["fields"]):
            if structs.setdefault(name, fields) != fields:
                raise ValueError(f"two different structs are named {name}")
            body += _class(name, fields, "@message()")
            names.append(name)
        decorator = (
            f'@message(versions="{record["validVersions"]}", '
            f'flexible="{record["flexibleVersions"]}")'
        )
        body += _class(record["name"], record["fields"], decorator)
        names.append(record["name"])
        enum_name = snake_case(record["name"]).upper()
        registry.append(f'    ({record["apiKey"]}, "{enum_name}", {record["name"]}),')
    text = "\n".join(body)
    imports = ["import uuid"] if "uuid.UUID" in text else []
    schema_names = "array, kafka_field, message" if "array(" in text else "kafka_field, message"
    exported = sorted([*names, "RECORD_CLASSES"], key=_isort_key)
    lines = [
        "# Generated by scripts/gen_messages.py from Kafka",
        f"# {source['repository']}@{source['commit']}",
        f"# ({source['directory']}); do not edit.",
        '"""KRaft metadata records: one ``@message`` dataclass per Kafka record schema.',
        "",
        "Fields are in wire order, named as the schema names them in snake case. The facts come",
        "from ``records/schemas/metadata_records.json``; framing and decoding live in",
        ":mod:`pykraft.records.metadata`.",
        '"""',
        "",
        "# kafka_field() returns a dataclasses.Field, which ruff cannot see for uuid-typed fields:",
        "# ruff: noqa: RUF009",
        "",
        "from __future__ import annotations",
        "",
        *imports,
        "from dataclasses import dataclass",
        "",
        f"from pykraft.messages import {schema_names}",
        "",
        "__all__ = [",
        *(f'    "{name}",' for name in exported),
        "]",
        text,
        "",
        "",
        "RECORD_CLASSES: tuple[tuple[int, str, type], ...] = (",
        *registry,
        ")",
        '"""(api key, Kafka\'s ``MetadataRecordType`` name, class) of every record, by api key."""',
    ]
    return "\n".join(lines) + "\n"


def _structs(fields: list[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Nested structs, innermost first, so each class is defined before it is used."""
    for field in fields:
        if "fields" in field:
            yield from _structs(field["fields"])
            yield field["type"].removeprefix("[]"), field["fields"]


def _class(name: str, fields: list[dict[str, Any]], decorator: str) -> list[str]:
    lines = ["", "", decorator, "@dataclass(frozen=True, slots=True)", f"class {name}:"]
    lines += [_field_line(field) for field in fields] or ["    pass"]
    return lines


def _field_line(field: dict[str, Any]) -> str:
    kafka_type: str = field["type"]
    element = kafka_type.removeprefix("[]")
    is_array = element != kafka_type
    is_struct = "fields" in field
    py_type = element if is_struct else _PYTHON_TYPES[element]
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
    default = _default(field, element, is_array or is_struct)
    if default is not None:
        args.append(f"default={default}")
    attr = snake_case(field["name"])
    if _camel(attr) != field["name"]:
        args.append(f'name="{field["name"]}"')
    line = f"    {attr}: {annotation} = kafka_field({', '.join(args)})"
    if len(line) <= _WIDTH:
        return line
    inner = f"        {', '.join(args)}"
    if len(inner) > _WIDTH:
        raise ValueError(f"{field['name']}: field declaration too long to wrap")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--git-dir", type=Path, help="a Kafka git directory to read schemas from")
    source.add_argument("--schema-dir", type=Path, help="a directory of Kafka schema files")
    parser.add_argument("--commit", help="the Kafka commit the schemas are taken from")
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = parser.parse_args(argv)
    if (args.git_dir or args.schema_dir) and not args.commit:
        parser.error("--commit is required with --git-dir or --schema-dir")
    if args.git_dir:
        facts_text = dump_facts(distil(schemas_from_git(args.git_dir, args.commit), args.commit))
    elif args.schema_dir:
        facts_text = dump_facts(distil(schemas_from_dir(args.schema_dir), args.commit))
    else:
        facts_text = FACTS.read_text()
    module_text = render(json.loads(facts_text))
    if args.check:
        stale = [p for p, t in ((FACTS, facts_text), (OUTPUT, module_text)) if p.read_text() != t]
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run {Path(__file__).name}")
        return 1 if stale else 0
    FACTS.parent.mkdir(parents=True, exist_ok=True)
    FACTS.write_text(facts_text)
    OUTPUT.write_text(module_text)
    print(f"wrote {FACTS.relative_to(ROOT)} and {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
