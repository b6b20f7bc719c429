"""Spark's Kafka connector for the tests: fetched once per test process, or why not.

``scripts/fetch_spark_kafka.py`` (what ``make spark-kafka`` runs) fetches it into
``.cache/spark-kafka``, at once when cached. The shared session (conftest.py) takes its jars
when they can be had; the connector's tests skip off CI saying why, and fail with
``CI=true`` (CI fetches it before the tests).
"""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import fetch_spark_kafka


@cache
def connector_jars() -> list[Path] | str:
    """The connector's jars, or why they could not be had."""
    try:
        jars: list[Path] = fetch_spark_kafka.fetch()
    except (fetch_spark_kafka.FetchError, OSError) as exc:
        return (f"Spark's Kafka connector is not in .cache/spark-kafka and could not be "
                f"fetched (`make spark-kafka`): {exc}")
    return jars


def require_connector() -> None:
    """Skip the calling module (off CI) or fail it (``CI=true``) without the connector."""
    found = connector_jars()
    if isinstance(found, str):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{found} [CI=true: the connector tests must run]", pytrace=False)
        pytest.skip(f"{found} [skipped off CI; with CI=true they fail]")
