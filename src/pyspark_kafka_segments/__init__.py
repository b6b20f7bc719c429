"""PySpark's static discovery hook for pykraft's ``kafka-segments`` data source.

PySpark registers the ``DefaultSource`` of every top-level ``pyspark_*`` module, one per
module, so this sits beside :mod:`pyspark_kraft`: with pykraft installed,
``format("kafka-segments")`` works with no ``register`` call (``pushdown=true`` then also
needs ``spark.sql.python.filterPushdown.enabled=true``).
"""

from pykraft.spark.segment_source import KafkaSegmentsDataSource as DefaultSource

__all__ = ["DefaultSource"]
