"""One chaos run end to end: cluster, topic, workload, faults, final reads, check.

The workload: idempotent producers, assigned consumers and a consumer group on the run's
topic, transactional producers with a ``read_committed`` consumer on a topic of their own
(:mod:`.txn_workload`), and an exactly-once copier of the run's topic
(:mod:`.ctp_workload`). The run directory holds the cluster (``cluster/``, every
node's files and ``server.log``) and ``history.jsonl``, whose first line is the seed and
the schedule drawn from it. A bounded schedule's faults each wait for the cluster to be
whole again; a replay instead carries out a recorded history's faults at their recorded
times (:mod:`.replay`). After the last fault every fault is healed, the cluster is given a
bounded time to be whole again (every node listening, every partition led), the producers
stop and flush, a last read takes each partition's committed log, the transactions are read
back once each has ended, the consumer group is given a bounded time to commit up to its
end (its drain), the nodes stop cleanly, the controllers' fences on refused listeners are
taken from their logs (:mod:`.fences`) and each replica's log is read from disk. The
checker then judges the history file, exactly as ``pykraft chaos check`` would.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from importlib.util import find_spec
from pathlib import Path
from typing import TypeVar

from pykraft.chaos.checker import Figures, check
from pykraft.chaos.ctp_workload import Transforming, ctp_topic, finish
from pykraft.chaos.fences import logged_fences
from pykraft.chaos.group_workload import (
    CLASSIC,
    GroupMember,
    GroupObserving,
    GroupView,
    Membership,
    drain,
    group_id,
)
from pykraft.chaos.history import Committed, RefusalFence, RunInfo, TxnLog
from pykraft.chaos.injector import Injector
from pykraft.chaos.nodes import ChaosCluster
from pykraft.chaos.observer import ClusterView, Observing
from pykraft.chaos.recorder import Recorder, read_history
from pykraft.chaos.replay import Step, recorded_run
from pykraft.chaos.replica_logs import read_replica
from pykraft.chaos.schedule import BOUNDED, NORMAL, SHORT, Fault, Topology, plan
from pykraft.chaos.txn_workload import (
    RECORDS_PER_TXN,
    TRANSACTION_TIMEOUT_MS,
    TxnConsuming,
    TxnProducing,
    read_transactions,
    txn_topic,
)
from pykraft.chaos.workload import Consuming, Producing, Target, read_committed
from pykraft.errors import PyKraftError
from pykraft.tools.kafka_runtime import KafkaRuntime

HISTORY_FILE = "history.jsonl"
TOPIC = "chaos"
SETTLE_S = 2.0
HEALTHY_TIMEOUT_S = 60.0
COMMITTED_READ_TIMEOUT_S = 60.0
#: The last read of the transactions waits for the abandoned ones to be aborted (their
#: timeout, then the coordinator's next check) before it reads.
TXN_READ_TIMEOUT_S = TRANSACTION_TIMEOUT_MS / 1000 + 30.0
TOPIC_TIMEOUT_S = 60.0
#: A bounded run's wait before each fault for the cluster to be whole again.
WHOLE_TIMEOUT_S = 60.0
#: Brokers heartbeat every 500 ms with a 3 s session (fencing within a run), shut down
#: within 3 s, and drop a follower from the ISR after 5 s without catching up.
CLUSTER_PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
    "pykraft.shutdown.timeout.ms": "3000",
    "replica.lag.time.max.ms": "5000",
    # a group forms at once (no 3 s wait for more members) on a small offsets topic
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
    # a transaction its client abandoned is aborted within a few seconds of its timeout
    "transaction.state.log.num.partitions": "5",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}
_Read = TypeVar("_Read", Committed, TxnLog)
#: After the faults, the bound on the consumer group's drain to every partition's end.
DRAIN_TIMEOUT_S = 60.0


class ChaosError(PyKraftError):
    """The run could not get its cluster or topic going, or could not read it back."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    directory: Path
    seed: int = 0
    faults: int = 10
    brokers: int = 3
    controllers: int = 3
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    producers: int = 2
    consumers: int = 1
    group_consumers: int = 3
    group_protocol: str = CLASSIC
    txn_producers: int = 1
    rate_per_s: float = 100.0
    short: bool = False
    safe: bool = False
    properties: dict[str, str] = field(default_factory=dict)
    mix: str = BOUNDED
    replay: Path | None = None  # a history whose faults to carry out again (--faults: how many)
    kafka_brokers: int = 0  # Apache Kafka's own brokers and controllers beside pykraft's
    kafka_controllers: int = 0
    kafka_home: Path | None = None


