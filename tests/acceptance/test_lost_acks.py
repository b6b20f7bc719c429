"""Idempotence with lost acknowledgements: the broker advertises a TCP proxy on 127.0.0.1
that cuts the client's connection when the broker's answer to a Produce request comes back
(the batch is in the log, the producer never hears so). Each idempotent producer
(confluent-kafka, kafka-python, aiokafka and the Java client; kcat has no retry of its own
beyond librdkafka's, which confluent-kafka covers) retries with the same sequence numbers,
every delivery succeeds, and the partition holds every message exactly once, at dense
offsets."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest
from broker_harness import PROPERTIES, Message, confluent_produce, create_topic, wait_for_brokers
from java_clients import encode, run_probe

from pykraft.tools.local_cluster import HOST, LocalCluster, free_ports
from pykraft.tools.quorum_tool import parse_host_port

COUNT = 3000
PARTITIONS = 2
DROPS = 3
DEADLINE_S = 60.0
PRODUCE = 0  # api key



def _read_frame(sock: socket.socket) -> bytes | None:
    """One size-prefixed Kafka frame (size included), None at end of stream."""
    size = _read_exactly(sock, 4)
    if size is None:
        return None
    body = _read_exactly(sock, struct.unpack(">i", size)[0])
    return None if body is None else size + body


def _read_exactly(sock: socket.socket, count: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < count:
        try:
            chunk = sock.recv(count - len(chunks))
        except OSError:
            return None
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


class AckDroppingProxy:
    """Forwards connections to the broker frame by frame; for the first ``drops`` Produce
    requests (one a connection) it forwards the request, waits for the broker's response
    and, instead of passing it on, closes both connections (so the answers to requests
    pipelined behind it are lost too)."""

    def __init__(self, port: int, upstream: str, drops: int) -> None:
        self._upstream = parse_host_port(upstream)
        self._left = drops
        self._lock = threading.Lock()
        self.dropped = 0
        self._listener = socket.create_server((HOST, port))
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        for sock in self._sockets:
            _close(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.create_connection(self._upstream, timeout=DEADLINE_S)
            server.settimeout(None)
            self._sockets += (client, server)
            doomed: set[int] = set()
            threading.Thread(target=self._requests, args=(client, server, doomed),
                             daemon=True).start()
            threading.Thread(target=self._responses, args=(server, client, doomed),
                             daemon=True).start()

    def _requests(self, client: socket.socket, server: socket.socket, doomed: set[int]) -> None:
        while (frame := _read_frame(client)) is not None:
            api_key, _, correlation = struct.unpack_from(">hhi", frame, 4)
            with self._lock:
                if api_key == PRODUCE and self._left > 0 and not doomed:  # one a connection
                    self._left -= 1
                    doomed.add(correlation)
            try:
                server.sendall(frame)
            except OSError:
                break
        _close(server)

    def _responses(self, server: socket.socket, client: socket.socket, doomed: set[int]) -> None:
        while (frame := _read_frame(server)) is not None:
            if struct.unpack_from(">i", frame, 4)[0] in doomed:
                with self._lock:
                    self.dropped += 1
                break  # the acknowledgement is lost with the connection
            try:
                client.sendall(frame)
            except OSError:
                break
        _close(client)
        _close(server)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, str]]:
    """A 1-controller + 1-broker cluster whose broker advertises the proxy's address."""
    made = LocalCluster.create(tmp_path_factory.mktemp("lost-acks") / "cluster", 1,
                               PROPERTIES, brokers=1)
    (port,) = free_ports(1)
    broker = made.nodes[made.brokers[0]]
    with broker.config.open("a") as config:
        config.write(f"advertised.listeners=PLAINTEXT://{HOST}:{port}\n")
    made.start_all()
    try:
        wait_for_brokers(made, 1)
        yield made, f"{HOST}:{port}"
    finally:
        for node_id in made.nodes:
            made.kill(node_id)


def messages(tag: str) -> list[Message]:
    return [(f"{tag}-key-{i}".encode(), f"{tag}-value-{i}".encode() * 3,
             (("seq", str(i).encode()),)) for i in range(COUNT)]


