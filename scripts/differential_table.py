#!/usr/bin/env python3
"""Run the differential oracle (tests/conformance/test_differential.py: real Kafka beside
pykraft) and print its API x version x listener table, then the counts and reasons.

A cell is the worst outcome over the rows of that API, version and listener: ``same``
(Kafka's answer and pykraft's agree after the normalisation), ``fixed`` (agree, after a fix
the oracle prompted), ``exc`` (differ only where tests/conformance/kafka_differences.py
justifies it from Kafka's source), ``defect`` (differ where it lists a known pykraft defect),
``DIFF`` (differ otherwise: the row failed). ``v-`` is a row about what is not served.
Real clients' captured frames (case ``frame:<file>``, sent to the broker listener) have
cells of their own, under the listener ``client frames``.

Usage: scripts/differential_table.py [extra pytest arguments]
"""

from __future__ import annotations

import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

from conformance_table import run_suite

TARGET = "tests/conformance/test_differential.py"
#: A conformance row, or a client's captured frame (case ``frame:<file>``, on the broker).
ROW = re.compile(r"test_(kafka_and_pykraft_answer_alike|a_client_s_captured_frame_gets_kafka_s"
                 r"_answer)\[(?P<api>[A-Za-z]+)-v(?P<version>\d+)"
                 r"-(?P<case>[^@\]]+)(?P<controller>@controller)?\]")
NOT_SERVED = re.compile(r"test_\w+\[(?P<api>.+)-(?P<listener>broker|controller)\]")
FRAME = "frame:"
RANK = {"same": 0, "fixed": 1, "exc": 2, "defect": 3, "DIFF": 4}
Cell = tuple[str, str, str]  # api, version, listener


def outcome(case: ET.Element) -> tuple[str, str]:
    """(cell mark, reason) of one test case."""
    if case.find("failure") is not None or case.find("error") is not None:
        return "DIFF", ""
    recorded = {p.get("name"): p.get("value", "") for p in case.iter("property")}
    text = recorded.get("differential", "same")
    kind, _, reason = text.partition(": ")
    return {"excepted": "exc"}.get(kind, kind), reason


def cell_of(name: str) -> tuple[Cell, str] | None:
    found = ROW.fullmatch(name)
    if found is not None:
        listener = "controller" if found.group("controller") else "broker"
        if found.group("case") in {"valid_plain", "wrong_password", "unknown_mechanism"}:
            listener = "sasl"
        if found.group("case").startswith(FRAME):
            listener = "client frames"
        return (found.group("api"), found.group("version"), listener), found.group("case")
    other = NOT_SERVED.fullmatch(name)
    if other is not None:
        return (other.group("api"), "-", other.group("listener")), name.split("[", 1)[0]
    return None


def collect(junit: Path) -> tuple[dict[Cell, str], Counter[str], Counter[str]]:
    cells: dict[Cell, str] = defaultdict(lambda: "same")
    rows: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for case in ET.parse(junit).getroot().iter("testcase"):
        where = cell_of(case.get("name", ""))
        if where is None:
            continue
        cell, _case = where
        mark, reason = outcome(case)
        rows[mark] += 1
        if reason:
            for part in reason.split(" | "):
                reasons[f"{mark}: {part}"] += 1
        cells[cell] = max(cells[cell], mark, key=RANK.__getitem__)
    return cells, rows, reasons


def table(cells: dict[Cell, str]) -> list[str]:
    width = max(len(api) for api, _, _ in cells) + 12
    lines = [f"{'API (listener)':<{width}} | cells by version"]
    grouped: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for (api, version, listener), mark in cells.items():
        grouped[(api, listener)][version] = mark
    for (api, listener), versions in sorted(grouped.items()):
        ordered = sorted(versions, key=lambda v: -1 if v == "-" else int(v))
        lines.append(f"{f'{api} ({listener})':<{width}} | "
                     + " ".join(f"v{v}:{versions[v]}" for v in ordered))
    return lines


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "differential.xml"
        status = run_suite(junit, sys.argv[1:], TARGET)
        if not junit.exists():
            print("the suite did not run", file=sys.stderr)
            return status or 1
        cells, rows, reasons = collect(junit)
    print("\n".join(table(cells)))
    print("\nrows: " + ", ".join(f"{mark} {rows[mark]}" for mark in RANK))
    for reason, count in sorted(reasons.items()):
        print(f"  {count:4d} x {reason}")
    return status


if __name__ == "__main__":
    sys.exit(main())
