"""Storage faults on real processes: bytes rotting in a leader's segment fail only the
partition they are in, and a leader whose log directory fills up leaves the cluster so that
another replica leads, as Kafka's log-directory failure handling does."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_harness import (
    PROPERTIES,
    broker_call,
    create_topic,
    partition_state,
    produce_one,
    running_cluster,
    wait_for,
    wait_for_brokers,
)

from pykraft.errors import PyKraftError
from pykraft.messages.kafka import fetch_request as fetch
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import iter_batches
from pykraft.tools.local_cluster import LocalCluster


def _topic_id(cluster: LocalCluster, broker: int, topic: str) -> uuid.UUID:
    def led() -> uuid.UUID | None:
        state = partition_state(cluster, broker, topic)
        return state.topic_id if state is not None and state.leader == broker else None

    topic_id: uuid.UUID = wait_for(f"{topic} led by {broker}", led)
    return topic_id


def _fetch(cluster: LocalCluster, broker: int, offsets: dict[uuid.UUID, int]) -> Any:
    """A consumer's Fetch of partition 0 of each topic (by id), from the given offsets."""
    return broker_call(cluster, broker, fetch.FetchRequest(
        max_wait_ms=0, min_bytes=0, topics=tuple(
            fetch.FetchTopic(topic_id=topic_id, partitions=(fetch.FetchPartition(
                partition=0, fetch_offset=offset, partition_max_bytes=1 << 20),))
            for topic_id, offset in offsets.items())))


def test_rotten_bytes_in_a_segment_fail_only_their_partition(tmp_path: Path) -> None:
    """16 bytes flipped in a cleanly stopped leader's segment, in a batch before its last
    index entry (a restart after a clean shutdown reads from there on only, Kafka's too):
    a Fetch naming that partition and a healthy one answers CORRUPT_MESSAGE for the first
    and the healthy one's records, instead of failing the whole request."""
    with running_cluster(tmp_path, PROPERTIES) as cluster:
        (broker,) = cluster.brokers
        ids = {}
        for topic in ("rot", "sound"):
            create_topic(cluster.bootstrap_servers, topic, 1,
                         configs={"index.interval.bytes": "1"})  # every batch indexed
            ids[topic] = _topic_id(cluster, broker, topic)
            for value in (b"a", b"b", b"c"):
                assert produce_one(cluster, broker, ids[topic], b"k", value, acks=-1) == 0
        assert cluster.stop(broker) == 0
        segment = next((cluster.nodes[broker].data / "rot-0").glob("*.log"))
        data = bytearray(segment.read_bytes())
        second = next(iter_batches(bytes(data))).header.size
        data[second:second + 16] = bytes(b ^ 0xFF for b in data[second:second + 16])
        segment.write_bytes(bytes(data))
        cluster.start(broker)
        wait_for_brokers(cluster, 1)

        answer = _fetch(cluster, broker, {ids["rot"]: 1, ids["sound"]: 0})
        assert answer.error_code == ErrorCode.NONE
        parts = {t.topic_id: t.partitions[0] for t in answer.responses}
        assert parts[ids["rot"]].error_code == ErrorCode.CORRUPT_MESSAGE
        sound = parts[ids["sound"]]
        assert sound.error_code == ErrorCode.NONE
        assert [b.header.base_offset for b in iter_batches(bytes(sound.records))] == [0, 1, 2]


#: A 2 MiB file system for one broker's log directory: 16 KiB records fill it in seconds.
TMPFS_SIZE = "2m"
RECORD = b"x" * 16_384
MAX_PRODUCES = 1_000  # far more than 2 MiB holds: the loop ends on the first refusal


@contextlib.contextmanager
def _small_disk(directory: Path) -> Iterator[None]:
    """Move ``directory``'s files onto a fresh tmpfs mounted over it (needs root)."""
    saved = directory.with_name(directory.name + ".saved")
    shutil.move(directory, saved)
    directory.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs",
                    str(directory)], check=True)
    try:
        shutil.copytree(saved, directory, dirs_exist_ok=True)
        yield
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


def _produce(cluster: LocalCluster, broker: int, topic_id: uuid.UUID) -> int:
    """One acks=all record; its error code, or -1 when the broker did not answer."""
    try:
        code: int = produce_one(cluster, broker, topic_id, b"k", RECORD, acks=-1)
    except (PyKraftError, OSError, TimeoutError):
        return -1
    return code


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_leader_whose_disk_fills_up_halts_and_another_replica_leads(tmp_path: Path) -> None:
    """A leader's log directory on a full file system: the failed append is answered
    KAFKA_STORAGE_ERROR (or not at all), the broker logs the failed directory at ERROR and
    halts (exit 1), the controller fences it and another in-sync replica leads, serving
    acks=all writes again; every acknowledged record is on the new leader, and the victim,
    given room again, restarts on its directory and rejoins the ISR."""
    from kafka.admin import KafkaAdminClient, NewTopic

    cluster = LocalCluster.create(tmp_path / "cluster", 1, PROPERTIES, brokers=3)
    victim, *others = cluster.brokers
    with _small_disk(cluster.nodes[victim].data):
        cluster.start_all()
        try:
            wait_for_brokers(cluster, 3)
            admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
            try:  # the victim first: the preferred and first leader
                admin.create_topics([NewTopic("full", replica_assignments={
                    0: [victim, *others]})])
            finally:
                admin.close()
            topic_id = _topic_id(cluster, victim, "full")
            wait_for("the ISR of 3", lambda: True if (state := partition_state(
                cluster, victim, "full")) is not None and len(state.isr) == 3 else None)
            acked = 0
            while (code := _produce(cluster, victim, topic_id)) == ErrorCode.NONE:
                acked += 1
                assert acked < MAX_PRODUCES, "the 2 MiB disk never filled up"
            first_failure = time.monotonic()
            assert code in (ErrorCode.KAFKA_STORAGE_ERROR, -1)
            assert cluster.wait(victim, 30) == 1
            new_leader = wait_for("a new leader serving acks=all", lambda: next(
                (b for b in others if _produce(cluster, b, topic_id) == ErrorCode.NONE), None))
            failover_s = time.monotonic() - first_failure
            log = cluster.nodes[victim].log.read_text()
            assert "level=error" in log and "event=log_dir_failed" in log
            assert "event=halting" in log and "shutdown_complete" not in log
            print(f"disk-full failover: {failover_s:.2f} s after {acked} acknowledged writes")
            (part,) = _fetch(cluster, new_leader, {topic_id: 0}).responses[0].partitions
            assert part.high_watermark >= acked + 1  # one record a batch, and the new one
            # room again: the victim recovers its directory as after a crash, catches up
            data = cluster.nodes[victim].data
            subprocess.run(["mount", "-o", "remount,size=16m", str(data)], check=True)
            cluster.start(victim)
            wait_for(f"{victim} back in the ISR", lambda: True if (state := partition_state(
                cluster, new_leader, "full")) is not None and victim in state.isr else None)
        finally:
            for node_id in cluster.nodes:
                cluster.kill(node_id)
