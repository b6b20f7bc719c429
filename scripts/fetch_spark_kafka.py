"""Fetch Apache Spark's Kafka connector (spark-sql-kafka-0-10) and its runtime jars.

``scripts/spark_kafka/pom.xml`` pins the version; :mod:`maven_jars` copies the jars that
PySpark's own ``pyspark/jars`` lacks (the connector, its token provider, kafka-clients,
commons-pool2), checks them against ``scripts/spark_kafka/jars.sha256`` and caches them in
``.cache/spark-kafka/<version>/libs``; hand them to Spark with ``spark.jars``
(:func:`pykraft.spark.session.spark_session`'s ``jars``).

Version note: 4.2.0, not PySpark's 4.3.0: Maven Central as reachable here served neither
spark-sql-kafka-0-10_2.13 4.3.0 nor 4.3.1 (tried again 2026-11-29 while writing this script:
``mvn dependency:get -Dartifact=org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0`` ->
"Could not find artifact"). Bump ``spark.kafka.version`` and run ``--write-sums`` once it is.

Usage: ``python scripts/fetch_spark_kafka.py [--write-sums]``; prints the classpath.
"""

from __future__ import annotations

import sys
from pathlib import Path

from maven_jars import ROOT, FetchError, PinnedJars, main

__all__ = ["SPARK_KAFKA", "FetchError", "fetch"]

SPARK_KAFKA = PinnedJars(pom=ROOT / "scripts" / "spark_kafka" / "pom.xml",
                         sums=ROOT / "scripts" / "spark_kafka" / "jars.sha256",
                         cache=ROOT / ".cache" / "spark-kafka",
                         version_property="spark.kafka.version")


def fetch(*, write_sums: bool = False) -> list[Path]:
    """The connector's classpath (jars in name order), fetched unless already cached."""
    return SPARK_KAFKA.fetch(write_sums=write_sums)


if __name__ == "__main__":
    sys.exit(main(SPARK_KAFKA, (__doc__ or "").splitlines()[0]))
