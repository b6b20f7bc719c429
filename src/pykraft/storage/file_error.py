"""A damaged or unreadable storage file, with its path kept apart from the problem.

Tools and the server word their advice by the kind of file at fault (see
:mod:`pykraft.storage.refusal`), so the path must not have to be parsed back out of text.
"""

from __future__ import annotations

from pathlib import Path

from pykraft.errors import StorageError


class StateFileError(StorageError):
    """``<path>: <problem>``; ``path`` and ``problem`` stay available separately."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem
