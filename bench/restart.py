"""Restart after kill -9 (issue 29): how long a broker holding N GB takes to serve again.

    python bench/restart.py [--bytes 5G] [--partitions 12] [--record-size 1024]
        [--systems pykraft,kafka] [--variant NAME=SRC_DIR ...] [--rounds 3] [--dir DIR]
        [--no-compile] [--json]

Each system gets a one-controller, one-broker cluster (Apache Kafka's from
``.cache/kafka/4.4.0``), one topic of ``--partitions`` partitions filled with ``--bytes`` of
``--record-size`` records by confluent-kafka (acks=1, round-robin). The broker is then killed
with SIGKILL and its crash state saved (its ``recovery-point-offset-checkpoint`` and the
other checkpoints of its log directory, and which producer snapshots existed); each round
restores that state, restarts the broker and times, from the restart, (a) its listener
accepting, (b) a Metadata listing it (unfenced) as every partition's leader, (c) an acks=all
Produce to a partition acknowledged -- then kills it again. Every round thus restarts from the
same crash; each round restarts every system (and variant) once, so they are alternated
while the machine's load drifts. The trees run are byte-compiled first (``--no-compile``:
not), as an installed wheel is. A ``--variant NAME=SRC`` runs the pykraft nodes (controller
and broker) from another source tree (e.g. an export of main's ``src``) beside the
checkout's own (``pykraft``), for before/after in one window. Data directories go under
``--dir`` and are removed at the end.

:func:`kill_and_restart` is the measurement, importable: given a started
:class:`~pykraft.tools.local_cluster.LocalCluster` and a broker id it returns the three times.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import signal
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from rich.console import Console
from rich.table import Table

import pykraft
from pykraft.tools.kafka_runtime import KafkaRuntime
from pykraft.tools.local_cluster import LocalCluster, _accepts

ROOT = Path(__file__).resolve().parents[1]
KAFKA_HOME = ROOT / ".cache" / "kafka" / "4.4.0"
TOPIC = "bench-restart"
DEADLINE_S = 180.0
PROBE_PAUSE_S = 0.01
#: the client side's backoffs kept short, so the probes see the broker when it is ready
FAST_CLIENT = {"reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50,
               "retry.backoff.ms": 10, "retry.backoff.max.ms": 50,
               "socket.connection.setup.timeout.ms": 1000}
#: the log-directory files a crash leaves that decide what a restart recovers
CRASH_FILES = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
               "cleaner-offset-checkpoint", "replication-offset-checkpoint")
console = Console(stderr=True)


class RestartBenchError(Exception):
    """A probe did not succeed before the deadline, or a node exited."""


@dataclass(frozen=True, slots=True)
class RestartTimes:
    """Seconds from the restart until the listener accepts, until Metadata shows the broker
    unfenced and leading, until an acks=all Produce is acknowledged."""

    listening_s: float
    unfenced_s: float
    produced_s: float


def kill_and_restart(cluster: LocalCluster, broker_id: int, topic: str, partition: int = 0,
                     *, before_start: Callable[[], None] | None = None,
                     deadline_s: float = DEADLINE_S) -> RestartTimes:
    """SIGKILL ``broker_id``, restart it and time it serving again (see :class:`RestartTimes`).
    ``before_start`` runs between the kill and the restart (e.g. to restore a crash state);
    ``topic``'s partitions must be led by this broker (a one-broker cluster, or RF=1)."""
    cluster.kill(broker_id)
    if before_start is not None:
        before_start()
    started = time.monotonic()
    cluster.start(broker_id)
    address = cluster.nodes[broker_id].address
    _until(lambda: _accepts(cluster.nodes[broker_id].port), cluster, broker_id,
           started + deadline_s, "listen")
    listening = time.monotonic() - started
    admin = AdminClient({"bootstrap.servers": address, **FAST_CLIENT})
    _until(lambda: _leads_all(admin, broker_id, topic), cluster, broker_id,
           started + deadline_s, "show as the leader in Metadata")
    unfenced = time.monotonic() - started
    remaining_ms = int((started + deadline_s - time.monotonic()) * 1000)
    _produce_one(address, topic, partition, max(remaining_ms, 1000))
    return RestartTimes(listening, unfenced, time.monotonic() - started)


def _until(check: Callable[[], bool], cluster: LocalCluster, node_id: int, deadline: float,
           what: str) -> None:
    while not check():
        if not cluster.is_running(node_id):
            raise RestartBenchError(f"node {node_id} exited; see {cluster.nodes[node_id].log}")
        if time.monotonic() > deadline:
            raise RestartBenchError(f"node {node_id} did not {what} in time")
        time.sleep(PROBE_PAUSE_S)  # another process: polling is the only way to see it


