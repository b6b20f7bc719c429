"""The server's event loop: uvloop by default, asyncio on request or when uvloop is missing."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from pykraft.runtime import event_loop


async def _loop_name() -> str:
    return event_loop.running_loop_name()


def test_uvloop_runs_the_server_loop_by_default() -> None:
    pytest.importorskip("uvloop")
    assert event_loop.run(_loop_name(), "uvloop") == "uvloop"


def test_asyncio_on_request() -> None:
    assert event_loop.run(_loop_name(), "asyncio") == "asyncio"


def test_missing_uvloop_falls_back_to_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_uvloop(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "uvloop":
            raise ImportError("no uvloop here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_uvloop)
    assert event_loop.run(_loop_name(), "uvloop") == "asyncio"
