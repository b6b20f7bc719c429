"""A session-scoped local SparkSession for the tests marked ``spark`` (``-m spark`` selects
them, ``-m 'not spark'`` skips them); skipped when PySpark or Java is missing.

The session carries Spark's Kafka connector (``spark.jars``) when it is cached in
``.cache/spark-kafka`` or can be fetched (``scripts/fetch_spark_kafka.py``, what ``make
spark-kafka`` runs; :mod:`kafka_connector`): a JVM's jars are fixed when the session starts,
so every test module shares the one session with the connector.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from cluster_history import write_cluster
from kafka_connector import connector_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "spark: needs a local Spark (Java + pyspark)")
    config.addinivalue_line("markers", "integration: starts real pykraft server processes")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("no Java runtime")
    from pyspark.sql import SparkSession

    from pykraft.spark import register
    from pykraft.tools.local_cluster import free_ports

    # Python workers are started by the JVM: they must run this interpreter (pyarrow,
    # pykraft) and cannot see pytest's sys.path edits.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # A Spark Connect endpoint in the same JVM, for the tests of what Connect clients see
    # (a second JVM would cost as much as this session).
    (connect_port,) = free_ports(1)
    builder = SparkSession.builder
    connector = connector_jars()
    if not isinstance(connector, str):
        builder = builder.config("spark.jars", ",".join(str(jar) for jar in connector))
    session = (builder.master("local[2]").appName("pykraft-tests")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
               .config("spark.connect.grpc.binding.address", "127.0.0.1")
               .config("spark.connect.grpc.binding.port", str(connect_port))
               .config("spark.local.dir", str(tmp_path_factory.mktemp("spark-local")))
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated 3-node cluster history of :mod:`cluster_history`."""
    base: Path = write_cluster(tmp_path_factory.mktemp("history") / "demo-cluster")
    return base


@pytest.fixture
def remote(spark: SparkSession) -> Iterator[ConnectSession]:
    """A Spark Connect client session of the ``spark`` fixture's server (no ``register``:
    what a Connect client gets from discovery alone)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    port = spark.sparkContext.getConf().get("spark.connect.grpc.binding.port")
    session = ConnectSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    yield session
    session.stop()  # this client's session only; the server stays with ``spark``
