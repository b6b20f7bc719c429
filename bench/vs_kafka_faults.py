"""``bench/vs_kafka.py``'s failure and scale workloads, on one running cluster each.

- ``failover``: an idempotent acks=all producer sends to a one-partition RF=3 topic about
  every ms, librdkafka's and then Kafka's own (``VerifiableProducer``, the Java client),
  both with the same prompt retry and reconnect backoffs; SIGKILL of the partition's
  leader, then of the active controller (the cluster's only one: the brokers keep their
  leaders, so this shows whether produce stalls at all); time from the kill to the first
  acknowledgement of a record sent after it, median of ``--trials``. The killed node is
  restarted between trials and the next starts once the ISR is full again.
- ``restart``: ``--restart-bytes`` of 16 KiB records on one broker (12 partitions of RF=1
  all on it), the broker SIGKILLed and started again: seconds from the process's start to
  its listening, and to its first acknowledged produce to a partition it leads.
- ``scale``: ``--scale-producers`` librdkafka producers (threads of this process) for
  ``--seconds`` on one topic of ``--scale-partitions`` partitions (RF=3 acks=all, 1 KiB);
  then CreateTopics of ``--scale-topics`` topics x 10 partitions (RF=3), 100 topics to a
  request, the requests sent at once: seconds until all answered, and until the metadata
  shows every partition led.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable

from confluent_kafka.admin import NewTopic

from java_perf import JavaTools
from peers.base import BenchError
from rdkafka_load import (
    PROMPT_CLIENT,
    READY_TIMEOUT_S,
    acknowledged_at,
    admin,
    create_topic,
    leader_of,
    produce_together,
    unavailable_s,
    wait_in_sync,
)
from vs_kafka_run import BROKERS, MB, Results, Target

RESTART_SIZE = 16384
RESTART_PARTITIONS = 12
SCALE_SIZE = 1024
SCALE_TOPIC_PARTITIONS = 10
#: topics per CreateTopics: Kafka's controller refuses a request of more than 10,000 records
#: (POLICY_VIOLATION "Unable to perform excessively large batch operation"), and 1,000 topics
#: of 10 partitions are 11,000
CREATE_BATCH = 100
#: Bound on a kill's unavailability, a restart's serving, a CreateTopics' propagation.
FAULT_TIMEOUT_S = 300.0
#: VerifiableProducer's records/s, and how many it has acknowledged before the kill.
JAVA_RATE = 1000
JAVA_WARMUP_RECORDS = 1000
#: The Java producer's settings: librdkafka's prompt backoffs (:data:`PROMPT_CLIENT`), and
#: the retries VerifiableProducer turns off by default (idempotence needs them).
JAVA_PROMPT_PRODUCER = {
    "enable.idempotence": "true", "linger.ms": "0", "retries": str(2**31 - 1),
    **{key: str(value) for key, value in PROMPT_CLIENT.items()
       if key != "topic.metadata.refresh.fast.interval.ms"},  # librdkafka's only
    "delivery.timeout.ms": str(int(FAULT_TIMEOUT_S * 1000))}
#: The failover's producers: librdkafka's (this process) and Kafka's Java client.
FAILOVER_CLIENTS = ("librdkafka", "VerifiableProducer")


def failover_workload(target: Target, results: Results) -> None:
    topic = "failover"
    create_topic(target.bootstrap, topic, 1, BROKERS)
    for victim in ("partition leader", "active controller"):
        for client in FAILOVER_CLIENTS:
            def trials(victim: str = victim, client: str = client
                       ) -> tuple[dict[str, float], int]:
                gaps = [failover_trial(target, topic, victim, client)
                        for _ in range(target.args.trials)]
                return ({"median ms": statistics.median(gaps) * 1000,
                         "min ms": min(gaps) * 1000, "max ms": max(gaps) * 1000}, 0)

            target.measure(results, "failover", f"failover: SIGKILL of the {victim}, first "
                           f"ack after it, trials: {target.args.trials} [{client} idempotent "
                           "acks=all]", trials)


def failover_trial(target: Target, topic: str, victim: str, client: str) -> float:
    """One kill of ``victim`` under ``client``'s producer: seconds without an
    acknowledgement; the node restarted and the ISR full again before it returns."""
    cluster = target.cluster
    node = (leader_of(target.bootstrap, topic) if victim == "partition leader"
            else min(cluster.controllers))
    kill = functools.partial(cluster.kill, node)
    gap = (unavailable_s(target.bootstrap, topic, kill, FAULT_TIMEOUT_S)
           if client == "librdkafka" else
           java_unavailable_s(target.tools, target.bootstrap, topic, kill))
    cluster.start(node)
    cluster.wait_listening([node], FAULT_TIMEOUT_S)
    wait_in_sync(target.bootstrap, topic, 1, BROKERS, FAULT_TIMEOUT_S)
    return gap


def java_unavailable_s(tools: JavaTools, bootstrap: str, topic: str,
                       fault: Callable[[], None]) -> float:
    """Seconds from ``fault()`` to the first acknowledgement of a record sent after it, as
    Kafka's VerifiableProducer (idempotent, acks=all, :data:`JAVA_RATE` records/s) saw
    them, once it has had :data:`JAVA_WARMUP_RECORDS` acknowledged."""
    with tools.verifiable_producer(bootstrap, topic, JAVA_RATE,
                                   JAVA_PROMPT_PRODUCER) as sends:
        sends.wait_acknowledged(JAVA_WARMUP_RECORDS, FAULT_TIMEOUT_S)
        fault_ms = time.time() * 1000
        fault()
        return (sends.first_ack_sent_after(fault_ms, FAULT_TIMEOUT_S) - fault_ms) / 1000


def restart_workload(target: Target, results: Results) -> None:
    cluster = target.cluster
    node = cluster.brokers[0]
    topic = "restart"
    create_topic(target.bootstrap, topic, RESTART_PARTITIONS, 1,
                 assignment=[[node]] * RESTART_PARTITIONS)
    records = max(1, target.args.restart_bytes // RESTART_SIZE)
    target.tools.produce(target.bootstrap, topic, records, RESTART_SIZE, acks="1",
                         compression="none", timeout_s=FAULT_TIMEOUT_S + target.timeout_s)

    def restart() -> tuple[dict[str, float], int]:
        cluster.kill(node)
        started = time.monotonic()
        cluster.start(node)
        cluster.wait_listening([node], FAULT_TIMEOUT_S)
        listening = time.monotonic()
        served = acknowledged_at(target.bootstrap, topic, 0, FAULT_TIMEOUT_S)
        return ({"GB on the broker": records * RESTART_SIZE / 1e9,
                 "listening s": listening - started, "serving s": served - started}, 0)

    target.measure(results, "restart", "restart after SIGKILL: process start to listening "
                   "and to its first produce acknowledged [librdkafka acks=1]", restart)


def scale_workload(target: Target, results: Results) -> None:
    args = target.args
    topic = "scale"
    create_topic(target.bootstrap, topic, args.scale_partitions, BROKERS)

    def produce() -> tuple[dict[str, float], int]:
        done = produce_together(target.bootstrap, topic, SCALE_SIZE, args.seconds, acks="all",
                                producers=args.scale_producers)
        rate = done.records / done.seconds
        return ({"MB/s": rate * SCALE_SIZE / MB, "records/s": rate},
                done.records * SCALE_SIZE * BROKERS)

    target.measure(results, "scale", f"{args.scale_partitions} partitions RF=3 acks=all 1 KiB, "
                   f"{args.scale_producers} producers [librdkafka]", produce)
    target.measure(results, "scale", f"CreateTopics {args.scale_topics} topics x "
                   f"{SCALE_TOPIC_PARTITIONS} partitions RF=3 [AdminClient]",
                   lambda: (create_many(target.bootstrap, args.scale_topics), 0))


def create_many(bootstrap: str, count: int) -> dict[str, float]:
    """Seconds until CreateTopics of ``count`` topics, :data:`CREATE_BATCH` to a request and
    the requests all sent at once, answered (each created), and until the metadata shows
    every one of their partitions with a leader."""
    client = admin(bootstrap)
    names = [f"many-{i}" for i in range(count)]
    started = time.monotonic()
    futures = [future for first in range(0, count, CREATE_BATCH)
               for future in client.create_topics(
                   [NewTopic(name, SCALE_TOPIC_PARTITIONS, BROKERS)
                    for name in names[first:first + CREATE_BATCH]],
                   operation_timeout=FAULT_TIMEOUT_S,
                   request_timeout=FAULT_TIMEOUT_S).values()]
    for future in futures:
        future.result(FAULT_TIMEOUT_S)
    answered = time.monotonic()
    deadline = answered + FAULT_TIMEOUT_S
    while not _all_led(bootstrap, names):
        if time.monotonic() > deadline:
            raise BenchError(f"{count} topics not all led {FAULT_TIMEOUT_S:.0f} s after "
                             "CreateTopics answered")
        time.sleep(0.1)  # another process's state: polling is the only way to see it
    return {"answered s": answered - started, "in metadata s": time.monotonic() - started}


def _all_led(bootstrap: str, names: list[str]) -> bool:
    topics = admin(bootstrap).list_topics(timeout=READY_TIMEOUT_S).topics
    return all(name in topics and len(topics[name].partitions) == SCALE_TOPIC_PARTITIONS
               and all(p.leader >= 0 for p in topics[name].partitions.values())
               for name in names)
