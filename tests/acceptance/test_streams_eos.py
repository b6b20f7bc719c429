"""Kafka Streams (kafka-streams 4.4.0) word count with ``processing.guarantee=exactly_once_v2``
on 1 controller + 3 pykraft brokers, the application and partition leaders SIGKILLed during
the run (``java/WordCountEos.java``, run by ``java`` on its own state directory).

The input is LINES lines of words drawn with a fixed seed, produced in CHUNKS chunks by an
idempotent confluent-kafka producer, each once the application committed all it had. Faults
land while the application processes a chunk, with a transaction of its open:

1. once an output partition holds records of an open transaction (its last stable offset
   behind its high watermark), the application is SIGKILLed and started again;
2. once it runs again and a broker lists its transactional id as Ongoing, that broker (the
   leader of the id's ``__transaction_state`` partition) is SIGKILLed; the application goes
   on without it (replication factor 3, ``min.insync.replicas`` 2) through the next chunk,
   then the broker is started again;
3. once an output partition holds records of an open transaction, its leader and the
   application are SIGKILLed together, and both started again.

Then, once the last chunk is in, the latest committed count of each word (read_committed)
must equal ``collections.Counter`` of the input's words; the application is closed, no
transaction is left open on the output, and every word's committed output is exactly 1, 2,
..., its count: the record cache is off, so each input word yields one output record, and a
word counted twice or lost shows as a repeated or missing value. Every wait is a bounded loop
polling a condition. With ``-s`` the test prints what happened when, and how many output
records aborted transactions left in the log.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from broker_harness import (
    PROPERTIES,
    broker_call,
    create_topic,
    partition_leaders,
    running_cluster,
    wait_for_brokers,
)
from java_kafka import (
    JAVA_SOURCES,
    compile_java,
    finalize_transaction_version,
    java_command,
    kafka_classpath,
    skip_module_off_ci,
    transaction_epochs,
)

from pykraft.errors import PyKraftError
from pykraft.messages.kafka.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from pykraft.messages.kafka.list_transactions_request import ListTransactionsRequest
from pykraft.tools.local_cluster import LocalCluster

skip_module_off_ci(streams=True)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

INPUT, OUTPUT, APPLICATION = "words-in", "word-counts", "wordcount-eos"
PARTITIONS = 3
LINES, CHUNKS, SEED = 4800, 6, 30
PROPS = {**PROPERTIES, "transaction.state.log.num.partitions": "3",
         "offsets.topic.num.partitions": "3", "group.initial.rebalance.delay.ms": "0"}
WAIT_S = 90.0  # any one condition
POLL_S = 0.2
LATEST = -1  # ListOffsets' timestamp for the end offset


def input_lines() -> list[str]:
    """LINES lines of 1-9 words from a vocabulary of 200, Zipf-weighted: 24,118 words, the
    commonest 4,177 times, the rarest 10."""
    rng = random.Random(SEED)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pu"]
    vocabulary = sorted({"".join(rng.choices(syllables, k=rng.randint(1, 4)))
                         for _ in range(400)})[:200]
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    return [" ".join(rng.choices(vocabulary, weights, k=rng.randint(1, 9)))
            for _ in range(LINES)]


class StreamsApp:
    """WordCountEos in its own JVM, run again on the same state directory after a kill; each
    run logs into its own file."""

    def __init__(self, classpath: str, bootstrap: str, base: Path) -> None:
        self._command = java_command(classpath, "WordCountEos", bootstrap, APPLICATION,
                                     str(base / "state"), INPUT, OUTPUT)
        self._base = base
        self._runs = 0
        self._jvm: subprocess.Popen[str] | None = None
        self.log = base / "app-0.log"

    def start(self) -> None:
        assert self._jvm is None
        self.log = self._base / f"app-{self._runs}.log"
        self._runs += 1
        with self.log.open("ab") as log:
            self._jvm = subprocess.Popen(self._command, stdin=subprocess.PIPE, stdout=log,
                                         stderr=log, text=True)

    def kill(self) -> None:
        """SIGKILL (by our child's PID) and reap."""
        assert self._jvm is not None
        self._jvm.send_signal(signal.SIGKILL)
        self._jvm.wait(timeout=30)
        self._jvm = None

    def close(self) -> int:
        """EOF on stdin: Streams closes (commits, leaves the group); the exit code."""
        assert self._jvm is not None and self._jvm.stdin is not None
        self._jvm.stdin.close()
        try:
            code = self._jvm.wait(timeout=60)
        finally:
            if self._jvm.poll() is None:
                self._jvm.kill()
                self._jvm.wait(timeout=30)
            self._jvm = None
        return code

    def stop(self) -> None:
        """SIGKILL if it still runs (a failed test must not leave it behind)."""
        if self._jvm is not None:
            self.kill()

    def check(self) -> None:
        """Fail with its log if it was started and exited or went to ERROR."""
        if self._jvm is None:
            return
        text = self.log.read_text(errors="replace")
        if self._jvm.poll() is not None or "STATE ERROR" in text:
            pytest.fail(f"the Streams application failed; {self.log}:\n{text[-4000:]}")

    def running(self) -> bool:
        states = [line for line in self.log.read_text(errors="replace").splitlines()
                  if line.startswith("STATE ")]
        return bool(states) and states[-1] == "STATE RUNNING"


class OutputReader:
    """The output topic as a consumer (confluent-kafka) of ``isolation`` reads it from the
    start: every word's counts in offset order."""

    def __init__(self, bootstrap: str, isolation: str = "read_committed") -> None:
        import confluent_kafka

        self._consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": "word-count-checker",
            "enable.auto.commit": False, "isolation.level": isolation,
            "enable.partition.eof": True, "log_level": 0})
        self._consumer.assign([confluent_kafka.TopicPartition(OUTPUT, p, 0)
                               for p in range(PARTITIONS)])
        self._eof_code = confluent_kafka.KafkaError._PARTITION_EOF
        self.history: dict[str, list[int]] = {}
        self.records = 0
        self.at_end: set[int] = set()

    def read(self) -> bool:
        """One batch of what is there (at most one poll of POLL_S); whether it held any."""
        messages = self._consumer.consume(500, POLL_S)
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == self._eof_code:
                    self.at_end.add(message.partition() or 0)
                continue
            self.at_end.discard(message.partition() or 0)
            key, value = message.key(), message.value()
            assert key is not None and value is not None and len(value) == 8
            self.history.setdefault(key.decode(), []).append(
                int.from_bytes(value, "big", signed=True))
            self.records += 1
        return bool(messages)

    def caught_up(self) -> bool:
        """Whether a poll of POLL_S found nothing more (the application is idle or down)."""
        return not self.read()

    def grown_beyond(self, records: int) -> bool:
        self.read()
        return self.records > records

    def read_to_end(self) -> bool:
        self.read()
        return self.at_end == set(range(PARTITIONS))

    def counts_are(self, expected: Counter[str]) -> bool:
        self.read()
        return self.latest() == expected

    def latest(self) -> dict[str, int]:
        return {word: counts[-1] for word, counts in self.history.items()}

    def close(self) -> None:
        self._consumer.close()


