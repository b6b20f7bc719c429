"""The controllers' fences on refused listeners, read back from a log in pykraft's format."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

from pykraft.chaos.fences import logged_fences
from pykraft.runtime.logfmt import LogfmtFormatter, event


def test_the_fences_a_controller_logged_are_read_back_and_nothing_else(
        tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    handler = logging.FileHandler(path)
    handler.setFormatter(LogfmtFormatter({"node": 1}))
    log = logging.getLogger("test.fences")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        event(log, "broker_listeners_not_refused", broker=1001, broker_epoch=5,
              endpoints="127.0.0.1:9092")
        event(log, "broker_listeners_refused", broker=1002, broker_epoch=6, fenced=False,
              endpoints="127.0.0.1:9093")  # stale evidence: nothing fenced
        event(log, "broker_listeners_refused", broker=1003, broker_epoch=7, fenced=True,
              endpoints="127.0.0.1:9094")
    finally:
        log.removeHandler(handler)
        handler.close()
    (fence,) = logged_fences(path)
    assert (fence.broker, fence.epoch) == (1003, 7)
    assert fence.at.utcoffset() == timedelta(0)  # the log's times are UTC
    assert logged_fences(tmp_path / "never-started.log") == []
