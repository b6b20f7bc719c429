"""Fetch Kafka Streams (kafka-streams and RocksDB's JNI jar) for the exactly-once test.

``scripts/kafka_streams/pom.xml`` pins the version, which must be the pinned Kafka's
(``scripts/kafka/pom.xml``); :mod:`maven_jars` copies the jars the application needs beyond
Kafka's own, checks them against ``scripts/kafka_streams/jars.sha256`` and caches them in
``.cache/kafka-streams/<version>/libs``. A Streams application runs on Kafka's classpath
(``scripts/fetch_kafka.py``) plus these.

Usage: ``python scripts/fetch_kafka_streams.py [--write-sums]``; prints the classpath.
"""

from __future__ import annotations

import sys
from pathlib import Path

import fetch_kafka
from maven_jars import ROOT, FetchError, PinnedJars, main

__all__ = ["KAFKA_STREAMS", "FetchError", "fetch"]

KAFKA_STREAMS = PinnedJars(pom=ROOT / "scripts" / "kafka_streams" / "pom.xml",
                           sums=ROOT / "scripts" / "kafka_streams" / "jars.sha256",
                           cache=ROOT / ".cache" / "kafka-streams",
                           version_property="kafka.version")


def check_versions() -> None:
    """The two poms pin one Kafka version (a FetchError if not)."""
    streams, kafka = KAFKA_STREAMS.pinned_version(), fetch_kafka.pinned_version()
    if streams != kafka:
        raise FetchError(f"{KAFKA_STREAMS.pom} pins Kafka {streams}, "
                         f"{fetch_kafka.KAFKA.pom} {kafka}: they must agree")


def fetch(*, write_sums: bool = False) -> list[Path]:
    """Kafka Streams' jars (in name order), fetched unless already cached."""
    check_versions()
    return KAFKA_STREAMS.fetch(write_sums=write_sums)


if __name__ == "__main__":
    try:
        check_versions()
    except FetchError as exc:
        print(f"fetch_kafka_streams: {exc}", file=sys.stderr)
        sys.exit(1)
    sys.exit(main(KAFKA_STREAMS, (__doc__ or "").splitlines()[0]))
