"""Hostile input against live SASL listeners, with counts: a broker with SASL_SSL and
SASL_PLAINTEXT listeners and a controller whose listener is SASL_SSL take a few hundred
seeded connections, each sending one kind of bad input (garbage instead of a ClientHello, a
truncated or garbled ClientHello, random frames after a good handshake, unknown mechanisms,
malformed PLAIN and SCRAM messages, requests before authentication, oversized size
prefixes). Every connection must be closed within a bound, answered first with Kafka's
error where Kafka sends one; each refusal is one log line and nothing the processes did
not handle shows in their logs; a client producing through the SASL_SSL listener the whole
time loses nothing. ``PYKRAFT_FUZZ_SEED`` replays a run; the counts print with ``-s``."""

from __future__ import annotations

import base64
import collections
import os
import random
import socket
import ssl
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response
from pykraft.protocol.errors import error_name
from pykraft.protocol.frame import encode_frame
from pykraft.security.jaas import PLAIN_LOGIN_MODULE
from pykraft.security.plain import plain_client_token
from pykraft.security.sasl_listener import MAX_RECEIVE_SIZE
from pykraft.tools.local_cluster import BROKER, CONTROLLER, HOST, NodeFiles, free_ports

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "runtime"))
sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import fenced_brokers
from process_harness import wait_for
from security_harness import formatted_cluster, log_lines, unhandled, write_node
from security_harness import request_frame as request
from tls_fixtures import pem_files, pki

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
BROKER_ID = 1000
PROBES = 300
WORKERS = 16
CLOSE_WITHIN_S = 20.0  # the TLS handshake timeout (10 s) and slack for a busy machine
USERS = 'user_admin="admin-secret" user_alice="alice-secret"'
TOPIC = "steady"
SCRAM = "SCRAM-SHA-512"
REFUSED = "SASL_AUTHENTICATION_FAILED"


@dataclass(frozen=True)
class Target:
    name: str
    port: int
    tls: bool
    log: Path


#: One step: bytes to send, or a function of the last SaslAuthenticate answer's bytes;
#: and the (api key, version) of the answer to read, None when none is due.
Payload = bytes | Callable[[bytes], bytes]


@dataclass(frozen=True)
class Probe:
    kind: str
    target: Target
    steps: tuple[tuple[Payload, tuple[int, int] | None], ...]
    allowed: frozenset[str]
    #: "tls" (a handshake first), "raw" (bytes straight onto a TLS port), "plain"
    transport: str = "plain"
    half_close: bool = False


@dataclass
class Fuzzed:
    broker: list[Target]
    controller: Target
    cluster: Any
    ca: Path
    sasl_ssl: str
    counts: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    base = tmp_path_factory.mktemp("fuzz")
    keys = pki()
    controller_port, plain_port, ssl_port, sasl_port = free_ports(4)
    tls = pem_files(base, keys.server, keys.ca, "node")
    common = {"controller.listener.names": "CONTROLLER",
              "controller.quorum.voters": f"1@{HOST}:{controller_port}",
              "pykraft.shutdown.timeout.ms": "3000", "offsets.topic.replication.factor": "1",
              "sasl.enabled.mechanisms": f"PLAIN,{SCRAM}", "sasl.mechanism.controller.protocol":
                  "PLAIN",
              "sasl.jaas.config": f'{PLAIN_LOGIN_MODULE} required username="admin" '
                                  f'password="admin-secret" {USERS};', **tls}
    controller = NodeFiles(1, controller_port, base / "node-1", CONTROLLER)
    broker = NodeFiles(BROKER_ID, plain_port, base / f"node-{BROKER_ID}", BROKER)
    write_node(controller, {**common, "process.roles": "controller", "node.id": "1",
                            "listeners": f"CONTROLLER://{controller.address}",
                            "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
                            "log.dirs": str(controller.data)})
    write_node(broker, {**common, "process.roles": "broker", "node.id": str(BROKER_ID),
                        "listeners": f"PLAINTEXT://{broker.address},SECURE://{HOST}:{ssl_port},"
                                     f"SASL://{HOST}:{sasl_port}",
                        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL,"
                                                          "SASL:SASL_PLAINTEXT,CONTROLLER:SASL_SSL",
                        "inter.broker.listener.name": "PLAINTEXT", "log.dirs": str(broker.data)})
    cluster = formatted_cluster(base, [controller, broker],
                                scram=(f"{SCRAM}=[name=alice,password=alice-secret]",))
    cluster.start_all()
    try:
        wait_for("the broker registered over SASL_SSL", lambda: True if fenced_brokers(
            cluster, BROKER_ID) == {BROKER_ID: False} else None)
        yield Fuzzed([Target("broker SASL_SSL", ssl_port, True, broker.log),
                      Target("broker SASL_PLAINTEXT", sasl_port, False, broker.log)],
                     Target("controller SASL_SSL", controller_port, True, controller.log),
                     cluster, base / "node-truststore.pem", f"{HOST}:{ssl_port}")
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