@dataclass(frozen=True, slots=True)
class RunResult:
    history: Path
    schedule: list[Fault]
    figures: Figures


def schedule_for(options: RunOptions, topology: Topology) -> list[Fault]:
    return plan(options.seed, options.faults, topology,
                timing=SHORT if options.short else NORMAL, safe=options.safe, mix=options.mix)


#: The settings a replay takes from the recorded run: its cluster, topic and workload.
REPLAYED = ("seed", "brokers", "controllers", "partitions", "replication_factor",
            "min_insync_replicas", "producers", "consumers", "rate_per_s")
#: Settings a run records since the group joined the workload (an older run keeps ours).
REPLAYED_IF_RECORDED = ("group_consumers", "group_protocol", "txn_producers", "kafka_brokers",
                        "kafka_controllers")


def replaying(options: RunOptions, history: Path) -> tuple[RunOptions, list[Step]]:
    """``options`` with the settings of the run ``history`` recorded, and its first
    ``options.faults`` faults."""
    try:
        info, steps = recorded_run(read_history(history))
    except OSError as exc:
        raise ChaosError(f"cannot read {history}: {exc}") from None
    try:
        recorded = {name: type(getattr(options, name))(info.settings[name])
                    for name in REPLAYED + REPLAYED_IF_RECORDED
                    if name in REPLAYED or name in info.settings}
    except (KeyError, ValueError) as exc:
        raise ChaosError(f"{history} does not record its run's settings ({exc})") from None
    return replace(options, **recorded), steps[:options.faults]


