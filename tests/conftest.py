"""Shared fixtures: paths to the real Kafka 3.7 files copied into the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

KAFKA37 = Path(__file__).parent / "fixtures" / "kafka-3.7-kraft"


@pytest.fixture
def kafka37_dir() -> Path:
    return KAFKA37
