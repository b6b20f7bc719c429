"""pykraft on Apache Spark: a ``kraft`` data source, metadata analytics, simulation sweeps.

Importing this package does not import PySpark (an optional extra: ``pip install
pykraft[spark]``); :func:`register` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register(spark: SparkSession) -> None:
    """Register the ``kraft`` data source in ``spark`` (see :mod:`pykraft.spark.source`)."""
    from pykraft.spark.source import register as register_source

    register_source(spark)
