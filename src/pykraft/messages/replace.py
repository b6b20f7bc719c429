"""Setting fields named at run time on a generated message.

Code that serves several APIs through one table (the parts of CreateTopics, DeleteTopics,
...; the groups of DescribeGroups, DeleteGroups, ...) names the field it changes by a
string the table holds, which no static type can check: :func:`replaced` is where that
happens, typed by the message it is given, and the generated class checks the value when
the message is written.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_M = TypeVar("_M", bound="DataclassInstance")


def replaced(message: _M, **changes: object) -> _M:
    """``message`` with the fields ``changes`` names set."""
    return dataclasses.replace(message, **changes)
