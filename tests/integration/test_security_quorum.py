"""A quorum over TLS on real processes: three controllers whose controller listener is SSL
with client certificates required, and a broker that registers through it. They elect and
commit over SSL; a node presenting a certificate from another CA, or an expired one from
the right CA, is refused by every controller it calls, each logging the refusal with its
reason, the node logs its own failure, and the quorum keeps serving."""

from __future__ import annotations

import asyncio
import datetime
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pykraft.errors import PyKraftError
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.raft import rpc
from pykraft.runtime.kafka_client import open_with_timeout
from pykraft.runtime.tls import client_context
from pykraft.security.certificates import issue
from pykraft.tools.local_cluster import (
    BROKER,
    CONTROLLER,
    HOST,
    LocalCluster,
    NodeFiles,
    free_ports,
)

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "runtime"))
sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import create_topic, fenced_brokers
from process_harness import wait_for
from security_harness import failed_authentications, formatted_cluster, log_lines, write_node
from tls_fixtures import NOW, pem_files, pki

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
CONTROLLERS = (1, 2, 3)
BROKER_ID, INTRUDER = 1000, 1001
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Quorum:
    cluster: LocalCluster
    base: Path
    common: dict[str, str]

    def controller_logs(self) -> list[Path]:
        return [self.cluster.nodes[n].log for n in CONTROLLERS]


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quorum]:
    base = tmp_path_factory.mktemp("ssl-quorum")
    keys = pki()
    *controller_ports, broker_port, intruder_port = free_ports(len(CONTROLLERS) + 2)
    voters = ",".join(f"{n}@{HOST}:{p}" for n, p in zip(CONTROLLERS, controller_ports,
                                                          strict=True))
    common = {"controller.listener.names": "CONTROLLER", "controller.quorum.voters": voters,
              "listener.name.controller.ssl.client.auth": "required",
              "pykraft.shutdown.timeout.ms": "3000", "offsets.topic.replication.factor": "1",
              "broker.heartbeat.interval.ms": "500", "broker.session.timeout.ms": "3000"}
    nodes = [NodeFiles(n, p, base / f"node-{n}", CONTROLLER)
             for n, p in zip(CONTROLLERS, controller_ports, strict=True)]
    for node in nodes:
        write_node(node, {**common, **pem_files(base, keys.server, keys.ca, f"node-{node.node_id}"),
                          "process.roles": "controller", "node.id": str(node.node_id),
                          "listeners": f"CONTROLLER://{node.address}",
                          "listener.security.protocol.map": "CONTROLLER:SSL",
                          "log.dirs": str(node.data)})
    broker = NodeFiles(BROKER_ID, broker_port, base / f"node-{BROKER_ID}", BROKER)
    intruder = NodeFiles(INTRUDER, intruder_port, base / f"node-{INTRUDER}", BROKER)
    for node in (broker, intruder):
        write_node(node, {**common, **pem_files(base, keys.server, keys.ca,
                                                f"node-{node.node_id}"),
                          "process.roles": "broker", "node.id": str(node.node_id),
                          "listeners": f"PLAINTEXT://{node.address}",
                          "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
                          "log.dirs": str(node.data)})
    cluster = formatted_cluster(base, [*nodes, broker, intruder])
    for node_id in (*CONTROLLERS, BROKER_ID):
        cluster.start(node_id)
    try:
        wait_for("the broker registered over SSL", lambda: True if fenced_brokers(
            cluster, BROKER_ID) == {BROKER_ID: False} else None)
        yield Quorum(cluster, base, common)
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


def _describe(quorum: Quorum, node_id: int) -> Any:
    """DescribeQuorum from one controller over SSL with a certificate it trusts."""
    keys = pki()
    tls = client_context(pem_files(quorum.base, keys.client, keys.ca, "operator"))
    node = quorum.cluster.nodes[node_id]

    async def run() -> Any:
        connection = await open_with_timeout(HOST, node.port, client_id="quorum-test",
                                             ours=listener_ranges(Listener.CONTROLLER),
                                             timeout_s=10, tls=tls)
        try:
            response = await asyncio.wait_for(
                connection.request(rpc.describe_quorum_request()), 10)
            return response
        finally:
            connection.close()
    try:
        return asyncio.run(run())
    except (PyKraftError, OSError, TimeoutError):
        return None


