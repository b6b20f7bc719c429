"""Structured logs: one line per event on stderr, ``key=value`` pairs (logfmt).

Code logs through the standard :mod:`logging` module and passes its fields as
``extra={"fields": {...}}``; the formatter renders the message as ``event=`` and quotes
values that contain spaces, so the lines stay greppable by tests and by people.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, TextIO


def _value(value: object) -> str:
    text = str(value)
    if not text or any(c.isspace() or c in '"=' for c in text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


class LogfmtFormatter(logging.Formatter):
    """``ts=... level=... logger=... event=... k=v ...``."""

    def __init__(self, static: dict[str, object] | None = None) -> None:
        super().__init__()
        self._static = static or {}

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        parts = [f"ts={stamp}.{int(record.msecs):03d}Z", f"level={record.levelname.lower()}"]
        parts += [f"{key}={_value(value)}" for key, value in self._static.items()]
        parts.append(f"logger={record.name}")
        parts.append(f"event={_value(record.getMessage())}")
        fields: dict[str, Any] = getattr(record, "fields", {})
        parts += [f"{key}={_value(value)}" for key, value in fields.items()]
        if record.exc_info:
            parts.append(f"exception={_value(self.formatException(record.exc_info))}")
        return " ".join(parts)


def configure_logging(node_id: int, level: str = "INFO", stream: TextIO = sys.stderr) -> None:
    """Route every pykraft (and library) log record through one logfmt handler."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(LogfmtFormatter({"node": node_id}))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def event(logger: logging.Logger, name: str, level: int = logging.INFO, **fields: object) -> None:
    """Log one structured event."""
    logger.log(level, name, extra={"fields": fields})
