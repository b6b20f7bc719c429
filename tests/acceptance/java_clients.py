"""Apache Kafka's Java producer and consumer for the acceptance tests, through ClientProbe
(tests/acceptance/java/ClientProbe.java): a message is one tab-separated line of hex key,
hex value and ``hexname=hexvalue`` headers."""

from __future__ import annotations

import subprocess

from broker_harness import Message
from java_admin import ROOT

CLIENT_PROBE = ROOT / "tests" / "acceptance" / "java" / "ClientProbe.java"
PROBE_TIMEOUT_S = 120.0

def encode(message: Message) -> str:
    key, value, headers = message
    return "\t".join([key.hex(), value.hex(),
                      ",".join(f"{k.encode().hex()}={v.hex()}" for k, v in headers)])


def decode(words: list[str]) -> Message:
    headers = tuple((bytes.fromhex(k).decode(), bytes.fromhex(v)) for k, v in
                    (h.split("=") for h in words[2].split(",") if h))
    return bytes.fromhex(words[0]), bytes.fromhex(words[1]), headers


def run_probe(probe: list[str], *args: str, stdin: str = "") -> list[list[str]]:
    """One ClientProbe run; its output lines split at tabs (it must exit 0)."""
    done = subprocess.run([*probe, *args], input=stdin, capture_output=True, text=True,
                          timeout=PROBE_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return [line.split("\t") for line in done.stdout.splitlines()]
