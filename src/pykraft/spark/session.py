"""One way to get a SparkSession for pykraft's jobs: local, a cluster master, or Connect.

The jobs only use the DataFrame API (the data source, ``range().mapInArrow``, Parquet), so
the same code runs in all three; this module hides the set-up differences: Python workers
must run this interpreter locally, and remote executors need pykraft shipped to them.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # .../pykraft


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def spark_session(master: str | None = None, remote: str | None = None, *,
                  app_name: str = "pykraft", jars: Sequence[str | Path] = ()) -> SparkSession:
    """A session on ``remote`` (``sc://host:15002``), else ``master`` (default ``local[*]``,
    or ``SPARK_REMOTE`` when set), with the ``kraft`` source registered and pykraft
    importable by every Python worker.

    ``jars`` go on the new session's ``spark.jars`` (e.g. Spark's Kafka connector, which
    ``make spark-kafka`` fetches): a JVM's classpath is fixed when the session starts, so
    they cannot be added to a running one, nor through Spark Connect (the server's own
    ``spark.jars`` decide there)."""
    from pyspark.sql import SparkSession

    from pykraft.spark.source import register

    remote = remote or os.environ.get("SPARK_REMOTE")
    master = master or DEFAULT_MASTER
    builder = SparkSession.builder.appName(app_name)
    if remote:
        if jars:
            raise ValueError("jars cannot be added through Spark Connect: give them to the "
                             "Connect server's spark.jars")
        spark = builder.remote(remote).getOrCreate()
    else:
        if is_local(master):
            # Workers otherwise run `python3` from PATH, which may lack pyarrow and pykraft.
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            builder = (builder.config("spark.driver.host", "127.0.0.1")
                       .config("spark.driver.bindAddress", "127.0.0.1")
                       .config("spark.sql.shuffle.partitions", "8"))
        if jars:
            builder = builder.config("spark.jars", ",".join(str(jar) for jar in jars))
        spark = (builder.master(master)
                 .config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.session.timeZone", "UTC")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
    if remote or not is_local(master):
        ship_pykraft(spark)
    register(spark)
    return spark


def ship_pykraft(spark: SparkSession) -> None:
    """Send pykraft (and its discovery hook) to the executors as a zip on their sys.path.

    Only pure-Python code travels this way; the executors' Python still needs pykraft's
    compiled dependencies and pyarrow (see docs/spark.md for shipping a whole venv).
    """
    staging = Path(tempfile.mkdtemp(prefix="pykraft-ship-"))
    archive = staging / "pykraft.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        for package in (_PACKAGE_ROOT, _PACKAGE_ROOT.parent / "pyspark_kraft"):
            for path in sorted(package.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    out.write(path, path.relative_to(package.parent))
    spark.addArtifacts(str(archive), pyfile=True)
