"""pykraft on Apache Spark: ``kraft``, ``kafka-segments`` and ``pykraft`` (topics of a running
cluster, batch and streaming) data sources, metadata analytics, simulation sweeps.

Importing this package does not import PySpark (an optional extra: ``pip install
pykraft[spark]``); :func:`register` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(spark: SparkSession) -> None:
    """Register the ``kraft`` data source (:mod:`pykraft.spark.source`), the
    ``kafka-segments`` one (:mod:`pykraft.spark.segment_source`) and ``pykraft``
    (:mod:`pykraft.spark.topic_source`) in ``spark``."""
    from pykraft.spark.segment_source import KafkaSegmentsDataSource
    from pykraft.spark.source import register as register_source
    from pykraft.spark.topic_source import PykraftDataSource

    register_source(spark)
    spark.dataSource.register(KafkaSegmentsDataSource)
    spark.dataSource.register(PykraftDataSource)
