"""Properties.store compatibility: our writer against the real JDK, when one is installed.

The line order of a Java 17 ``Properties.store`` is ConcurrentHashMap bucket order, which
depends on insertion order, resizes and tree bins; the only trustworthy oracle is a JVM, so
a batch of random and deliberately colliding key sets is sent through ``java``.
"""

from __future__ import annotations

import base64
import itertools
import random
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pykraft.config.properties import parse_properties
from pykraft.java import java_string_hash
from pykraft.storage.java_properties import (
    escape,
    java_date,
    java_store_order,
    store,
)

_JAVA_STORE = """
import java.io.*;
import java.util.*;
public class Store {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        Base64.Decoder dec = Base64.getDecoder();
        String line;
        while ((line = in.readLine()) != null) {
            Properties props = new Properties();
            if (!line.isEmpty()) {
                for (String pair : line.split(" ")) {
                    String[] kv = pair.split(",", -1);
                    props.setProperty(new String(dec.decode(kv[0]), "UTF-8"),
                                      new String(dec.decode(kv[1]), "UTF-8"));
                }
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            props.store(out, "");
            System.out.println(Base64.getEncoder().encodeToString(out.toByteArray()));
        }
    }
}
"""


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")


def _cases() -> list[list[tuple[str, str]]]:
    rng = random.Random(20260130)
    alphabet = "abcxyz.ABC_-019 =:#!\\\t\n\r\fé€\x01\x7f𝄞"
    cases: list[list[tuple[str, str]]] = [[]]
    for size in [1, 3, 5, 11, 12, 13, 20, 40, 100, 200] * 12:
        keys = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10)))
                for _ in range(size)}
        cases.append([(key, "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))))
                      for key in keys])
    for bits in (3, 4, 5, 6, 7):  # "Aa" and "BB" share a hash: 2**bits keys in one bucket
        colliding = ["".join(parts) for parts in itertools.product(["Aa", "BB"], repeat=bits)]
        for _ in range(4):
            mixed = colliding + [f"k{rng.randint(0, 999)}" for _ in range(rng.randint(0, 60))]
            rng.shuffle(mixed)
            cases.append([(key, "v") for key in dict.fromkeys(mixed)])
    return cases


@pytest.mark.skipif(shutil.which("java") is None, reason="no JDK installed")
def test_store_matches_the_jdk(tmp_path: Path) -> None:
    version = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True)
    if 'version "17' not in version.stderr:
        pytest.skip("Properties.store order differs outside Java 17 (Java 18+ sorts keys)")
    source = tmp_path / "Store.java"
    source.write_text(_JAVA_STORE)
    cases = _cases()
    stdin = "".join(" ".join(f"{_b64(k)},{_b64(v)}" for k, v in case) + "\n" for case in cases)
    result = subprocess.run(["java", str(source)], input=stdin, capture_output=True, text=True,
                            check=True, timeout=120)
    outputs = result.stdout.split()
    assert len(outputs) == len(cases)
    moment = datetime(2026, 1, 30, tzinfo=UTC)
    for case, output in zip(cases, outputs, strict=True):
        java_body = base64.b64decode(output).split(b"\n", 2)[2]  # skip comment and date lines
        assert store(case, moment).split(b"\n", 2)[2] == java_body, case


def test_stored_text_parses_back() -> None:
    """(Non-BMP characters are left out: the config reader does not join surrogate escapes.)"""
    for case in _cases()[:40]:
        bmp_only = [(k, v) for k, v in case if "𝄞" not in k + v]
        text = store(bmp_only, datetime(2026, 1, 30, tzinfo=UTC)).decode("latin-1")
        assert parse_properties(text) == dict(bmp_only)


def test_known_values() -> None:
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_store_order(["version", "cluster.id", "node.id", "directory.id"]) == [
        "node.id", "directory.id", "version", "cluster.id"]
    assert java_date(datetime(2026, 1, 30, 16, 43, 51, tzinfo=UTC)) == (
        "Fri Jan 30 16:43:51 UTC 2026")
    assert escape(" a b", is_key=False) == "\\ a b"
    assert escape(" a b", is_key=True) == "\\ a\\ b"
    assert escape("𝄞", is_key=False) == "\\uD834\\uDD1E"
