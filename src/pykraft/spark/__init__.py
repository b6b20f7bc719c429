"""pykraft on Apache Spark: ``kraft`` and ``kafka-segments`` data sources, metadata analytics,
simulation sweeps.

Importing this package does not import PySpark (an optional extra: ``pip install
pykraft[spark]``); :func:`register` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(spark: SparkSession) -> None:
    """Register the ``kraft`` data source (:mod:`pykraft.spark.source`) and the
    ``kafka-segments`` one (:mod:`pykraft.spark.segment_source`) in ``spark``."""
    from pykraft.spark.segment_source import KafkaSegmentsDataSource
    from pykraft.spark.source import register as register_source

    register_source(spark)
    spark.dataSource.register(KafkaSegmentsDataSource)
