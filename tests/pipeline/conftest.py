"""The pipeline of examples/pipeline run as its users run it (issue 28, item 5): on
``local[2]`` with the job SIGKILLed and restarted, on a standalone Spark cluster, and
through Spark Connect. Each run starts a pykraft cluster and Spark's own JVMs, minutes on a
2-core machine, so these run in ``make test-pipeline`` (CI runs it after `make test`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark"))
from kafka_connector import connector_jars, require_connector


@pytest.fixture(scope="session")
def connector() -> list[Path]:
    """Spark's Kafka connector's jars (skipped off CI without them, a failure in CI)."""
    require_connector()
    jars = connector_jars()
    assert not isinstance(jars, str)
    return [Path(jar) for jar in jars]