def _leads_all(admin: AdminClient, broker_id: int, topic: str) -> bool:
    try:
        metadata = admin.list_topics(topic, timeout=1.0)
    except KafkaException:  # not answered in time (the broker is still starting)
        return False
    found = metadata.topics.get(topic)
    return (broker_id in metadata.brokers and found is not None and found.error is None
            and bool(found.partitions)
            and all(p.leader == broker_id for p in found.partitions.values()))


def _produce_one(address: str, topic: str, partition: int, timeout_ms: int) -> None:
    producer = Producer({"bootstrap.servers": address, "acks": "all",
                         "message.timeout.ms": timeout_ms, **FAST_CLIENT})
    outcome: list[KafkaError | None] = []

    def delivered(error: KafkaError | None, _message: Message) -> None:
        outcome.append(error)

    producer.produce(topic, b"after the restart", partition=partition, on_delivery=delivered)
    producer.flush(timeout_ms / 1000 + 5)
    if outcome != [None]:
        raise RestartBenchError(f"the produce after the restart failed: {outcome}")


# ---------------------------------------------------------------------------- filling


def fill(bootstrap: str, topic: str, partitions: int, total_bytes: int,
         record_size: int) -> float:
    """Create ``topic`` and produce ``total_bytes`` of ``record_size`` records round-robin;
    returns MB/s."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(60)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20,
                         "batch.size": 1_000_000, "queue.buffering.max.kbytes": 512 * 1024,
                         "message.timeout.ms": 120_000})
    failures: list[KafkaError] = []

    def delivered(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            failures.append(error)

    value = os.urandom(record_size)
    records = total_bytes // record_size
    started = time.monotonic()
    for number in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=number % partitions,
                                 on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        if number % 10_000 == 0:
            producer.poll(0)
            if failures:
                raise RestartBenchError(f"filling failed: {failures[0]}")
    if producer.flush(300) or failures:
        raise RestartBenchError(f"filling failed: {failures[:1]} or did not finish")
    return records * record_size / (time.monotonic() - started) / 1e6


# ---------------------------------------------------------------------------- crash state


@dataclass(frozen=True, slots=True)
class CrashState:
    """What a kill left in a broker's log directory that decides its recovery: the
    checkpoint files' bytes and each partition's producer snapshot names."""

    files: dict[Path, bytes]
    snapshots: dict[Path, frozenset[str]]

    @classmethod
    def save(cls, log_dir: Path) -> CrashState:
        files = {log_dir / name: (log_dir / name).read_bytes() for name in CRASH_FILES
                 if (log_dir / name).exists()}
        snapshots = {child: frozenset(p.name for p in child.glob("*.snapshot"))
                     for child in log_dir.iterdir() if child.is_dir()}
        return cls(files, snapshots)

    def restore(self, log_dir: Path) -> None:
        """Back to the saved state: checkpoints rewritten, later snapshots and a clean
        shutdown marker removed (the segments themselves only grow by the probes)."""
        for name in CRASH_FILES:
            if log_dir / name not in self.files:
                (log_dir / name).unlink(missing_ok=True)
        for path, data in self.files.items():
            path.write_bytes(data)
        (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
        for child, names in self.snapshots.items():
            for snapshot in child.glob("*.snapshot"):
                if snapshot.name not in names:
                    snapshot.unlink()


# ---------------------------------------------------------------------------- systems


@dataclass(frozen=True, slots=True)
class Round:
    system: str
    round: int
    fill_mb_s: float
    times: RestartTimes


@contextmanager
def source_tree(src: Path | None) -> Iterator[None]:
    """Nodes started inside run pykraft from ``src`` (None: this checkout)."""
    before = os.environ.get("PYTHONPATH")
    if src is not None:
        os.environ["PYTHONPATH"] = str(src)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def compile_sources(variants: dict[str, Path | None]) -> None:
    """Byte-compile each pykraft tree run, as installing a wheel does (Kafka's jars are
    compiled too): with PYTHONDONTWRITEBYTECODE set, every start would compile ~1,000
    modules again, seconds on a loaded machine."""
    for src in variants.values():
        tree = src if src is not None else Path(pykraft.__file__).parents[1]
        compileall.compile_dir(tree, quiet=1)


def make_cluster(base: Path, kafka: bool) -> LocalCluster:
    properties = {"num.partitions": "1", "log.retention.bytes": "-1",
                  "log.retention.ms": "-1", "offsets.topic.replication.factor": "1"}
    if kafka:
        return LocalCluster.create(base, 0, properties, kafka_controllers=1, kafka_brokers=1,
                                   kafka=KafkaRuntime.locate(KAFKA_HOME))
    return LocalCluster.create(base, 1, properties, brokers=1)


def restart_controller(cluster: LocalCluster) -> None:
    for controller in cluster.controllers:
        cluster.stop(controller)
        cluster.start(controller)
    cluster.wait_listening(cluster.controllers)


@dataclass(frozen=True, slots=True)
class Subject:
    """One system's cluster, filled, its broker killed once and the crash state saved."""

    name: str
    cluster: LocalCluster
    crash: CrashState
    fill_mb_s: float

    @property
    def broker(self) -> int:
        return self.cluster.brokers[0]

    @property
    def kafka(self) -> bool:
        return self.broker in self.cluster.kafka_nodes


