"""One-time test setup shared by pytest-xdist workers.

Each worker runs the session fixtures that install kcat, a JDK or the pinned kafka-clients
jar; apt-get and the jar cache must not be driven by two workers at once, so each install
runs under an exclusive lock on a file beside the system's temporary files. The second
worker waits, then finds the tool installed and does nothing.
"""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(name: str) -> Iterator[None]:
    """Hold the machine-wide lock ``name`` for the duration of the block."""
    path = Path(tempfile.gettempdir()) / f"pykraft-tests-{name}.lock"
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
