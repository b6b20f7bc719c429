"""The oracle tests run real Apache Kafka beside pykraft; this brings Kafka.

``kafka`` fetches the pinned Kafka into ``.cache/kafka`` (``scripts/fetch_kafka.py``, what
``make kafka`` runs; at once when cached). In CI (``CI=true``) a Kafka that cannot be
fetched fails the tests that need it; elsewhere they skip, with one line saying why.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from oracle_cluster import KafkaInstall

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import fetch_kafka


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="session")
def kafka() -> KafkaInstall:
    """The pinned Kafka's version and classpath."""
    version = fetch_kafka.pinned_version()
    try:
        if shutil.which("java") is None:
            raise fetch_kafka.FetchError("java is not installed")
        jars = fetch_kafka.fetch()
    except (fetch_kafka.FetchError, OSError) as exc:
        why = (f"Apache Kafka {version} is not in .cache/kafka and could not be fetched "
               f"(`make kafka`): {exc}")
        if in_ci():
            pytest.fail(f"{why} [CI=true: the oracle tests must run]", pytrace=False)
        pytest.skip(f"{why} [skipped off CI; with CI=true this fails]")
    return KafkaInstall(version, tuple(jars))
