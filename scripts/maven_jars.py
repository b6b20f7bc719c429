"""Fetch a pom's pinned runtime jars from Maven Central into ``.cache/``, checked by SHA-256.

A :class:`PinnedJars` names a pom (its ``<properties>`` pin the version), a sums file and a
cache directory. Maven's dependency plugin copies the pom's runtime jars
(``--strict-checksums``: a jar whose checksum differs from the one published beside it fails
the download) into a scratch directory, and each jar's SHA-256 must then match the sums file,
which also fixes the set of jars (a dependency added or dropped upstream is an error, not a
silent change). The checked jars move into ``<cache>/<version>/libs`` and their classpath is
written to ``<cache>/<version>/classpath``; a later run checks the cached jars' sums and
returns at once. One run at a time: a lock file beside the cache serialises concurrent
callers (pytest-xdist workers).

Used by ``fetch_kafka.py`` (Apache Kafka for the oracle tests) and ``fetch_spark_kafka.py``
(Spark's Kafka connector).
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAVEN_TIMEOUT_S = 900
_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


class FetchError(Exception):
    """The jars could not be fetched, or what was fetched is not what the sums file pins."""


def read_sums(path: Path) -> dict[str, str]:
    """jar name -> SHA-256 hex, from ``sha256sum``-style lines."""
    sums: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            digest, _, name = line.partition("  ")
            sums[name.strip()] = digest.strip()
    return sums


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_jars(libs: Path, sums: dict[str, str], sums_name: str) -> None:
    """Exactly the pinned jars, each with its pinned SHA-256."""
    present = {jar.name for jar in libs.glob("*.jar")}
    missing, extra = sorted(sums.keys() - present), sorted(present - sums.keys())
    if missing or extra:
        raise FetchError(f"{libs} does not hold the pinned jars: missing {missing}, "
                         f"unexpected {extra}")
    wrong = [name for name, digest in sorted(sums.items()) if sha256(libs / name) != digest]
    if wrong:
        raise FetchError(f"SHA-256 of {', '.join(wrong)} in {libs} differs from {sums_name}")


@contextmanager
def _locked(cache: Path) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class PinnedJars:
    """One pom's runtime jars: where the pin, the sums and the cache are."""

    pom: Path
    sums: Path
    cache: Path
    version_property: str

    def pinned_version(self) -> str:
        """The pom's version property."""
        found = ET.parse(self.pom).find(f"m:properties/m:{self.version_property}", _POM_NS)
        if found is None or not (found.text or "").strip():
            raise FetchError(f"{self.pom} has no <{self.version_property}> property")
        return (found.text or "").strip()

    def _check(self, libs: Path) -> None:
        check_jars(libs, read_sums(self.sums), self.sums.name)

    def _holds(self, libs: Path) -> bool:
        """Whether the cache holds exactly the pinned jars (else the pom or the sums changed
        since it was filled, and it is fetched again)."""
        try:
            self._check(libs)
        except FetchError:
            return False
        return True

    def _maven_copy(self, into: Path) -> None:
        if shutil.which("mvn") is None:
            raise FetchError("mvn (Maven) is not installed")
        command = ["mvn", "--batch-mode", "--quiet", "--strict-checksums", "-f", str(self.pom),
                   "dependency:copy-dependencies", f"-DoutputDirectory={into}",
                   "-DincludeScope=runtime"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False,
                                  timeout=MAVEN_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise FetchError(f"mvn did not finish within {MAVEN_TIMEOUT_S} s") from None
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip().splitlines()
            errors = [line for line in output if "ERROR" in line][:5] or output[-5:]
            raise FetchError("mvn dependency:copy-dependencies failed: " + " / ".join(errors))

    def fetch(self, *, write_sums: bool = False) -> list[Path]:
        """The pinned classpath (jars in name order), fetched unless already cached."""
        home = self.cache / self.pinned_version()
        libs, classpath_file = home / "libs", home / "classpath"
        with _locked(self.cache):
            if write_sums or not classpath_file.is_file() or not self._holds(libs):
                with tempfile.TemporaryDirectory(prefix="jars-", dir=self.cache) as scratch:
                    fetched = Path(scratch) / "libs"
                    self._maven_copy(fetched)
                    if write_sums:
                        self.sums.write_text("".join(f"{sha256(jar)}  {jar.name}\n"
                                                     for jar in sorted(fetched.glob("*.jar"))))
                    self._check(fetched)
                    shutil.rmtree(home, ignore_errors=True)
                    home.mkdir(parents=True)
                    fetched.rename(libs)
                jars = sorted(libs.glob("*.jar"))
                partial = classpath_file.with_suffix(".part")
                partial.write_text(os.pathsep.join(str(jar) for jar in jars) + "\n")
                partial.replace(classpath_file)
            self._check(libs)
            return sorted(libs.glob("*.jar"))


def main(pinned: PinnedJars, description: str, argv: list[str] | None = None) -> int:
    """The command line of a fetch script: prints the classpath, or why it failed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--write-sums", action="store_true",
                        help=f"rewrite {pinned.sums.name} from the jars Maven fetches")
    args = parser.parse_args(argv)
    try:
        jars = pinned.fetch(write_sums=args.write_sums)
    except (FetchError, OSError, ET.ParseError) as exc:
        print(f"{Path(sys.argv[0]).stem}: {exc}", file=sys.stderr)
        return 1
    print(os.pathsep.join(str(jar) for jar in jars))
    return 0