# -- building the bad input ------------------------------------------------------------------

def handshake(mechanism: str, version: int = 1) -> tuple[bytes, tuple[int, int]]:
    return (request(ApiKey.SASL_HANDSHAKE, version, mechanism=mechanism),
            (ApiKey.SASL_HANDSHAKE, version))


def authenticate(token: Payload, version: int = 2) -> tuple[Payload, tuple[int, int]]:
    def frame(previous: bytes) -> bytes:
        auth_bytes = token(previous) if callable(token) else token
        framed: bytes = request(ApiKey.SASL_AUTHENTICATE, version, auth_bytes=auth_bytes)
        return framed
    return frame, (ApiKey.SASL_AUTHENTICATE, version)


def random_frame(rng: random.Random) -> bytes:
    """A size-prefixed frame of random bytes whose api key is not one a SASL listener
    answers before authentication (so nothing can pass for a valid start)."""
    api_key = rng.choice([k for k in range(-5, 1100) if k not in (17, 18, 36)])
    body = struct.pack(">h", api_key) + rng.randbytes(rng.randrange(0, 400))
    return struct.pack(">i", len(body)) + body


def client_hello() -> bytes:
    """A real TLS ClientHello, as the first flight of a client handshake."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = ssl.create_default_context().wrap_bio(incoming, outgoing,
                                                   server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        client.do_handshake()
    return outgoing.read()


def plain_malformed(rng: random.Random) -> bytes:
    return rng.choice([
        b"", b"alice", b"\x00alice", b"\x00\x00", b"\x00\x00\x00",
        b"\x00alice\x00alice-secret\x00extra", b"\x00alice\x00wrong",
        b"\x00\xff\xfe\x00\xff\xfe", b"\x00" + b"a" * 70_000 + b"\x00x",
        b"bob\x00alice\x00alice-secret",
        rng.randbytes(rng.randrange(1, 300)).replace(b"\x00", b"")])


def scram_first_malformed(rng: random.Random) -> bytes:
    return rng.choice([
        b"", b"n,,", b"n,,n=alice", b"n,,r=abc", b"x,,n=alice,r=abc",
        b"p=tls-unique,,n=alice,r=abc", b"n,,n=al=zzice,r=abc", b"n,,n=alice\x00,r=abc",
        b"n,a=bob,n=alice,r=abc", b"n,,n=" + b"a" * 50_000 + b",r=abc",
        b"n,,n=nobody,r=abc", b"\xff\xfe\xfd", rng.randbytes(rng.randrange(1, 200))])


def scram_final_malformed(rng: random.Random) -> Callable[[bytes], bytes]:
    """A client-final message for the server-first in ``previous``: bad base64, a wrong
    nonce, a missing proof, a wrong proof, NULs, or noise."""
    choice = rng.randrange(6)
    proof = base64.b64encode(rng.randbytes(64)).decode()

    def final(previous: bytes) -> bytes:
        parts = dict(p.split("=", 1) for p in previous.decode().split(",") if "=" in p)
        nonce = parts.get("r", "")
        return [f"c=biws,r={nonce},p=!!!not*base64".encode(),
                f"c=biws,r={nonce}tampered,p={proof}".encode(),
                f"c=biws,r={nonce}".encode(),
                f"c=biws,r={nonce},p={proof}".encode(),
                f"c=bi\x00ws,r={nonce}\x00,p={proof}".encode(),
                rng.randbytes(100)][choice]
    return final


def tls_probes(rng: random.Random, target: Target, hello: bytes) -> list[Probe]:
    """The kinds only a TLS port has: bytes that are not a good handshake."""
    closed = frozenset({"closed", "replied+closed"})
    cut = rng.randrange(1, len(hello))
    garbled = bytearray(hello)
    for _ in range(rng.randrange(1, 9)):
        garbled[rng.randrange(len(garbled))] = rng.randrange(256)
    return [
        Probe("tls: random bytes", target, ((rng.randbytes(rng.randrange(1, 3000)), None),),
              closed, "raw"),
        Probe("tls: truncated ClientHello", target, ((hello[:cut], None),), closed, "raw"),
        Probe("tls: garbled ClientHello", target, ((bytes(garbled), None),), closed, "raw"),
        Probe("tls: random frames after the handshake", target, tuple(
            (random_frame(rng), None) for _ in range(rng.randrange(1, 4))),
            frozenset({"closed"}), "tls"),
    ]


def sasl_probes(rng: random.Random, target: Target) -> list[Probe]:
    """The SASL kinds, for any SASL listener."""
    transport = "tls" if target.tls else "plain"
    unknown = rng.choice(["GSSAPI", "OAUTHBEARER", "SCRAM-SHA-1", "plain", "", "PLAIN ",
                          "".join(chr(rng.randrange(1, 0x2FF)) for _ in range(20)),
                          "X" * rng.randrange(100, 5000)])
    oversized = rng.choice([MAX_RECEIVE_SIZE + 1, rng.randrange(MAX_RECEIVE_SIZE + 1, 100 << 20),
                            rng.randrange(100 << 20, 1 << 31), -rng.randrange(1, 1 << 31)])
    nonce = base64.b64encode(rng.randbytes(18)).decode()
    good_first = f"n,,n=alice,r={nonce}".encode()
    failed = frozenset({f"NONE+{REFUSED}+closed"})

    def probe(kind: str, *steps: tuple[Payload, tuple[int, int] | None],
              allowed: frozenset[str] = frozenset({"closed"}), half_close: bool = False
              ) -> Probe:
        return Probe(kind, target, steps, allowed, transport, half_close)
    return [
        probe("sasl: unknown mechanism", handshake(unknown, rng.randrange(2)),
              allowed=frozenset({"UNSUPPORTED_SASL_MECHANISM+closed"})),
        probe("sasl: malformed PLAIN token", handshake("PLAIN"),
              authenticate(plain_malformed(rng), rng.randrange(3)), allowed=failed),
        probe("sasl: malformed SCRAM client-first", handshake(SCRAM),
              authenticate(scram_first_malformed(rng)), allowed=failed),
        probe("sasl: malformed SCRAM client-final", handshake(SCRAM), authenticate(good_first),
              authenticate(scram_final_malformed(rng)),
              allowed=frozenset({f"NONE+NONE+{REFUSED}+closed"})),
        probe("sasl: v0 handshake, then a garbage token", handshake("PLAIN", 0),
              (encode_frame(rng.randbytes(rng.randrange(1, 200))), None),
              allowed=frozenset({"NONE+closed"})),
        probe("sasl: token larger than sasl.server.max.receive.size", handshake("PLAIN"),
              (request(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"\x00alice\x00" + b"p" * (
                  MAX_RECEIVE_SIZE + rng.randrange(1, 5000))), None),
              allowed=frozenset({"NONE+closed"})),
        probe("sasl: SaslAuthenticate before the handshake",
              (request(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=plain_client_token(
                  "alice", "alice-secret")), None)),
        probe("sasl: request before authentication",
              (request(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=True,
                       include_topic_authorized_operations=False), None)),
        probe("sasl: random frame", (random_frame(rng), None)),
        probe("sasl: ApiVersions, then a random frame",
              (request(ApiKey.API_VERSIONS, 3, client_software_name="fuzz",
                       client_software_version="1"), (ApiKey.API_VERSIONS, 3)),
              (random_frame(rng), None), allowed=frozenset({"NONE+closed"})),
        probe("sasl: oversized size prefix",
              (struct.pack(">i", oversized) + rng.randbytes(rng.randrange(0, 1000)), None)),
        probe("sasl: truncated frame, then EOF",
              (struct.pack(">i", 100) + rng.randbytes(rng.randrange(0, 100)), None),
              half_close=True),
    ]


def plan(seed: int, fuzzed: Fuzzed) -> list[Probe]:
    """PROBES probes, each drawn from its own seeded generator."""
    hello = client_hello()
    targets = [*fuzzed.broker, fuzzed.controller]
    probes = []
    for index in range(PROBES):
        rng = random.Random(seed * 100_003 + index)
        target = rng.choice(targets)
        kinds = sasl_probes(rng, target) + (tls_probes(rng, target, hello) if target.tls
                                            else [])
        probes.append(rng.choice(kinds))
    return probes


# -- running a probe ---------------------------------------------------------------------------

def _read_frame(sock: socket.socket, deadline: float) -> bytes | None:
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = _recv(sock, deadline)
        if not chunk:
            return None
        data += chunk
    return data[4:]


def _recv(sock: socket.socket, deadline: float) -> bytes:
    """The next bytes; b"" once the peer closed. Raises TimeoutError past ``deadline``."""
    sock.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        return sock.recv(65536)
    except (ConnectionResetError, BrokenPipeError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
        return b""
    except ssl.SSLError:  # an alert: the server refused and is closing
        return b""
    except TimeoutError:
        raise TimeoutError from None


def run(probe: Probe, ca: Path) -> str:
    """The probe's outcome: the error names of the answers it got, then how it ended
    ("closed", or "HUNG" past the deadline; "replied" when a raw TLS probe got bytes)."""
    deadline = time.monotonic() + CLOSE_WITHIN_S
    raw = socket.create_connection((HOST, probe.target.port), timeout=10)
    sock: socket.socket = raw
    outcome: list[str] = []
    try:
        if probe.transport == "tls":
            context = ssl.create_default_context(cafile=str(ca))
            sock = context.wrap_socket(raw, server_hostname=HOST)
        previous = b""
        for payload, answer in probe.steps:
            data = payload(previous) if callable(payload) else payload
            try:
                sock.sendall(data)
            except OSError:
                break  # closed while we wrote
            if answer is None:
                continue
            frame = _read_frame(sock, deadline)
            if frame is None:
                break
            body = decode_response(answer[0], answer[1], frame).body
            outcome.append(error_name(body.error_code))
            previous = bytes(getattr(body, "auth_bytes", b"") or b"")
        if probe.half_close:  # on TLS this drops our side's TLS: what follows is raw
            sock.shutdown(socket.SHUT_WR)
        replied = False
        while _recv(sock, deadline):
            replied = True
        if replied and not probe.half_close:
            outcome.append("replied" if probe.transport == "raw" else "UNEXPECTED-BYTES")
        outcome.append("closed")
    except TimeoutError:
        outcome.append("HUNG")
    except (OSError, ValueError) as exc:  # counted, never raised: one probe, one outcome
        outcome.append(f"ERROR {type(exc).__name__}")
    finally:
        sock.close()
    return "+".join(outcome)


# -- the test ----------------------------------------------------------------------------------

def _produce_steadily(fuzzed: Fuzzed, stop: threading.Event, sent: list[bytes],
                      failures: list[str]) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": fuzzed.sasl_ssl, "security.protocol": "SASL_SSL",
                         "ssl.ca.location": str(fuzzed.ca), "sasl.mechanism": "PLAIN",
                         "sasl.username": "alice", "sasl.password": "alice-secret",
                         "linger.ms": 5, "error_cb": lambda e: failures.append(str(e))})

    def report(err: Any, message: Any) -> None:
        if err is None:
            sent.append(message.value())
        else:
            failures.append(str(err))
    index = 0
    while not stop.is_set():
        producer.produce(TOPIC, f"v-{index}".encode(), on_delivery=report)
        index += 1
        producer.poll(0.05)
    assert producer.flush(30) == 0


def _consume(fuzzed: Fuzzed, count: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": fuzzed.sasl_ssl, "security.protocol": "SASL_SSL",
                         "ssl.ca.location": str(fuzzed.ca), "sasl.mechanism": SCRAM,
                         "sasl.username": "alice", "sasl.password": "alice-secret",
                         "group.id": "unused", "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value() or b"")
    finally:
        consumer.close()
    return got


def _refusals(path: Path) -> list[str]:
    lines: list[str] = log_lines(path, "event=failed_authentication") + log_lines(
        path, "event=connection_closed")
    return lines


def test_hostile_connections_are_closed_counted_and_harmless(fuzzed: Fuzzed) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    seed = int(os.environ.get("PYKRAFT_FUZZ_SEED") or random.SystemRandom().randrange(1 << 32))
    replay = f"seed {seed} (PYKRAFT_FUZZ_SEED={seed} replays it)"
    print(f"\nfuzz {replay}")
    admin = AdminClient({"bootstrap.servers": fuzzed.cluster.nodes[BROKER_ID].address})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    logs = {fuzzed.controller.log, *(t.log for t in fuzzed.broker)}
    before = {path: len(_refusals(path)) for path in logs}

    stop, sent, failures = threading.Event(), list[bytes](), list[str]()
    producer = threading.Thread(target=_produce_steadily, args=(fuzzed, stop, sent, failures))
    producer.start()
    wait_for("the steady producer's first delivery", lambda: True if sent else None)
    probes = plan(seed, fuzzed)
    try:
        with ThreadPoolExecutor(WORKERS) as pool:
            outcomes = list(pool.map(lambda p: run(p, fuzzed.ca), probes))
    finally:
        stop.set()
        producer.join(60)
    counts = collections.Counter((p.kind, o) for p, o in zip(probes, outcomes, strict=True))
    width = max(len(kind) for kind, _ in counts)
    print("\n".join(f"{kind:<{width}}  {outcome:<45} {n:>4}"
                    for (kind, outcome), n in sorted(counts.items())))
    by_target = collections.Counter(p.target.name for p in probes)
    print(", ".join(f"{name}: {n}" for name, n in sorted(by_target.items())))

    wrong = [(p.kind, p.target.name, o) for p, o in zip(probes, outcomes, strict=True)
             if o not in p.allowed]
    assert not wrong, f"{replay}: unexpected outcomes {collections.Counter(wrong)}"
    logged = 0
    for path in logs:
        assert not unhandled(path), f"{replay}: {unhandled(path)[:3]}"
        new = _refusals(path)[before[path]:]
        connections = [line.split(" channel_id=")[1].split()[0] for line in new]
        duplicated = [c for c, n in collections.Counter(connections).items() if n > 1]
        assert not duplicated, f"{replay}: logged more than once: {duplicated[:3]}"
        print(f"{path.parent.name}: {len(new)} refusals logged")
        logged += len(new)
    # one line for each refused connection; a frame cut short by the client's own EOF is
    # a hang-up, not a refusal (as in Kafka)
    assert logged == sum(1 for p in probes if not p.half_close), replay
    assert failures == [], f"{replay}: the steady producer failed: {failures[:3]}"
    assert len(sent) > 0
    got = _consume(fuzzed, len(sent))
    assert sorted(got) == sorted(sent), f"{replay}: {len(got)} consumed of {len(sent)}"
    assert fenced_brokers(fuzzed.cluster, BROKER_ID) == {BROKER_ID: False}


def test_an_oversized_prefix_is_refused_before_authentication_not_after(fuzzed: Fuzzed
                                                                        ) -> None:
    """Kafka reads at most sasl.server.max.receive.size bytes a frame before authentication:
    a larger size prefix closes the connection at once, whatever follows; once logged in, a
    client's frames may be as large as socket.request.max.bytes."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    target = fuzzed.broker[1]
    before = len(log_lines(target.log, "invalid receive size"))
    probe = Probe("oversized", target, ((struct.pack(">i", MAX_RECEIVE_SIZE + 1) + b"x" * 64,
                                         None),), frozenset({"closed"}))
    assert run(probe, fuzzed.ca) == "closed"
    line = wait_for("the refusal logged", lambda: (
        log_lines(target.log, "invalid receive size")[before:] or None))[0]
    assert "event=failed_authentication" in line and "listener=SASL " in line

    admin = AdminClient({"bootstrap.servers": fuzzed.cluster.nodes[BROKER_ID].address})
    admin.create_topics([NewTopic("large", 1, 1)])["large"].result(30)
    producer = Producer({"bootstrap.servers": f"{HOST}:{target.port}",
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                         "sasl.username": "alice", "sasl.password": "alice-secret",
                         "compression.type": "none"})
    delivered: list[Any] = []
    value = random.Random(0).randbytes(MAX_RECEIVE_SIZE + 4096)  # incompressible anyway
    producer.produce("large", value, on_delivery=lambda err, _: delivered.append(err))
    assert producer.flush(30) == 0 and delivered == [None], delivered
