"""The pinned Apache Kafka for the oracle tests, fetched once per test process.

It is fetched into ``.cache/kafka`` (``scripts/fetch_kafka.py``, what ``make kafka`` runs; at
once when cached) when the first oracle module is collected. Off CI, a Kafka that cannot be
fetched skips each oracle module with one line saying why (:func:`skip_module_off_ci`, called
at a module's top); in CI (``CI=true``) the ``kafka`` fixture fails every test that needs it,
and the other tests still run.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import pytest
from oracle_cluster import KAFKA, ClusterSpec, KafkaInstall, Kind, OracleCluster, running

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import fetch_kafka


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@cache
def fetched() -> KafkaInstall | str:
    """The pinned Kafka, or why it could not be had."""
    version = fetch_kafka.pinned_version()
    try:
        if shutil.which("java") is None:
            raise fetch_kafka.FetchError("java is not installed")
        return KafkaInstall(version, tuple(fetch_kafka.fetch()))
    except (fetch_kafka.FetchError, OSError) as exc:
        return (f"Apache Kafka {version} is not in .cache/kafka and could not be fetched "
                f"(`make kafka`): {exc}")


def skip_module_off_ci() -> None:
    """Skip the calling test module, off CI, when Kafka cannot be had."""
    why = fetched()
    if isinstance(why, str) and not in_ci():
        pytest.skip(f"{why} [oracle tests skip off CI; with CI=true they fail]",
                    allow_module_level=True)


def required() -> KafkaInstall:
    """The pinned Kafka; a failed test when it cannot be had (only in CI: see above)."""
    found = fetched()
    if isinstance(found, str):
        pytest.fail(f"{found} [CI=true: the oracle tests must run]", pytrace=False)
    return found


@contextmanager
def cluster_of(kind: Kind, base: Path, spec: ClusterSpec) -> Iterator[OracleCluster]:
    """``spec``'s cluster, running, for a test run on pykraft's and on Kafka's side by side
    (``kind`` the fixture's parameter): Kafka's skips off CI when Kafka cannot be had, and
    fails with CI=true."""
    kafka = fetched()
    if kind == KAFKA and isinstance(kafka, str):
        if not in_ci():
            pytest.skip(f"{kafka} [skips off CI; with CI=true it fails]")
        pytest.fail(f"{kafka} [CI=true: the test must run]", pytrace=False)
    with running(base, None if isinstance(kafka, str) else kafka, spec) as (made,):
        yield made
