"""``scripts/gen_messages.py`` loaded as a module (scripts/ is no package), for the tests that
check the generated records and RPC messages against their facts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _load() -> ModuleType:
    path = ROOT / "scripts" / "gen_messages.py"
    spec = importlib.util.spec_from_file_location("gen_messages", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while defined
    spec.loader.exec_module(module)
    return module


GEN = _load()
