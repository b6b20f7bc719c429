"""Reading the reference run's captures (docs/design/migration-reference/captured/): znode
dumps as the runtime's reads, the metadata log's records and batches, and the legacy RPCs the
ZK brokers received."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykraft.migration.zk_tree import ZkRead

CAPTURED = Path(__file__).resolve().parents[2] / "docs/design/migration-reference/captured"


def znode_dump(name: str) -> dict[str, dict[str, Any]]:
    """``znodes-<phase>.json``: path -> {data, raw, version, cversion, ephemeral}."""
    dump: dict[str, dict[str, Any]] = json.loads((CAPTURED / name).read_text())
    return dump


def reads(dump: dict[str, dict[str, Any]]) -> dict[str, ZkRead]:
    """The dump as the runtime would read it: raw bytes and zkVersion per path."""
    return {path: ZkRead(None if node["raw"] is None else node["raw"].encode("utf-8"),
                         node["version"]) for path, node in dump.items()}


def log_records(name: str) -> dict[int, dict[str, Any]]:
    """``*.records``: offset -> the decoder's JSON of every non-NoOp record."""
    found = {}
    for line in (CAPTURED / name).read_text().splitlines():
        offset, _, text = line.partition(" ")
        found[int(offset)] = json.loads(text)
    return found


def log_batches(name: str) -> list[tuple[int, int]]:
    """``*.batches``: (base offset, last offset) of every batch."""
    return [(int(base), int(last)) for base, last, *_ in
            (line.split() for line in (CAPTURED / name).read_text().splitlines())]


@dataclass(frozen=True)
class LegacyRpc:
    """One legacy controller request a ZK broker's request log shows, with its answer."""

    api_key: int
    api_version: int
    correlation_id: int
    request: dict[str, Any]
    response: dict[str, Any]


def legacy_rpcs(broker: int) -> list[LegacyRpc]:
    """``legacy-rpcs-b<broker>.jsonl``: the first two of each legacy api the broker got from a
    KRaft controller. The capture cut long lines at 3000 characters, inside the trailing
    timings (after ``request`` and ``response``), so each object is read where it starts."""
    found = []
    for line in (CAPTURED / f"legacy-rpcs-b{broker}.jsonl").read_text().splitlines():
        header, request, response = (_json_at(line, key)
                                     for key in ("requestHeader", "request", "response"))
        found.append(LegacyRpc(header["requestApiKey"], header["requestApiVersion"],
                               header["correlationId"], request, response))
    return found


def _json_at(line: str, key: str) -> dict[str, Any]:
    start = line.index(f'"{key}":') + len(key) + 3
    value: dict[str, Any] = json.JSONDecoder().raw_decode(line, start)[0]
    return value
