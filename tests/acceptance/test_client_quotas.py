"""Client quotas hold on a real 1-controller + 1-broker cluster: a producer's
``producer_byte_rate`` and a consumer's ``consumer_byte_rate``, set with ``pykraft configs``
for their client ids, bound what each moves as fast as it can to within 20% of the quota
(the quota windows are 2 of 1 s, so Kafka's initial burst is a second's worth; see
:mod:`quota_rates`). Other client ids stay unthrottled. A client sending requests one after
another beyond its ``request_percentage`` gets ``throttle_time_ms`` and its connection is
not read for that long, while another client id is never throttled."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator

import pytest
from broker_harness import PROPERTIES, create_topic, one_broker_cluster
from quota_rates import WINDOWS, consume_rate, produce_rate, set_client_quota

from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.protocol.api_versions import listener_ranges, offsets_by_name
from pykraft.protocol.apis import Listener
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import parse_host_port

QUOTA = 200_000  # bytes a second
#: Metadata requests an unthrottled client sends, one after another.
REQUESTS = 60
#: A throttled client's requests go on until this many were throttled, at most
#: MOST_REQUESTS of them.
THROTTLED = 10
MOST_REQUESTS = 2000
#: About eight seconds at the quota: long enough for the rate to settle.
TOTAL = 8 * QUOTA


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with one_broker_cluster(tmp_path_factory.mktemp("quotas") / "cluster",
                            {**PROPERTIES, **WINDOWS}) as made:
        yield made


def test_a_producer_is_held_to_its_byte_rate(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "produce-quota", 1)
    set_client_quota(bootstrap, "throttled-producer", "producer_byte_rate", QUOTA)
    ratio = produce_rate(bootstrap, "produce-quota", "throttled-producer", TOTAL) / QUOTA
    print(f"producer at {ratio:.3f} of its quota")
    assert 0.8 <= ratio <= 1.2, ratio


def test_a_consumer_is_held_to_its_byte_rate(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "consume-quota", 1)
    unthrottled = produce_rate(bootstrap, "consume-quota", "free-producer", TOTAL)
    assert unthrottled > 2 * QUOTA  # the quota is what holds the consumer back
    set_client_quota(bootstrap, "throttled-consumer", "consumer_byte_rate", QUOTA)
    ratio = consume_rate(bootstrap, "consume-quota", "throttled-consumer", TOTAL) / QUOTA
    print(f"consumer at {ratio:.3f} of its quota")
    assert 0.8 <= ratio <= 1.2, ratio


def _metadata_answers(bootstrap: str, client_id: str,
                      throttled: int | None = None) -> list[tuple[float, int]]:
    """(when it came, its ``throttle_time_ms``) of each answer to Metadata requests sent one
    after another on one connection as fast as they are answered (the client does not wait
    out a throttle itself: only the broker's muting holds it): :data:`REQUESTS` of them,
    or until ``throttled`` answers were throttled (at most :data:`MOST_REQUESTS`)."""
    async def run() -> list[tuple[float, int]]:
        host, port = parse_host_port(bootstrap)
        conn = await ClientConnection.open(host, port, client_id=client_id,
                                           ours=offsets_by_name(listener_ranges(Listener.BROKER)))
        answers: list[tuple[float, int]] = []
        try:
            while len(answers) < (REQUESTS if throttled is None else MOST_REQUESTS):
                answer = await asyncio.wait_for(conn.request(MetadataRequest(topics=None)), 30)
                answers.append((time.monotonic(), answer.throttle_time_ms))
                if throttled is not None and sum(t > 0 for _, t in answers) >= throttled:
                    break
        finally:
            conn.close()
        return answers
    return asyncio.run(run())


def test_a_client_beyond_its_request_percentage_is_throttled(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "request-quota", 4)
    set_client_quota(bootstrap, "busy-client", "request_percentage", 1)  # 10 ms a second
    started = time.monotonic()
    free = _metadata_answers(bootstrap, "free-client")
    free_rate = len(free) / (free[-1][0] - started)
    assert [throttle for _, throttle in free] == [0] * REQUESTS
    busy = _metadata_answers(bootstrap, "busy-client", throttled=THROTTLED)
    throttles = [throttle for _, throttle in busy]
    first = next(index for index, throttle in enumerate(throttles) if throttle > 0)
    # its rate once its burst is spent, the quota holding
    busy_rate = (len(busy) - 1 - first) / (busy[-1][0] - busy[first][0])
    print(f"free client {free_rate:.0f} requests/s; busy client {busy_rate:.1f} requests/s, "
          f"{len(busy)} requests, {first} before the first throttle, {sum(throttles)} ms "
          "throttled in all")
    assert sum(t > 0 for t in throttles) == THROTTLED
    assert throttles[0] == 0  # the first requests are within the quota's burst
    assert all(0 <= t <= 1000 for t in throttles)  # capped at one quota window
    for (answered, throttle), (next_answered, _) in itertools.pairwise(busy):
        # the connection was not read until the throttle time had passed since it was
        # decided, just before the answer was written (slack for a loaded machine)
        assert next_answered - answered >= throttle / 1000 - 0.05
    assert busy[-1][0] - busy[0][0] >= 0.9 * sum(throttles[:-1]) / 1000
    assert busy_rate < free_rate / 5
