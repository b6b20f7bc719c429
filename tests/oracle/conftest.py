"""Fixtures of the oracle tests, which run real Apache Kafka beside pykraft."""

from __future__ import annotations

import pytest
from oracle_cluster import KafkaInstall
from oracle_kafka import required


@pytest.fixture(scope="session")
def kafka() -> KafkaInstall:
    """The pinned Kafka's version and classpath (:mod:`oracle_kafka`)."""
    return required()
