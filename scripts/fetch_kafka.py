"""Fetch the pinned Apache Kafka (broker, tools and their runtime jars) from Maven Central.

``scripts/kafka/pom.xml`` pins the version; :mod:`maven_jars` copies its runtime jars, checks
them against ``scripts/kafka/jars.sha256`` and caches them in ``.cache/kafka/<version>/libs``
(classpath in ``.cache/kafka/<version>/classpath``).

Usage: ``python scripts/fetch_kafka.py [--write-sums]``; prints the classpath.
``--write-sums`` (after changing the pom) rewrites jars.sha256 from what Maven fetched.
"""

from __future__ import annotations

import sys
from pathlib import Path

from maven_jars import ROOT, FetchError, PinnedJars, main

__all__ = ["KAFKA", "FetchError", "fetch", "pinned_version"]

KAFKA = PinnedJars(pom=ROOT / "scripts" / "kafka" / "pom.xml",
                   sums=ROOT / "scripts" / "kafka" / "jars.sha256",
                   cache=ROOT / ".cache" / "kafka", version_property="kafka.version")


def pinned_version() -> str:
    """The ``kafka.version`` property of the pom."""
    return KAFKA.pinned_version()


def fetch(*, write_sums: bool = False) -> list[Path]:
    """The pinned Kafka's classpath (jars in name order), fetched unless already cached."""
    return KAFKA.fetch(write_sums=write_sums)


if __name__ == "__main__":
    sys.exit(main(KAFKA, (__doc__ or "").splitlines()[0]))
