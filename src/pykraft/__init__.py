"""pykraft: Apache Kafka's KRaft metadata quorum, wire- and disk-compatible with Kafka.

The embeddable replicated log (:mod:`pykraft.embed`) is exported here and loaded on first
use, so that importing any other pykraft package (the sans-I/O Raft core, the record
codecs) does not pull in the runtime's event loop and sockets; ``__init__.pyi`` types it.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = ["CommitUnknownError", "Entry", "LogClosedError", "ReplicatedLog", "Snapshot",
           "__version__"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("pykraft.embed"), name)
    raise AttributeError(f"module 'pykraft' has no attribute {name!r}")
