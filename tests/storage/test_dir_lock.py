"""A log directory's ``.lock``: a second process on the same directories is refused, as
Kafka refuses it, and Java's lock (``FileChannel.tryLock``) is the same kind."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykraft.storage.dir_lock import LOCK_FILE, DirectoryLockedError, DirectoryLocks

#: another process: locks the directory as the node does, says so, holds it until stdin ends
_HOLDER = """
import sys
from pathlib import Path
from pykraft.storage.dir_lock import DirectoryLocks
locks = DirectoryLocks.acquire([Path(sys.argv[1])])
print("locked", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def holding(directory: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``directory``'s lock, killed when the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(directory)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        yield holder
    finally:
        holder.kill()
        holder.wait(10)


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Path]:
    """A directory whose lock another process holds."""
    directory = tmp_path / "held"
    directory.mkdir()
    with holding(directory):
        yield directory


def test_a_directory_another_process_holds_is_refused_naming_it(held: Path,
                                                                tmp_path: Path) -> None:
    free = tmp_path / "free"
    free.mkdir()
    with pytest.raises(DirectoryLockedError) as refused:
        DirectoryLocks.acquire([free, held])
    assert str(refused.value) == (
        f"Failed to acquire lock on file .lock in {held}. A Kafka instance in another "
        "process or thread is using this directory.")
    # all or none: the free directory's lock was given back
    DirectoryLocks.acquire([free]).release()


def test_a_released_or_dead_holder_leaves_the_directory_free(tmp_path: Path) -> None:
    directory = tmp_path / "d"
    directory.mkdir()
    with holding(directory) as holder:
        holder.kill()  # as kill -9: the kernel drops the lock with the process
        holder.wait(10)
    locks = DirectoryLocks.acquire([directory])
    assert (directory / LOCK_FILE).exists()
    locks.release()


def test_a_missing_directory_is_left_to_the_formatting_check(tmp_path: Path) -> None:
    DirectoryLocks.acquire([tmp_path / "absent"]).release()
    assert not (tmp_path / "absent").exists()


def test_a_second_server_on_a_running_nodes_directories_exits_at_once(
        tmp_path: Path) -> None:
    """``pykraft server`` locks before it writes: started on a formatted node's directory
    that another process holds, it exits 1 naming the lock."""
    from pykraft.tools.local_cluster import LocalCluster

    cluster = LocalCluster.create(tmp_path / "cluster", 1)
    (node,) = cluster.nodes.values()
    with holding(node.data):
        done = subprocess.run([sys.executable, "-m", "pykraft", "server", str(node.config)],
                              check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert f"Failed to acquire lock on file .lock in {node.data}." in done.stderr