def read_back(bootstrap: str, topic: str) -> dict[tuple[int, int], Message]:
    """Every record of the topic by (partition, offset), with kafka-python's consumer."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    read: dict[tuple[int, int], Message] = {}
    try:
        consumer.assign(parts)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(parts)
        deadline = time.monotonic() + DEADLINE_S
        while len(read) < sum(ends.values()) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                for r in records:
                    read[(r.partition, r.offset)] = (
                        r.key, r.value, tuple((k, bytes(v)) for k, v in r.headers))
    finally:
        consumer.close()
    return read


def check_exactly_once(sent: list[Message], read: dict[tuple[int, int], Message]) -> None:
    assert sorted(read.values()) == sorted(sent)  # no message lost, none twice
    for partition in range(PARTITIONS):
        offsets = sorted(o for p, o in read if p == partition)
        assert offsets == list(range(len(offsets)))


@contextlib.contextmanager
def dropping_acks(proxied: tuple[LocalCluster, str], topic: str) -> Iterator[str]:
    """A fresh topic behind a proxy that drops the first DROPS acknowledgements; yields the
    address clients bootstrap from, and checks every drop happened."""
    cluster, address = proxied
    proxy = AckDroppingProxy(int(address.rsplit(":", 1)[1]), cluster.bootstrap_servers, DROPS)
    try:
        create_topic(address, topic, PARTITIONS)
        yield address
        assert proxy.dropped == DROPS
    finally:
        proxy.close()


def test_confluent_kafka_retries_lost_acks_exactly_once(
        proxied: tuple[LocalCluster, str]) -> None:
    topic = "lost-acks-confluent"
    sent = messages("ck")
    with dropping_acks(proxied, topic) as address:
        confluent_produce({"bootstrap.servers": address, "enable.idempotence": True,
                           "linger.ms": 5, "batch.num.messages": 100}, topic, sent, DEADLINE_S)
        check_exactly_once(sent, read_back(address, topic))


def test_kafka_python_retries_lost_acks_exactly_once(proxied: tuple[LocalCluster, str]) -> None:
    from kafka import KafkaProducer

    topic = "lost-acks-kafka-python"
    sent = messages("kp")
    with dropping_acks(proxied, topic) as address:
        producer = KafkaProducer(bootstrap_servers=address, linger_ms=5, batch_size=4096)
        try:
            assert producer._transaction_manager is not None  # idempotent by default
            futures = [producer.send(topic, key=k, value=v, headers=list(h))
                       for k, v, h in sent]
            producer.flush(DEADLINE_S)
            assert all(f.get(timeout=5).offset >= 0 for f in futures)
        finally:
            producer.close(timeout=5)
        check_exactly_once(sent, read_back(address, topic))


def test_aiokafka_retries_lost_acks_exactly_once(proxied: tuple[LocalCluster, str]) -> None:
    from aiokafka import AIOKafkaProducer

    topic = "lost-acks-aiokafka"
    sent = messages("aio")

    async def produce(address: str) -> list[int]:
        producer = AIOKafkaProducer(bootstrap_servers=address, enable_idempotence=True,
                                    linger_ms=5, request_timeout_ms=10_000)
        await producer.start()
        try:
            futures = [await producer.send(topic, key=k, value=v, headers=list(h))
                       for k, v, h in sent]
            return [m.offset for m in await asyncio.gather(*futures)]
        finally:
            await producer.stop()

    with dropping_acks(proxied, topic) as address:
        offsets = asyncio.run(asyncio.wait_for(produce(address), DEADLINE_S))
        assert len(offsets) == COUNT and min(offsets) >= 0
        check_exactly_once(sent, read_back(address, topic))


def test_java_client_retries_lost_acks_exactly_once(proxied: tuple[LocalCluster, str],
                                                    client_probe: list[str]) -> None:
    topic = "lost-acks-java"
    sent = messages("java")
    with dropping_acks(proxied, topic) as address:
        answers = run_probe(client_probe, "produce", address, topic, "none",
                            stdin="".join(encode(m) + "\n" for m in sent))
        placed = {(int(p), int(o)) for p, o, _ in answers}
        assert len(placed) == COUNT  # every send acknowledged, each at its own offset
        read = read_back(address, topic)
        assert set(read) == placed  # acknowledged where the log holds it
        check_exactly_once(sent, read)
