"""``connection_creation_rate`` for one address (KIP-612), on pykraft's cluster and on Apache
Kafka 4.4's side by side (1 controller + 1 broker each, quota windows 2 of 1 s): with 5
connections a second allowed for 127.0.0.2, a burst of connections from it gets its first 5
served and the rest accepted but never answered, then closed (Kafka's acceptor holds a
throttled socket unread until its throttle time ends); connections from 127.0.0.1, which has
no quota, are all served. The Kafka run skips off CI when Kafka cannot be fetched."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import PROPERTIES, wait_for
from oracle_cluster import KAFKA, PYKRAFT, ClusterSpec, OracleCluster, call
from oracle_kafka import cluster_of

from pykraft.messages.kafka import alter_client_quotas_request as alter
from pykraft.messages.kafka import describe_client_quotas_request as describe
from pykraft.messages.kafka.api_versions_request import ApiVersionsRequest
from pykraft.messages.rpc import RequestHeader, encode_request
from pykraft.protocol.apis import ApiKey

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

LIMITED, FREE = "127.0.0.2", "127.0.0.1"
RATE = 5
BURST = 8
#: How long an unanswered connection is waited on: beyond a throttle (at most one window)
#: and Kafka's acceptor's 500 ms between looks at its throttled sockets.
ANSWER_S = 10.0
WINDOWS = {"quota.window.num": "2", "quota.window.size.seconds": "1"}


@pytest.fixture(params=[PYKRAFT, KAFKA])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OracleCluster]:
    kind = request.param
    spec = ClusterSpec(controllers=(kind,), brokers=(kind,),
                       properties={**PROPERTIES, **WINDOWS})
    with cluster_of(kind, tmp_path, spec) as made:
        yield made


def _set_rate(cluster: OracleCluster) -> None:
    """AlterClientQuotas for ip=127.0.0.2, then until the broker describes it (it applies
    its image's quotas as it takes them)."""
    broker = cluster.brokers[0].address
    entity = (alter.EntityData(entity_type="ip", entity_name=LIMITED),)
    answer = call(broker, ApiKey.ALTER_CLIENT_QUOTAS, 1, alter.AlterClientQuotasRequest(
        entries=(alter.EntryData(entity=entity, ops=(alter.OpData(
            key="connection_creation_rate", value=float(RATE), remove=False),)),),
        validate_only=False))
    assert [entry.error_code for entry in answer.entries] == [0]
    query = describe.DescribeClientQuotasRequest(components=(describe.ComponentData(
        entity_type="ip", match_type=0, match=LIMITED),), strict=True)
    wait_for("the broker to describe the ip quota",
             lambda: call(broker, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, query).entries or None)


def _burst(address: str, source: str) -> list[tuple[bool, float]]:
    """:data:`BURST` connections from ``source`` opened one after another, then an
    ApiVersions request on each: (answered, seconds until answered or closed) of each."""
    host, _, port = address.rpartition(":")
    socks = [socket.create_connection((host, int(port)), timeout=ANSWER_S,
                                      source_address=(source, 0)) for _ in range(BURST)]
    frame = encode_request(RequestHeader(ApiKey.API_VERSIONS, 3, 1, "rate"),
                           ApiVersionsRequest(client_software_name="t",
                                              client_software_version="1"))
    outcomes = []
    try:
        for sock in socks:
            sent = time.monotonic()
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            outcomes.append((_answered(sock), time.monotonic() - sent))
    finally:
        for sock in socks:
            sock.close()
    return outcomes


def _answered(sock: socket.socket) -> bool:
    """Whether the connection answers (False: closed without an answer)."""
    try:
        return bool(sock.recv(4))
    except ConnectionResetError:
        return False


def test_an_address_beyond_its_creation_rate_is_held_then_closed(
        cluster: OracleCluster) -> None:
    _set_rate(cluster)
    address = cluster.brokers[0].address
    limited = _burst(address, LIMITED)
    free = _burst(address, FREE)
    print(f"{cluster.spec.brokers[0]}: {LIMITED} {limited}; {FREE} {free}")
    assert [answered for answered, _ in limited] == [True] * RATE + [False] * (BURST - RATE)
    assert all(seconds < ANSWER_S for _, seconds in limited)  # closed, not left open
    assert [answered for answered, _ in free] == [True] * BURST
