#!/usr/bin/env python3
"""Run the protocol conformance suite and print it as an APIs x versions table.

Each cell is one API at one version, over every case (and listener) of that API:
``ok`` all passed, ``FAIL`` one failed, ``dev`` a known deviation from Kafka (a strict xfail
naming the file and what Kafka does), blank: not advertised. The failing and deviating
rows are listed under the table.

Usage: scripts/conformance_table.py [extra pytest arguments]
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROW_ID = re.compile(r"test_row\[(?P<api>[A-Za-z]+)-v(?P<version>\d+)-(?P<case>[^\]]+)\]")
RANK = {"ok": 0, "dev": 1, "FAIL": 2}


def run_suite(junit: Path, extra: list[str], target: str = "tests/conformance") -> int:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               f"--junitxml={junit}", target, *extra]
    return subprocess.run(command, cwd=ROOT, check=False, stdout=subprocess.DEVNULL).returncode


def outcomes(junit: Path) -> tuple[dict[str, dict[int, str]], list[str]]:
    """Per API, per version, the worst outcome; and the notes of what did not pass."""
    cells: dict[str, dict[int, str]] = defaultdict(dict)
    notes = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        found = ROW_ID.fullmatch(case.get("name", ""))
        if found is None:
            if case.find("failure") is not None or case.find("error") is not None:
                notes.append(f"FAIL {case.get('name')}")
            continue
        outcome = "ok"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "FAIL"
        elif case.find("skipped") is not None:
            outcome = "dev"
        if outcome != "ok":
            skipped = case.find("skipped")
            reason = "" if skipped is None else f": {skipped.get('message', '')}"
            notes.append(f"{outcome} {found.group(0)[9:-1]}{reason}")
        api, version = found.group("api"), int(found.group("version"))
        previous = cells[api].get(version, "ok")
        cells[api][version] = max(previous, outcome, key=RANK.__getitem__)
    return cells, notes


def table(cells: dict[str, dict[int, str]]) -> list[str]:
    versions = range(max(v for row in cells.values() for v in row) + 1)
    width = max(len(api) for api in cells)
    lines = [f"{'API':<{width}} | " + " ".join(f"{f'v{v}':>4}" for v in versions)]
    lines.append("-" * len(lines[0]))
    for api in sorted(cells):
        row = cells[api]
        lines.append(f"{api:<{width}} | " + " ".join(f"{row.get(v, ''):>4}" for v in versions))
    return lines


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        junit = Path(scratch) / "conformance.xml"
        status = run_suite(junit, sys.argv[1:])
        if not junit.exists():
            print("the suite did not run", file=sys.stderr)
            return status or 1
        cells, notes = outcomes(junit)
    print("\n".join(table(cells)))
    if notes:
        print()
        print("\n".join(notes))
    return status


if __name__ == "__main__":
    sys.exit(main())