def run(options: RunOptions, progress: Callable[[str], None] = lambda _: None,
        enough: threading.Event | None = None) -> RunResult:
    """A run of ``options``' seeded schedule, or of the faults ``options.replay`` recorded.
    Once ``enough`` is set no further fault begins: the run heals, reads back and checks
    what it did so far (a bounded run stopped early is still judged)."""
    enough = enough or threading.Event()
    steps: list[Step] | None = None
    if options.replay is not None:
        options, steps = replaying(options, options.replay)
    if find_spec("confluent_kafka") is None or find_spec("kafka") is None:
        raise ChaosError("the workload needs confluent-kafka and kafka-python: "
                         "pip install 'pykraft[clients]'")
    if (options.directory / HISTORY_FILE).exists():
        raise ChaosError(f"{options.directory} already holds a run ({HISTORY_FILE}); "
                         "choose another --dir")
    options.directory.mkdir(parents=True, exist_ok=True)
    kafka = (KafkaRuntime.locate(options.kafka_home)
             if options.kafka_brokers or options.kafka_controllers else None)
    nodes = ChaosCluster.create(options.directory / "cluster", controllers=options.controllers,
                                brokers=options.brokers,
                                properties={**CLUSTER_PROPERTIES, **options.properties},
                                kafka_controllers=options.kafka_controllers,
                                kafka_brokers=options.kafka_brokers, kafka=kafka)
    cluster = nodes.cluster
    topology = Topology(tuple(cluster.brokers), tuple(cluster.controllers), options.partitions)
    schedule = schedule_for(options, topology) if steps is None else []
    settings = {k: str(v) for k, v in asdict(options).items()}
    settings["started_at"] = datetime.now(UTC).isoformat()  # to match the servers' logs
    recorder = Recorder(options.directory / HISTORY_FILE)
    recorder.write(RunInfo(options.seed, [f.as_dict() for f in schedule], settings))
    target = Target(cluster.bootstrap_servers, TOPIC, options.partitions)
    injector = Injector(nodes, TOPIC, recorder.fault)
    stop, stop_reading, stop_copying = threading.Event(), threading.Event(), threading.Event()
    try:
        kafka_text = (f" (and Apache Kafka's: {options.kafka_controllers} controllers, "
                      f"{options.kafka_brokers} brokers)" if kafka is not None else "")
        progress(f"starting {options.controllers} controllers and {options.brokers} brokers"
                 f"{kafka_text} in {options.directory}")
        nodes.start_all()
        _create_topic(options, target)
        txns = Target(target.bootstrap, txn_topic(TOPIC), options.partitions)
        copies = Target(target.bootstrap, ctp_topic(TOPIC), options.partitions)
        if options.txn_producers:
            _create_topic(options, txns)
            _create_topic(options, copies)
        _wait(lambda: _all_led(injector, options.partitions), "every partition led",
              HEALTHY_TIMEOUT_S)
        workers: list[threading.Thread] = [
            *(Producing(f"p{i}", target, recorder, options.rate_per_s, stop)
              for i in range(options.producers)),
            *(TxnProducing(f"t{i}", txns, recorder, options.rate_per_s / RECORDS_PER_TXN,
                           options.seed, stop) for i in range(options.txn_producers))]
        readers: list[threading.Thread] = [
            *(Consuming(f"c{i}", target, recorder, stop_reading)
              for i in range(options.consumers)),
            *(TxnConsuming("r0", txns, recorder, stop_reading)
              for _ in range(min(options.txn_producers, 1))),
            Observing(ClusterView(cluster.bootstrap_servers, cluster.bootstrap_controllers,
                                  TOPIC), options.partitions,
                      lambda: nodes.not_listening() + injector.paused(), recorder,
                      stop_reading),
            *_group(options, target, recorder, stop_reading)]
        copier = Transforming(target, copies, stop_copying) if options.txn_producers else None
        origin = recorder.now()
        for worker in (*workers, *readers, *([copier] if copier else [])):
            worker.start()
        if steps is None:
            whole = partial(_whole, nodes, injector, options)
            _inject(schedule, injector, whole if options.mix == BOUNDED else lambda: True,
                    progress, enough)
        else:
            _replay(steps, injector, lambda: recorder.now() - origin, progress, enough)
        injector.heal_all()
        progress("healed; waiting for the cluster to be whole")
        nodes.wait_listening(list(cluster.nodes), HEALTHY_TIMEOUT_S)
        _wait(lambda: _all_led(injector, options.partitions), "every partition led",
              HEALTHY_TIMEOUT_S)
        time.sleep(SETTLE_S)  # some writes on the whole cluster before the producers stop
        stop.set()
        for worker in workers:
            worker.join()
        progress("reading the committed logs")
        logs = _recorded("the committed logs",
                         partial(read_committed, target, COMMITTED_READ_TIMEOUT_S), recorder)
        if options.txn_producers:
            progress("reading the transactions back (read_committed)")
            _recorded("the transactions", partial(read_transactions, txns, TXN_READ_TIMEOUT_S),
                      recorder)
        if copier is not None:
            progress("letting the consume-transform-produce worker catch up, then reading "
                     "its output back")
            try:
                finish(copier, target, copies, {log.partition: log.start + len(log.values)
                                                for log in logs},
                       recorder, stop_copying, DRAIN_TIMEOUT_S)
            except TimeoutError as exc:
                raise ChaosError(f"cannot read the copies back: {exc}") from None
        if options.group_consumers:
            _drain(options, target, recorder, logs, progress)
        stop_reading.set()
        for reader in readers:
            reader.join()
        injector.close()
        cluster.stop_all()
        for controller in cluster.controllers:
            for fence in logged_fences(cluster.nodes[controller].log):
                recorder.write(RefusalFence(recorder.at(fence.at.timestamp()), fence.broker,
                                            fence.epoch))
        for broker in cluster.brokers:
            for partition in range(options.partitions):
                recorder.write(read_replica(cluster.nodes[broker].data, TOPIC, partition,
                                            broker))
    finally:
        stop.set()
        stop_reading.set()
        stop_copying.set()
        injector.heal_all()
        injector.close()
        nodes.close()
        recorder.close()
    return RunResult(recorder.path, schedule, check(read_history(recorder.path)))


def _recorded(what: str, read: Callable[[], Sequence[_Read]], recorder: Recorder
              ) -> Sequence[_Read]:
    """A final read's events, recorded; a read that cannot finish in its time fails the
    run, naming ``what``."""
    try:
        events = read()
    except TimeoutError as exc:
        raise ChaosError(f"cannot read {what} back: {exc}") from None
    for event in events:
        recorder.write(event)
    return events


