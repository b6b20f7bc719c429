"""The embeddable replicated log (pykraft.ReplicatedLog): nodes in this process on 127.0.0.1,
appending, iterating, failing over, snapshotting, restarting, closing, refusing bad input."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pykraft import CommitUnknownError, Entry, LogClosedError, ReplicatedLog, Snapshot
from pykraft.embed import DEFAULT_CLUSTER_ID
from pykraft.errors import NotLeaderError, StorageError
from pykraft.storage.meta_properties import read_meta_properties
from pykraft.tools.local_cluster import free_ports

DEADLINE_S = 30.0
#: A short shutdown bound: a leader closed after its followers waits this long for acks.
CONFIG = {"pykraft.shutdown.timeout.ms": "2000"}
T = TypeVar("T")


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(scenario())


async def bounded(work: Awaitable[T]) -> T:
    async with asyncio.timeout(DEADLINE_S):
        return await work


async def take(items: AsyncIterator[Entry | Snapshot], count: int) -> list[Entry | Snapshot]:
    return [await bounded(anext(items)) for _ in range(count)]


async def start_quorum(base: Path, *, config: dict[str, str] | None = None,
                       ) -> tuple[dict[int, tuple[str, int]], dict[int, ReplicatedLog]]:
    voters = {n: ("127.0.0.1", p) for n, p in zip((1, 2, 3), free_ports(3), strict=True)}
    logs = {n: await ReplicatedLog.start(n, base / f"node-{n}", voters,
                                         config={**CONFIG, **(config or {})})
            for n in voters}
    return voters, logs


async def agreed_leader(logs: dict[int, ReplicatedLog]) -> ReplicatedLog:
    """The running node all running nodes name as leader (they converge after a change)."""
    async with asyncio.timeout(DEADLINE_S):
        while True:
            named = {await log.wait_for_leader() for log in logs.values()}
            if len(named) == 1 and (leader := named.pop()) in logs and logs[leader].is_leader:
                return logs[leader]
            await asyncio.sleep(0.05)


async def close_all(logs: dict[int, ReplicatedLog]) -> None:
    for log in sorted(logs.values(), key=lambda log: not log.is_leader):
        await log.close()


def test_one_node_appends_and_iterates_in_order(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await ReplicatedLog.start(1, tmp_path, config=CONFIG) as log:
            assert await bounded(log.wait_for_leader()) == 1
            assert log.is_leader and log.epoch >= 1
            offsets = [await bounded(log.append(b"value-%d" % i)) for i in range(5)]
            assert offsets == sorted(offsets) and len(set(offsets)) == 5
            entries = await take(aiter(log), 5)
            assert entries == [Entry(o, b"value-%d" % i) for i, o in enumerate(offsets)]
            together = await bounded(asyncio.gather(*(log.append(bytes([i])) for i in range(3))))
            assert [e[1] for e in await take(aiter(log), 3)] == [b"\0", b"\1", b"\2"]
            assert together == list(range(together[0], together[0] + 3))
        meta = read_meta_properties(tmp_path / "meta.properties")
        assert (meta.node_id, meta.cluster_id) == (1, DEFAULT_CLUSTER_ID)
        assert (tmp_path / "__cluster_metadata-0" / "quorum-state").exists()

    run(scenario)


def test_three_nodes_commit_the_same_entries_and_followers_refuse_appends(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        _, logs = await start_quorum(tmp_path)
        try:
            leader = await agreed_leader(logs)
            offsets = [await bounded(leader.append(f"e{i}".encode())) for i in range(4)]
            expected = [Entry(o, f"e{i}".encode()) for i, o in enumerate(offsets)]
            for log in logs.values():
                assert await take(aiter(log), 4) == expected
            follower = next(log for log in logs.values() if not log.is_leader)
            with pytest.raises(NotLeaderError):
                await bounded(follower.append(b"refused"))
            assert follower.leader_id == leader.node_id
        finally:
            await close_all(logs)

    run(scenario)


def test_failover_keeps_committed_entries(tmp_path: Path) -> None:
    async def scenario() -> None:
        _, logs = await start_quorum(tmp_path)
        try:
            first = await agreed_leader(logs)
            before = [await bounded(first.append(b"before-%d" % i)) for i in range(3)]
            epoch = first.epoch
            await first.close()
            del logs[first.node_id]
            second = await agreed_leader(logs)
            assert second.epoch > epoch
            after = await bounded(second.append(b"after"))
            for log in logs.values():
                assert await take(aiter(log), 4) == [
                    *(Entry(o, b"before-%d" % i) for i, o in enumerate(before)),
                    Entry(after, b"after")]
        finally:
            await close_all(logs)

    run(scenario)


def test_an_append_whose_leader_loses_its_quorum_has_an_unknown_outcome(tmp_path: Path) -> None:
    async def scenario() -> None:
        _, logs = await start_quorum(tmp_path)
        try:
            leader = await agreed_leader(logs)
            for node_id in [n for n in logs if n != leader.node_id]:
                await logs.pop(node_id).close()
            with pytest.raises(CommitUnknownError, match="leadership moved"):
                await bounded(leader.append(b"unacknowledged"))  # check-quorum resigns
            assert not leader.is_leader
        finally:
            await close_all(logs)

    run(scenario)


def test_a_restart_loads_the_snapshot_then_the_entries_after_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await ReplicatedLog.start(1, tmp_path, config=CONFIG) as log:
            await bounded(log.wait_for_leader())
            offsets = [await bounded(log.append(b"%d" % i)) for i in range(4)]
            await take(aiter(log), 4)
            assert log.can_snapshot(offsets[-1])
            await bounded(log.snapshot(offsets[-1], b"state after four"))
            later = await bounded(log.append(b"later"))
        async with await ReplicatedLog.start(1, tmp_path, config=CONFIG) as log:
            items = aiter(log)
            assert await take(items, 2) == [Snapshot(offsets[-1], b"state after four"),
                                           Entry(later, b"later")]
            await bounded(log.wait_for_leader())
            again = await bounded(log.append(b"again"))
            assert await take(items, 1) == [Entry(again, b"again")]

    run(scenario)


def test_a_node_far_behind_loads_the_leaders_snapshot(tmp_path: Path) -> None:
    """With the log cleaned behind the leader's snapshots, a node that missed those entries
    gets the snapshot (FetchSnapshot) as its first item, then the entries after it."""
    async def scenario() -> None:
        voters, logs = await start_quorum(
            tmp_path, config={"metadata.max.retention.bytes": "0"})
        try:
            leader = await agreed_leader(logs)
            behind = next(n for n in logs if n != leader.node_id)
            await logs.pop(behind).close()
            for round_ in range(2):  # retention frees the log up to the newer snapshot
                last = await bounded(leader.append(b"round-%d" % round_))
                for log in logs.values():
                    await take(aiter(log), 1)
                    await bounded(log.snapshot(last, b"state-%d" % round_))
            tail = await bounded(leader.append(b"tail"))
            logs[behind] = await ReplicatedLog.start(behind, tmp_path / f"node-{behind}",
                                                     voters, config=CONFIG)
            assert await take(aiter(logs[behind]), 2) == [Snapshot(last, b"state-1"),
                                                          Entry(tail, b"tail")]
        finally:
            await close_all(logs)

    run(scenario)


def test_snapshot_only_at_the_end_of_a_committed_batch(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await ReplicatedLog.start(1, tmp_path, config=CONFIG) as log:
            await bounded(log.wait_for_leader())
            offsets = await bounded(asyncio.gather(*(log.append(b"x") for _ in range(3))))
            await take(aiter(log), 3)
            assert not log.can_snapshot(offsets[0])  # one batch: only its end
            with pytest.raises(ValueError, match="not the last entry"):
                await log.snapshot(offsets[0], b"state")
            assert not log.can_snapshot(offsets[-1] + 10)  # not committed
            await bounded(log.snapshot(offsets[-1], b""))
            with pytest.raises(ValueError, match="not the last entry"):  # taken already
                await log.snapshot(offsets[-1], b"state")

    run(scenario)


def test_close_ends_the_iterator_and_refuses_what_follows(tmp_path: Path) -> None:
    async def scenario() -> None:
        log = await ReplicatedLog.start(1, tmp_path, config=CONFIG)
        await bounded(log.wait_for_leader())
        offset = await bounded(log.append(b"kept"))

        reader = asyncio.create_task(_drain(log))
        await log.close()
        assert await bounded(reader) == [Entry(offset, b"kept")]
        await log.close()  # twice is fine
        with pytest.raises(LogClosedError):
            await log.append(b"late")
        with pytest.raises(LogClosedError):
            await log.snapshot(offset, b"late")
        with pytest.raises(LogClosedError):
            await log.wait_for_leader()
        async with await ReplicatedLog.start(1, tmp_path, config=CONFIG) as reopened:
            assert await take(aiter(reopened), 1) == [Entry(offset, b"kept")]

    run(scenario)


@pytest.mark.parametrize(("node_id", "voters", "problem"), [
    (-1, None, "node_id must be an int >= 0"),
    (True, None, "node_id must be an int >= 0"),
    (1, {2: ("127.0.0.1", 9093)}, "node 1 is not one of the voters"),
    (1, {1: ("127.0.0.1", 70000)}, "bad address"),
    (1, {1: ("", 9093)}, "bad address"),
])
def test_bad_start_arguments(tmp_path: Path, node_id: int,
                             voters: dict[int, tuple[str, int]] | None, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        run(lambda: _start_and_close(tmp_path, node_id, voters))
    assert not (tmp_path / "meta.properties").exists()  # refused before formatting


def test_a_directory_of_another_node_is_refused(tmp_path: Path) -> None:
    run(lambda: _start_and_close(tmp_path, 1, None))
    with pytest.raises(StorageError, match=r"does not match the configured node\.id 2"):
        run(lambda: _start_and_close(tmp_path, 2, None))


async def _start_and_close(base: Path, node_id: int,
                           voters: dict[int, tuple[str, int]] | None) -> None:
    await (await ReplicatedLog.start(node_id, base, voters)).close()


def test_bad_append_and_snapshot_arguments(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with await ReplicatedLog.start(1, tmp_path, config=CONFIG) as log:
            await bounded(log.wait_for_leader())
            with pytest.raises(TypeError, match="append takes bytes, not str"):
                await log.append("text")  # type: ignore[arg-type]
            offset = await bounded(log.append(b"ok"))
            with pytest.raises(ValueError, match="offset must be an int >= 0"):
                await log.snapshot(-1, b"state")
            with pytest.raises(ValueError, match="offset must be an int >= 0"):
                log.can_snapshot("3")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="snapshot data must be bytes"):
                await log.snapshot(offset, "state")  # type: ignore[arg-type]

    run(scenario)


def test_a_fatal_error_of_the_node_closes_the_log(tmp_path: Path) -> None:
    async def scenario() -> None:
        log = await ReplicatedLog.start(1, tmp_path, config=CONFIG)
        await bounded(log.wait_for_leader())
        offset = await bounded(log.append(b"before"))
        log._node._fatal(OSError("fsync failed"))  # what a failed fsync does to the node
        assert await bounded(_drain(log)) == [Entry(offset, b"before")]
        with pytest.raises(LogClosedError):
            await log.append(b"after")

    run(scenario)


async def _drain(log: ReplicatedLog) -> list[Entry | Snapshot]:
    return [item async for item in log]
