"""PySpark's static discovery hook for pykraft's ``pykraft`` data source (topics of a running
cluster, batch and streaming): with pykraft installed, ``format("pykraft")`` works with no
``register`` call, also from a Spark Connect client (the server's Python finds it).

One module per source: PySpark registers the single ``DefaultSource`` of each top-level
``pyspark_*`` module.
"""

from pykraft.spark.topic_source import PykraftDataSource as DefaultSource

__all__ = ["DefaultSource"]