def _group(options: RunOptions, target: Target, recorder: Recorder,
           stop: threading.Event) -> list[threading.Thread]:
    """The group's members and the observer of its committed offsets (none without members)."""
    if not options.group_consumers:
        return []
    membership = Membership(target, group_id(options.seed), options.group_protocol, recorder,
                            stop)
    view = GroupView(target.bootstrap, target.topic, target.partitions, membership.group)
    return [*(GroupMember(f"g{i}", membership) for i in range(options.group_consumers)),
            GroupObserving(view, recorder, stop)]


def _drain(options: RunOptions, target: Target, recorder: Recorder, logs: Sequence[Committed],
           progress: Callable[[str], None]) -> None:
    """Let the group commit up to every partition's committed end, bounded; the checker
    judges the offsets it reached either way."""
    ends = {log.partition: (log.start, log.start + len(log.values)) for log in logs}
    progress("waiting for the group to commit every partition's end")
    view = GroupView(target.bootstrap, target.topic, target.partitions,
                     group_id(options.seed))
    if not drain(view, ends, recorder, DRAIN_TIMEOUT_S):
        progress(f"the group did not reach every partition's end in {DRAIN_TIMEOUT_S:.0f} s")


def _inject(schedule: list[Fault], injector: Injector, whole: Callable[[], bool],
            progress: Callable[[str], None], enough: threading.Event) -> None:
    """Each fault after its gap, once ``whole`` holds (or :data:`WHOLE_TIMEOUT_S` passed)."""
    for fault in schedule:
        if _stopping(enough, fault.index, progress):
            return
        time.sleep(fault.gap_ms / 1000)  # the schedule's pace, not a wait for state
        try:
            _wait(whole, "the cluster to be whole", WHOLE_TIMEOUT_S)
        except ChaosError as exc:
            progress(f"{exc}; the next fault begins all the same")
        active = injector.begin(fault)
        progress(f"fault {fault.index + 1}/{len(schedule)}: {fault.kind} "
                 f"{active.target if active else 'skipped'}")
        if active is not None:
            time.sleep(fault.hold_ms / 1000)
            injector.end(active)


def _replay(steps: list[Step], injector: Injector, elapsed_ms: Callable[[], int],
            progress: Callable[[str], None], enough: threading.Event) -> None:
    """Each step at its recorded time after the first send (or when the one before it has
    ended, if that ran late), on its recorded nodes, held as long as recorded."""
    for number, step in enumerate(steps, 1):
        if _stopping(enough, number - 1, progress):
            return
        time.sleep(max(0, step.at_ms - elapsed_ms()) / 1000)  # the recorded pace
        progress(f"fault {number}/{len(steps)} (replayed): {step.kind} "
                 f"{step.active.target if step.active else 'skipped'}")
        if step.active is None:
            injector.skip(step.kind, step.target)
            continue
        active = injector.apply(step.active)
        time.sleep(step.hold_ms / 1000)
        injector.end(active)


def _create_topic(options: RunOptions, target: Target) -> None:
    """Create the topic, retrying while too few brokers have registered yet."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    topic = NewTopic(target.topic, num_partitions=options.partitions,
                     replication_factor=options.replication_factor,
                     config={"min.insync.replicas": str(options.min_insync_replicas)})
    deadline = time.monotonic() + TOPIC_TIMEOUT_S
    while True:
        try:
            admin.create_topics([topic], operation_timeout=10)[target.topic].result(15)
            return
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" in str(exc):
                return
            if time.monotonic() > deadline:
                raise ChaosError(f"cannot create topic {target.topic}: {exc}") from None
        time.sleep(0.2)  # brokers still registering: ask again


def _stopping(enough: threading.Event, done: int, progress: Callable[[str], None]) -> bool:
    if enough.is_set():
        progress(f"asked to stop after {done} faults: no more faults")
    return enough.is_set()


def _whole(nodes: ChaosCluster, injector: Injector, options: RunOptions) -> bool:
    """Every node listening, every partition led with all its replicas in sync, and a
    controller active."""
    if nodes.not_listening():
        return False
    found = injector.view.partitions()
    return (len(found) == options.partitions
            and all(leader >= 0 and len(isr) == options.replication_factor
                    for leader, isr in found.values())
            and injector.view.active_controller() is not None)


def _all_led(injector: Injector, partitions: int) -> bool:
    leaders = injector.view.leaders()
    return len(leaders) == partitions and -1 not in leaders.values()


def _wait(condition: Callable[[], bool], what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise ChaosError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.2)  # other processes: polling is the only way to see them change
