"""PySpark's static discovery hook for pykraft's ``kraft`` data source.

At its first data-source lookup, PySpark imports every top-level ``pyspark_*`` module and
registers its ``DefaultSource``; so with pykraft installed, ``format("kraft")`` works with no
``register`` call (the option ``pushdown=true`` then also needs
``spark.sql.python.filterPushdown.enabled=true``).
"""

from pykraft.spark.source import KRaftDataSource as DefaultSource

__all__ = ["DefaultSource"]
