# The types of pykraft/__init__.py, whose embed names load lazily (see its docstring).
from pykraft.embed import CommitUnknownError as CommitUnknownError
from pykraft.embed import Entry as Entry
from pykraft.embed import LogClosedError as LogClosedError
from pykraft.embed import ReplicatedLog as ReplicatedLog
from pykraft.embed import Snapshot as Snapshot

__version__: str
__all__ = ["CommitUnknownError", "Entry", "LogClosedError", "ReplicatedLog", "Snapshot",
           "__version__"]
