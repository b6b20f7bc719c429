"""``pykraft chaos`` on real processes. The short run (in every test run) injects only
faults that cannot lose acknowledged writes on any correct broker (idle brokers paused,
killed, restarted, cut off), with a consumer group of two members and a transactional
producer (commits and aborts, read back read_committed), and must find no anomaly; its
history, with one acknowledged write removed from the committed log, one group read
removed, a lower committed offset fetched at the end or an aborted value read, must be
flagged. A replay of a
recorded history carries out its faults on the nodes they hit, in order, held as long. The
full run (RF=3, leaders and the active controller killed) needs PYKRAFT_CHAOS_FULL=1."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.chaos.checker import check
from pykraft.chaos.history import (
    Committed,
    Event,
    FaultEvent,
    GroupOffsets,
    GroupRead,
    RunInfo,
    Send,
    TxnEnd,
    TxnRead,
    encode,
)
from pykraft.chaos.recorder import read_history
from pykraft.cli.main import app


def chaos(*args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(app, ["chaos", *args, "--json"])
    try:
        return result.exit_code, json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"no JSON figures (exit {result.exit_code}): {result.output}")


def checked(tmp_path: Path, events: list[Event]) -> tuple[int, dict[str, object]]:
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("".join(encode(e) + "\n" for e in events))
    return chaos("check", str(damaged))


def test_short_safe_run_finds_no_anomaly_and_the_checker_flags_a_lost_write(
        tmp_path: Path) -> None:
    code, figures = chaos("run", "--dir", str(tmp_path / "run"), "--seed", "4", "--faults", "4",
                          "--controllers", "1", "--brokers", "3", "--partitions", "1",
                          "--short", "--safe", "--group-consumers", "2")
    assert code == 0, figures["examples"]
    assert figures["anomalies"] == 0
    assert figures["fenced_on_refusal"] == 1  # the killed broker's port refused at once
    assert isinstance(figures["acknowledged"], int) and figures["acknowledged"] > 0
    assert isinstance(figures["reads"], int) and figures["reads"] > 0
    group = figures["group"]
    assert isinstance(group, dict)
    assert group["consumed"] == figures["acknowledged"]  # every one, the drain reached the end
    assert group["lag"] == 0 and isinstance(group["commits_acked"], int)
    assert group["commits_acked"] > 0
    txn = figures["transactions"]
    assert isinstance(txn, dict)
    assert txn["committed"] > 0 and txn["aborted"] > 0 and txn["reads"] > 0
    assert txn["copied"] == figures["acknowledged"]  # the copier caught up with every one
    history = read_history(tmp_path / "run" / "history.jsonl")
    faults = [e for e in history if isinstance(e, FaultEvent)]
    # seed 4 draws one fault of each kind a safe run has; an idle broker is always there
    assert sorted(e.kind for e in faults if e.phase == "start") == sorted(
        e.kind for e in faults if e.phase == "end") == ["kill", "partition", "pause", "restart"]

    assert chaos("check", str(tmp_path / "run" / "history.jsonl"))[0] == 0
    cut = [Committed(e.partition, e.start, e.values[:-1]) if isinstance(e, Committed) else e
           for e in history]
    code, figures = checked(tmp_path, cut)
    assert code == 1
    assert figures["lost"] == 1

    reads = Counter((e.partition, e.offset) for e in history if isinstance(e, GroupRead))
    unread = next(e for e in history
                  if isinstance(e, GroupRead) and reads[e.partition, e.offset] == 1)
    code, figures = checked(tmp_path, [e for e in history if e != unread])
    assert code == 1 and figures["anomalies"] == 1
    assert figures["group"] == {**group, "missed": 1, "reads": group["reads"] - 1,
                                "consumed": group["consumed"] - 1}
    code, figures = checked(tmp_path, [*history, GroupOffsets(1 << 30, [0])])
    assert code == 1 and figures["anomalies"] == 1
    assert figures["group"] == {**group, "commits_lost": 1}
    aborted = next(e for e in history if isinstance(e, TxnEnd) and e.outcome == "abort")
    partition, value = aborted.values[0]
    code, figures = checked(tmp_path, [*history, TxnRead(1 << 30, "r9", partition, 0, value)])
    assert code == 1 and figures["anomalies"] == 1
    assert figures["transactions"] == {**txn, "aborted_reads": 1, "reads": txn["reads"] + 1}


#: A short run's faults as a history records them; the leader was node:1002 then.
RECORDED: list[Event] = [
    RunInfo(5, [], {"seed": "5", "brokers": "3", "controllers": "1", "partitions": "1",
                    "replication_factor": "3", "min_insync_replicas": "2", "producers": "1",
                    "consumers": "1", "rate_per_s": "100.0", "group_consumers": "0",
                    "group_protocol": "classic"}),
    Send(2000, "p0.0", "p0.0-0000000", 0),
    FaultEvent(2400, "kill", "node:1001", "start"), FaultEvent(3100, "kill", "node:1001", "end"),
    FaultEvent(3500, "pause", "leader:0", "skipped"),
    FaultEvent(3900, "pause", "leader:0=node:1002", "start"),
    FaultEvent(4400, "pause", "leader:0=node:1002", "end"),
    FaultEvent(4800, "partition", "node:1000-node:1", "start"),
    FaultEvent(5600, "partition", "node:1000-node:1", "end"),
    FaultEvent(6000, "restart", "node:1000", "start"),
    FaultEvent(6500, "restart", "node:1000", "end"),
]


def test_a_replay_carries_out_the_recorded_faults_on_their_nodes(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text("".join(encode(e) + "\n" for e in RECORDED))
    code, figures = chaos("run", "--dir", str(tmp_path / "replay"), "--replay", str(recorded))
    assert code == 0, figures["examples"]
    assert figures["anomalies"] == 0
    assert isinstance(figures["acknowledged"], int) and figures["acknowledged"] > 0
    assert figures["group"] == check([]).group.as_dict()  # no group, as recorded
    replayed = [e for e in read_history(tmp_path / "replay" / "history.jsonl")
                if isinstance(e, FaultEvent)]
    assert [(e.kind, e.target, e.phase) for e in replayed] == [
        (e.kind, e.target, e.phase) for e in RECORDED if isinstance(e, FaultEvent)]
    starts = [e for e in replayed if e.phase == "start"]
    ends = [e for e in replayed if e.phase == "end"]
    assert [end.t - start.t >= hold for start, end, hold in
            zip(starts, ends, (700, 500, 800, 500), strict=True)] == [True] * 4


@pytest.mark.skipif(os.environ.get("PYKRAFT_CHAOS_FULL") != "1",
                    reason="the full chaos run (leaders killed at RF=3) needs "
                           "PYKRAFT_CHAOS_FULL=1")
def test_full_run_at_rf3_loses_nothing(tmp_path: Path) -> None:
    code, figures = chaos("run", "--dir", str(tmp_path / "run"), "--seed", "11",
                          "--faults", os.environ.get("PYKRAFT_CHAOS_FAULTS", "20"),
                          "--controllers", "3", "--brokers", "3", "--short")
    assert code == 0, figures["examples"]
    assert figures["anomalies"] == 0