def _committed(quorum: Quorum) -> tuple[int, int] | None:
    """(leader, high watermark) once the leader, which alone answers DescribeQuorum, has
    committed and every voter's fetches reached its high watermark."""
    for node_id in CONTROLLERS:
        response = _describe(quorum, node_id)
        if response is None or response.error_code != 0:
            continue
        partition = response.topics[0].partitions[0]
        if partition.error_code != 0 or partition.high_watermark <= 0:
            continue
        voters = {int(v.replica_id): int(v.log_end_offset) for v in partition.current_voters}
        mark = int(partition.high_watermark)
        if set(voters) == set(CONTROLLERS) and min(voters.values()) >= mark:
            return int(partition.leader_id), mark
    return None


def test_the_quorum_elects_and_commits_over_ssl(quorum: Quorum) -> None:
    leader, first = wait_for("a leader every controller agrees on", lambda: _committed(quorum))
    assert leader in CONTROLLERS
    create_topic(quorum.cluster.bootstrap_servers, "over-ssl", 1)  # a record to commit
    wait_for("the high watermark to move", lambda: True if (
        (now := _committed(quorum)) is not None and now[1] > first) else None)
    # the broker registered and heartbeats through the SSL controller listener
    assert fenced_brokers(quorum.cluster, BROKER_ID) == {BROKER_ID: False}
    for path in quorum.controller_logs():
        assert not failed_authentications(path), path


def _intruder_refused(quorum: Quorum, keystore: dict[str, str], reason: str, alert: str
                      ) -> None:
    """Start broker 1001 with ``keystore``: every controller refuses it, logging ``reason``;
    it logs its own failure (the controllers' TLS ``alert``); it never registers; the quorum
    keeps committing."""
    cluster = quorum.cluster
    intruder = cluster.nodes[INTRUDER]
    config = intruder.config.read_text().splitlines()
    kept = [line for line in config if not line.startswith(("ssl.keystore.", "ssl.key."))]
    intruder.config.write_text("".join(f"{line}\n" for line in kept) + "".join(
        f"{k}={v}\n" for k, v in keystore.items() if k.startswith(("ssl.keystore.", "ssl.key."))))
    before = {path: len(failed_authentications(path)) for path in quorum.controller_logs()}
    own_before = len(log_lines(intruder.log, "SSL handshake failed"))
    cluster.start(INTRUDER)
    try:
        def refused_everywhere() -> dict[Path, list[str]] | None:
            new = {path: failed_authentications(path)[count:] for path, count in before.items()}
            return new if all(new.values()) else None
        refusals = wait_for("every controller logs the refusal", refused_everywhere,
                            timeout_s=TIMEOUT_S)
        for lines in refusals.values():
            assert all("listener=CONTROLLER" in line and "peer=/127.0.0.1" in line
                       for line in lines), lines
            assert reason in lines[0], lines[0]
        own = wait_for("the refused node logs its own failure", lambda: (
            log_lines(intruder.log, "SSL handshake failed")[own_before:] or None),
            timeout_s=TIMEOUT_S)
        assert all(f"reason={alert}" in line for line in own), own
        assert cluster.is_running(INTRUDER)  # it keeps retrying, as Kafka's nodes do
        _, mark = wait_for("the quorum", lambda: _committed(quorum))
        create_topic(cluster.bootstrap_servers, f"after-{INTRUDER}-{mark}", 1)
        wait_for("the quorum commits while the intruder knocks", lambda: True if (
            (now := _committed(quorum)) is not None and now[1] > mark) else None)
        assert fenced_brokers(cluster, BROKER_ID) == {BROKER_ID: False}  # never registered
    finally:
        cluster.stop(INTRUDER)


def test_a_node_with_a_certificate_from_another_ca_is_refused(quorum: Quorum) -> None:
    keys = pki()  # the stranger's certificate, but it trusts the cluster's CA
    _intruder_refused(quorum, pem_files(quorum.base, keys.stranger, keys.ca, "stranger"),
                      "CERTIFICATE_VERIFY_FAILED (self-signed certificate in certificate chain)",
                      "TLSV1_ALERT_UNKNOWN_CA")


def test_a_node_with_an_expired_certificate_is_refused(quorum: Quorum) -> None:
    keys = pki()
    expired = issue(keys.ca, "CN=expired", NOW - datetime.timedelta(days=30),
                    hosts=("127.0.0.1",), validity=datetime.timedelta(days=1))
    _intruder_refused(quorum, pem_files(quorum.base, expired, keys.ca, "expired"),
                      "CERTIFICATE_VERIFY_FAILED (certificate has expired)",
                      "SSLV3_ALERT_CERTIFICATE_EXPIRED")
