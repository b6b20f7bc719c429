"""Fetch the pinned Apache Kafka (broker, tools and their runtime jars) from Maven Central.

``scripts/kafka/pom.xml`` pins the version; Maven's dependency plugin copies its runtime jars
(``--strict-checksums``: a jar whose checksum differs from the one published beside it fails
the download) into a scratch directory, and each jar's SHA-256 must then match
``scripts/kafka/jars.sha256``, which also fixes the set of jars (a dependency added or
dropped upstream is an error, not a silent change). The checked jars move into
``.cache/kafka/<version>/libs`` and their classpath is written to
``.cache/kafka/<version>/classpath``; a later run checks the cached jars' sums and returns
at once. One run at a time: a lock file beside the cache serialises concurrent callers
(pytest-xdist workers).

Usage: ``python scripts/fetch_kafka.py [--write-sums]``; prints the classpath.
``--write-sums`` (after changing the pom) rewrites jars.sha256 from what Maven fetched.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "scripts" / "kafka" / "pom.xml"
SUMS = ROOT / "scripts" / "kafka" / "jars.sha256"
CACHE = ROOT / ".cache" / "kafka"
MAVEN_TIMEOUT_S = 900
_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


class FetchError(Exception):
    """Kafka could not be fetched, or what was fetched is not what jars.sha256 pins."""


def pinned_version(pom: Path = POM) -> str:
    """The ``kafka.version`` property of the pom."""
    found = ET.parse(pom).find("m:properties/m:kafka.version", _POM_NS)
    if found is None or not (found.text or "").strip():
        raise FetchError(f"{pom} has no <kafka.version> property")
    return (found.text or "").strip()


def read_sums(path: Path = SUMS) -> dict[str, str]:
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


def check_jars(libs: Path, sums: dict[str, str]) -> None:
    """Exactly the pinned jars, each with its pinned SHA-256."""
    present = {jar.name for jar in libs.glob("*.jar")}
    missing, extra = sorted(sums.keys() - present), sorted(present - sums.keys())
    if missing or extra:
        raise FetchError(f"{libs} does not hold the pinned jars: missing {missing}, "
                         f"unexpected {extra}")
    wrong = [name for name, digest in sorted(sums.items()) if sha256(libs / name) != digest]
    if wrong:
        raise FetchError(f"SHA-256 of {', '.join(wrong)} in {libs} differs from {SUMS.name}")


def _holds(libs: Path, sums: dict[str, str]) -> bool:
    """Whether the cache holds exactly the pinned jars (else the pom or the sums changed
    since it was filled, and it is fetched again)."""
    try:
        check_jars(libs, sums)
    except FetchError:
        return False
    return True


def _maven_copy(into: Path) -> None:
    if shutil.which("mvn") is None:
        raise FetchError("mvn (Maven) is not installed")
    command = ["mvn", "--batch-mode", "--quiet", "--strict-checksums", "-f", str(POM),
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


@contextmanager
def _locked(cache: Path) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fetch(cache: Path = CACHE, *, write_sums: bool = False) -> list[Path]:
    """The pinned Kafka's classpath (jars in name order), fetched unless already cached."""
    version = pinned_version()
    home = cache / version
    libs, classpath_file = home / "libs", home / "classpath"
    with _locked(cache):
        if write_sums or not classpath_file.is_file() or not _holds(libs, read_sums()):
            with tempfile.TemporaryDirectory(prefix="kafka-jars-", dir=cache) as scratch:
                fetched = Path(scratch) / "libs"
                _maven_copy(fetched)
                if write_sums:
                    SUMS.write_text("".join(f"{sha256(jar)}  {jar.name}\n"
                                            for jar in sorted(fetched.glob("*.jar"))))
                check_jars(fetched, read_sums())
                shutil.rmtree(home, ignore_errors=True)
                home.mkdir(parents=True)
                fetched.rename(libs)
            jars = sorted(libs.glob("*.jar"))
            partial = classpath_file.with_suffix(".part")
            partial.write_text(os.pathsep.join(str(jar) for jar in jars) + "\n")
            partial.replace(classpath_file)
        check_jars(libs, read_sums())
        return sorted(libs.glob("*.jar"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--write-sums", action="store_true",
                        help="rewrite jars.sha256 from the jars Maven fetches")
    args = parser.parse_args(argv)
    try:
        jars = fetch(write_sums=args.write_sums)
    except (FetchError, OSError, ET.ParseError) as exc:
        print(f"fetch_kafka: {exc}", file=sys.stderr)
        return 1
    print(os.pathsep.join(str(jar) for jar in jars))
    return 0


if __name__ == "__main__":
    sys.exit(main())
