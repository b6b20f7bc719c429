"""ZooKeeper to KRaft migration end to end (issue 32), on real processes: ZooKeeper 3.8.4 and
Kafka 3.9.1 (``zk_cluster.py``), several JVMs per test, so in ``make test-migration``, not in
``make test``. The harness reuses the integration tests' bounded waits
(``tests/integration/process_harness.py``), the oracle tests' CI rule
(``tests/oracle/oracle_kafka.py``) and the pinned jars' fetcher (``scripts/fetch_kafka_zk.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
for helpers in (TESTS / "integration", TESTS / "oracle", TESTS.parent / "scripts"):
    sys.path.insert(0, str(helpers))
