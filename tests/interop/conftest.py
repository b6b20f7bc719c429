"""Mixed clusters (issue 26): Apache Kafka and pykraft nodes in one cluster, on real processes.

These tests reuse the oracle harness (``tests/oracle/oracle_cluster.py``: a cluster named by
its members' kinds, formatted and started on 127.0.0.1) and the pinned Kafka it fetches.
They run in ``make test-interop``, not in ``make test``: each starts clusters of several
JVMs, too long for ``make test``'s 30 minutes on a 2-core machine; CI runs both.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))
from oracle_cluster import KafkaInstall
from oracle_kafka import required


@pytest.fixture(scope="session")
def kafka() -> KafkaInstall:
    """The pinned Kafka's version and classpath (``tests/oracle/oracle_kafka.py``)."""
    return required()
