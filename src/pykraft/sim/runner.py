"""Run one scenario (of the quorum or of a replicated partition) for one seed and summarise
it; used by the CLI, tests and sweeps."""

from __future__ import annotations

import hashlib
import multiprocessing
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pykraft.controller.broker_liveness import LivenessWatch
from pykraft.raft.core import RaftClient
from pykraft.replica.leader import LeaderReplication
from pykraft.sim.replica_broker import ReplicationFactory
from pykraft.sim.replica_cluster import ReplicaCluster
from pykraft.sim.replica_invariants import replica_invariants
from pykraft.sim.replica_liveness import WatchFactory
from pykraft.sim.replica_scenarios import ELR_SUFFIX, REPLICA_SCENARIOS
from pykraft.sim.replica_scenarios import shape as replica_shape
from pykraft.sim.scenarios import SCENARIOS
from pykraft.sim.simulated_cluster import ClientFactory, Cluster
from pykraft.sim.violations import InvariantViolation

_CALM_STATES = ("Follower", "Leader")


@dataclass(frozen=True, slots=True)
class RunResult:
    """What one run did. The timings are simulated ms since the run began (first leader)
    and from the first fault to the next epoch's leader (recovery); None if not seen."""

    scenario: str
    seed: int
    violation: str | None  # "Invariant: detail"
    events: int
    elections: int
    simulated_ms: int
    wall_s: float
    first_leader_ms: int | None = None
    recovery_ms: int | None = None
    commit_count: int = 0  # committed data records, over every node and incarnation
    trace_digest: str = ""  # sha256 of every trace line: equal digests, identical runs

    @property
    def replay_command(self) -> str:
        return f"pykraft sim run --scenario {self.scenario} --seed {self.seed} --trace"


class RunObserver:
    """Reads the trace lines: when the first leader appeared, when the first fault after
    it was seen (a kill, or a node leaving Follower/Leader), and when a leader of a later
    epoch arrived. The trace is the only view of state transitions with their simulated
    time, and reading it leaves the run's randomness untouched."""

    def __init__(self) -> None:
        self.first_leader_ms: int | None = None
        self.first_epoch = -1
        self.fault_ms: int | None = None
        self.recovered_ms: int | None = None

    def __call__(self, line: str) -> None:
        if "node" not in line:
            return  # the common case: a plain event label
        now_text, _, text = line.strip().partition(" ")
        if text.startswith("kill node"):
            self._fault(int(now_text))
        elif text.startswith("node ") and " -> " in text:
            state, _, epoch = text.rpartition(" -> ")[2].partition("@")
            self._transition(int(now_text), state, int(epoch))

    def _fault(self, now: int) -> None:
        if self.first_leader_ms is not None and self.fault_ms is None:
            self.fault_ms = now

    def _transition(self, now: int, state: str, epoch: int) -> None:
        if state == "Leader":
            if self.first_leader_ms is None:
                self.first_leader_ms, self.first_epoch = now, epoch
            elif self.recovered_ms is None and self.fault_ms is not None and \
                    epoch > self.first_epoch:
                self.recovered_ms = now
        elif state not in _CALM_STATES:
            self._fault(now)

    @property
    def recovery_ms(self) -> int | None:
        if self.recovered_ms is None or self.fault_ms is None:
            return None
        return self.recovered_ms - self.fault_ms


def run_scenario(
    name: str, seed: int, *, client_factory: ClientFactory = RaftClient,
    trace: Callable[[str], None] | None = None,
) -> RunResult:
    """Build the cluster the seed describes, drive the scenario, report what happened."""
    if name.removesuffix(ELR_SUFFIX) in REPLICA_SCENARIOS:
        return run_replica_scenario(name, seed, trace=trace)
    scenario = SCENARIOS[name]
    shape_rng = random.Random(f"{name}:{seed}")
    voters, observers = scenario.shape(shape_rng)
    kip853 = scenario.kip853 if scenario.kip853 is not None else shape_rng.random() < 0.5
    observer = RunObserver()
    digest = hashlib.sha256()

    def observe(line: str) -> None:
        observer(line)
        digest.update(line.encode())
        if trace is not None:
            trace(line)

    cluster = Cluster(seed, voters, observers, client_factory=client_factory,
                      lossy=scenario.lossy_network, trace=observe, kip853=kip853)
    cluster.invariants.extend(scenario.invariants())
    started = time.perf_counter()
    violation = _drive(lambda: scenario.drive(cluster, shape_rng))
    return RunResult(name, seed, violation, cluster.events, cluster.elections,
                     cluster.queue.now_ms, time.perf_counter() - started,
                     observer.first_leader_ms, observer.recovery_ms,
                     len(cluster.history.data_offsets), digest.hexdigest())


def run_replica_scenario(
    name: str, seed: int, *, replication_factory: ReplicationFactory = LeaderReplication,
    watch_factory: WatchFactory = LivenessWatch, trace: Callable[[str], None] | None = None,
) -> RunResult:
    """One replication scenario (with eligible leader replicas on if ``name`` ends with
    :data:`ELR_SUFFIX`): ``elections`` counts the controller's leader changes and
    ``commit_count`` the acknowledged acks=all writes."""
    scenario = REPLICA_SCENARIOS[name.removesuffix(ELR_SUFFIX)]
    shape_rng = random.Random(f"{name}:{seed}")
    brokers, min_insync = replica_shape(shape_rng)
    digest = hashlib.sha256()

    def observe(line: str) -> None:
        digest.update(line.encode())
        if trace is not None:
            trace(line)

    cluster = ReplicaCluster(seed, brokers, min_insync, replication_factory=replication_factory,
                             watch_factory=watch_factory, elr=name.endswith(ELR_SUFFIX),
                             trace=observe)
    cluster.invariants.extend(replica_invariants())
    started = time.perf_counter()
    violation = _drive(lambda: scenario.drive(cluster, shape_rng))
    return RunResult(name, seed, violation, cluster.events, cluster.controller.leader_changes,
                     cluster.queue.now_ms, time.perf_counter() - started,
                     commit_count=cluster.acked_all, trace_digest=digest.hexdigest())


def _drive(drive: Callable[[], None]) -> str | None:
    try:
        drive()
    except InvariantViolation as exc:
        return str(exc)
    return None


def scenario_names() -> list[str]:
    """Every scenario: the quorum's, then the partition replication's without, then with
    eligible leader replicas."""
    return [*SCENARIOS, *REPLICA_SCENARIOS, *(name + ELR_SUFFIX for name in REPLICA_SCENARIOS)]


def _run_task(task: tuple[str, int]) -> RunResult:
    return run_scenario(*task)


def sweep(tasks: list[tuple[str, int]], workers: int) -> Iterator[RunResult]:
    """Run (scenario, seed) pairs in ``workers`` processes; results arrive as they finish."""
    if workers <= 1:
        yield from map(_run_task, tasks)
        return
    with multiprocessing.Pool(workers) as pool:
        yield from pool.imap_unordered(_run_task, tasks, chunksize=4)