class Run:
    """The cluster, the application, the input producer and the output reader of one test,
    and a log of what happened when (printed at the end)."""

    def __init__(self, cluster: LocalCluster, app: StreamsApp, output: OutputReader) -> None:
        import confluent_kafka

        self.cluster, self.app, self.output = cluster, app, output
        self.producer = confluent_kafka.Producer({
            "bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True,
            "acks": "all", "linger.ms": 5, "log_level": 0})
        self.failed_deliveries: list[str] = []
        self.started = time.monotonic()
        self.events: list[str] = []
        self.words = 0  # in the input produced so far
        self.level = 0  # committed output records when the last chunk was fed

    def note(self, what: str) -> None:
        self.events.append(f"{time.monotonic() - self.started:6.1f} s  {what} (committed "
                           f"output: {self.output.records} of {self.words} input words)")

    def produce(self, lines: list[str], first: int) -> None:
        """Each line to partition (line number % PARTITIONS), all acknowledged."""
        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                self.failed_deliveries.append(f"{message.value()!r}: {error}")

        for number, line in enumerate(lines, first):
            self.producer.produce(INPUT, line.encode(), partition=number % PARTITIONS,
                                  on_delivery=delivered)
        assert self.producer.flush(WAIT_S) == 0, "input not acknowledged in time"
        assert not self.failed_deliveries
        self.words += sum(len(line.split()) for line in lines)

    def feed(self, chunk: int, lines: list[str]) -> None:
        """Once the application committed all it had (or is down), the input's ``chunk``
        (``lines``, numbered from ``chunk * len(lines)``)."""
        self.wait("the output caught up", self.output.caught_up)
        self.level = self.output.records
        self.produce(lines, chunk * len(lines))

    def wait(self, what: str, condition: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
        """Until ``condition`` (which reads the output) holds; fails if the application
        does."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            self.app.check()
            if time.monotonic() > deadline:
                pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}; "
                            + "\n".join(self.events) + f"\n{self.app.log}:\n"
                            + self.app.log.read_text(errors="replace")[-3000:])
        self.note(what)

    def wait_for_progress(self) -> None:
        """Until the application committed output of the chunk fed last: it is processing
        that chunk (a commit every 100 ms, the chunk takes it about a second)."""
        self.wait("output of the new input committed",
                  lambda: self.output.grown_beyond(self.level))

    def restart_broker(self, broker_id: int) -> None:
        self.cluster.start(broker_id)
        wait_for_brokers(self.cluster, len(self.cluster.brokers))
        self.note(f"broker {broker_id} back")

    def coordinator(self) -> int:
        """The broker coordinating an ongoing transaction of the application (each broker
        lists the transactional ids it coordinates)."""
        found: list[int] = []

        def listed() -> bool:
            for broker_id in self.cluster.running():
                if broker_id not in self.cluster.brokers:
                    continue
                try:
                    answer = broker_call(self.cluster, broker_id, ListTransactionsRequest(
                        state_filters=("Ongoing",), producer_id_filters=()))
                except (PyKraftError, OSError, TimeoutError):
                    continue
                if any(t.transactional_id.startswith(APPLICATION)
                       for t in answer.transaction_states):
                    found.append(broker_id)
                    return True
            return False

        self.wait("the application's transaction coordinator", listed)
        return found[0]

    def open_transactions(self) -> dict[int, tuple[int, int]] | None:
        """Output partitions whose last stable offset is behind the high watermark (an open
        transaction wrote there): partition -> (LSO, HW), as their leaders answer ListOffsets;
        None while a leader cannot answer."""
        try:
            via = next(b for b in self.cluster.running() if b in self.cluster.brokers)
            leaders = partition_leaders(self.cluster, via, OUTPUT)
            behind = {}
            for partition, leader in enumerate(leaders):
                committed, uncommitted = (self._end(leader, partition, isolation)
                                          for isolation in (1, 0))
                if committed is None or uncommitted is None:
                    return None
                if committed != uncommitted:
                    behind[partition] = (committed, uncommitted)
        except (PyKraftError, OSError, TimeoutError):
            return None
        return behind

    def _end(self, leader: int, partition: int, isolation: int) -> int | None:
        """The end offset (``isolation`` 1: the LSO, 0: the high watermark) of an output
        partition as ``leader`` answers (None if it refuses: not the leader any more)."""
        answer = broker_call(self.cluster, leader, ListOffsetsRequest(
            replica_id=-1, isolation_level=isolation, topics=(ListOffsetsTopic(
                name=OUTPUT, partitions=(ListOffsetsPartition(
                    partition_index=partition, timestamp=LATEST),)),)))
        (found,) = answer.topics[0].partitions
        return int(found.offset) if found.error_code == 0 else None

    def wait_for_open_output(self) -> int:
        """Until an output partition holds records of an open transaction; that partition."""
        found: list[int] = []

        def open_output() -> bool:
            behind = self.open_transactions()
            found[:] = sorted(behind or ())
            return bool(found)

        self.wait("a transaction open on the output", open_output)
        return found[0]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory,
            transaction_version: int) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("streams-eos") / "cluster", PROPS,
                         brokers=3) as made:
        finalize_transaction_version(made, transaction_version)
        for topic in (INPUT, OUTPUT):
            create_topic(made.bootstrap_servers, topic, PARTITIONS, replication=3,
                         configs={"min.insync.replicas": "2"})
        yield made


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    made: str = compile_java(JAVA_SOURCES / "WordCountEos.java",
                             tmp_path_factory.mktemp("word-count"),
                             kafka_classpath(streams=True))
    return made


def test_word_count_exactly_once_through_kills(cluster: LocalCluster, classpath: str,
                                               transaction_version: int,
                                               tmp_path: Path) -> None:
    lines = input_lines()
    expected = Counter(word for line in lines for word in line.split())
    size = LINES // CHUNKS
    chunks = [lines[i:i + size] for i in range(0, LINES, size)]
    assert len(chunks) == CHUNKS

    app = StreamsApp(classpath, cluster.bootstrap_servers, tmp_path)
    output = OutputReader(cluster.bootstrap_servers)
    run = Run(cluster, app, output)
    try:
        run.feed(0, chunks[0])
        app.start()
        run.wait("the application running", app.running)
        run.wait_for_progress()

        run.feed(1, chunks[1])
        partition = run.wait_for_open_output()
        app.kill()
        run.note(f"application SIGKILLed (a transaction open on {OUTPUT}-{partition})")
        app.start()
        run.wait("the application running again", app.running)

        run.feed(2, chunks[2])
        coordinator = run.coordinator()
        cluster.kill(coordinator)
        run.note(f"broker {coordinator} (coordinating the open transaction) SIGKILLed")
        run.feed(3, chunks[3])
        run.wait_for_progress()
        run.restart_broker(coordinator)

        run.feed(4, chunks[4])
        partition = run.wait_for_open_output()
        via = next(b for b in cluster.brokers if b != coordinator)
        leader = partition_leaders(cluster, via, OUTPUT)[partition]
        cluster.kill(leader)
        app.kill()
        run.note(f"broker {leader} (leader of {OUTPUT}-{partition}, a transaction open there) "
                 "and the application SIGKILLed")
        app.start()
        run.restart_broker(leader)

        run.feed(5, chunks[5])
        run.wait("every count right", lambda: output.counts_are(expected))
        assert app.close() == 0
        run.note("application closed")
        run.wait("no transaction open on the output", lambda: run.open_transactions() == {})
        run.wait("the whole output read", output.read_to_end)
        everything = OutputReader(cluster.bootstrap_servers, "read_uncommitted")
        try:
            run.wait("the whole output read uncommitted", everything.read_to_end)
        finally:
            everything.close()
        print("\n".join(run.events))
        print(f"aborted output records: {everything.records - output.records}")

        assert output.latest() == expected
        wrong = {word: counts for word, counts in output.history.items()
                 if counts != list(range(1, expected[word] + 1))}
        assert not wrong, f"words counted twice or lost: {wrong}"
        assert output.records == sum(expected.values())
        # transaction.version 2: a new producer epoch for each transaction; before, one per
        # run of the application
        epochs = transaction_epochs(cluster, OUTPUT)
        increasing = all(all(later > earlier for earlier, later in pairwise(found))
                         for found in epochs.values())
        assert increasing == (transaction_version == 2), epochs
    finally:
        app.stop()
        output.close()
        run.producer.flush(10)
