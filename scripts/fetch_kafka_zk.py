"""Fetch Apache Kafka 3.9 (ZooKeeper mode, and ZooKeeper 3.8 itself) for the migration tests.

``scripts/kafka_zk/pom.xml`` pins the version; :mod:`maven_jars` copies its runtime jars,
checks them against ``scripts/kafka_zk/jars.sha256`` and caches them in
``.cache/kafka-zk/<version>/libs``. Kafka 4 has no ZooKeeper mode, so the ZooKeeper-to-KRaft
migration (issue 32) runs Kafka 3.9's ZooKeeper-mode brokers, and its KRaft controllers as the
reference, from these jars.

Usage: ``python scripts/fetch_kafka_zk.py [--write-sums]``; prints the classpath.
"""

from __future__ import annotations

import sys
from pathlib import Path

from maven_jars import ROOT, FetchError, PinnedJars, main

__all__ = ["KAFKA_ZK", "FetchError", "fetch"]

KAFKA_ZK = PinnedJars(pom=ROOT / "scripts" / "kafka_zk" / "pom.xml",
                      sums=ROOT / "scripts" / "kafka_zk" / "jars.sha256",
                      cache=ROOT / ".cache" / "kafka-zk", version_property="kafka.version")


def fetch(*, write_sums: bool = False) -> list[Path]:
    """Kafka 3.9's classpath (jars in name order), fetched unless already cached."""
    return KAFKA_ZK.fetch(write_sums=write_sums)


if __name__ == "__main__":
    sys.exit(main(KAFKA_ZK, (__doc__ or "").splitlines()[0]))