def prepare(name: str, cluster: LocalCluster, args: argparse.Namespace) -> Subject:
    """Fill the cluster's topic, kill its broker and save the crash; the broker is started
    again once, untimed (it warms the page cache as a first restart would)."""
    cluster.start_all()
    cluster.wait_listening(cluster.brokers)
    console.print(f"[bold]{name}[/]: filling {args.bytes / 1e9:.2f} GB ...")
    fill_mb_s = fill(cluster.bootstrap_servers, TOPIC, args.partitions, args.bytes,
                     args.record_size)
    console.print(f"  filled at {fill_mb_s:.1f} MB/s")
    broker = cluster.brokers[0]
    cluster.kill(broker)
    crash = CrashState.save(cluster.nodes[broker].data)
    cluster.start(broker)
    return Subject(name, cluster, crash, fill_mb_s)


def one_round(subject: Subject, variant: str, src: Path | None, number: int,
              variants: int) -> Round:
    """Restart the subject's broker from its crash state (pykraft from ``src``; with
    several variants the controller is restarted from it first, as it decides the
    registration)."""
    cluster, log_dir = subject.cluster, subject.cluster.nodes[subject.broker].data
    with source_tree(src):
        if variants > 1 and not subject.kafka:
            restart_controller(cluster)
            _produce_one(cluster.bootstrap_servers, TOPIC, 0, 60_000)
        times = kill_and_restart(cluster, subject.broker, TOPIC,
                                 before_start=lambda: subject.crash.restore(log_dir))
    console.print(f"  {variant} round {number}: {times}")
    return Round(variant, number, subject.fill_mb_s, times)


def run(systems: list[str], base: Path, args: argparse.Namespace,
        variants: dict[str, Path | None]) -> list[Round]:
    """Fill every system's cluster, then restart their brokers ``--rounds`` times, every
    system and variant once per round (alternated: the machine's load drifts)."""
    clusters = {name: make_cluster(base / name, name == "kafka") for name in systems}
    rounds: list[Round] = []
    try:
        subjects = [prepare(name, cluster, args) for name, cluster in clusters.items()]
        for number in range(args.rounds):
            for subject in subjects:
                runs = [(subject.name, None)] if subject.kafka else list(variants.items())
                rounds += [one_round(subject, variant, src, number, len(variants))
                           for variant, src in runs]
    finally:
        for cluster in clusters.values():
            cluster.stop_all()
            cluster.delete()
    return rounds


def medians(rounds: list[Round]) -> dict[str, dict[str, float]]:
    """Each system's (or variant's) median of each time over its rounds."""
    names = dict.fromkeys(r.system for r in rounds)
    return {name: {field: statistics.median(getattr(r.times, field) for r in rounds
                                            if r.system == name)
                   for field in RestartTimes.__slots__}
            for name in names}


def table(rounds: list[Round]) -> Table:
    out = Table(title="restart after kill -9 (seconds from the restart)")
    for column in ("system", "round", "listening", "unfenced + leader", "produce acked"):
        out.add_column(column)
    for r in rounds:
        out.add_row(r.system, str(r.round), f"{r.times.listening_s:.2f}",
                    f"{r.times.unfenced_s:.2f}", f"{r.times.produced_s:.2f}")
    return out


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text[-1:].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bytes", type=parse_size, default=parse_size("5G"))
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--record-size", type=int, default=1024)
    parser.add_argument("--systems", default="pykraft,kafka")
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME=SRC: also run pykraft from SRC (a source tree's src/)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--no-compile", action="store_true",
                        help="run pykraft from its sources without byte-compiling them first")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.bytes < args.record_size or args.partitions < 1 or args.rounds < 1:
        parser.error("--bytes must hold a record; --partitions and --rounds at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    variants: dict[str, Path | None] = {"pykraft": None}
    for spec in args.variant:
        name, _, src = spec.partition("=")
        variants[name] = Path(src).resolve()
    if not args.no_compile:
        compile_sources(variants)
    base = Path(tempfile.mkdtemp(prefix="restart-", dir=args.dir))
    load_before = os.getloadavg()
    try:
        rounds = run(args.systems.split(","), base, args, variants)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    load_after = os.getloadavg()
    if args.json:
        print(json.dumps({"bytes": args.bytes, "partitions": args.partitions,
                          "load_before": load_before, "load_after": load_after,
                          "rounds": [asdict(r) for r in rounds],
                          "medians": medians(rounds)}, indent=1))
    else:
        Console().print(table(rounds))
        for name, times in medians(rounds).items():
            print(f"median {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in times.items()))
        print(f"load average before {load_before}, after {load_after}")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # clean up the clusters too
    raise SystemExit(main())
