"""Client quotas hold on a real 1-controller + 1-broker cluster: a producer's
``producer_byte_rate`` and a consumer's ``consumer_byte_rate``, set with ``pykraft configs``
for their client ids, bound what each moves as fast as it can to within 20% of the quota
(the quota windows are 2 of 1 s, so Kafka's initial burst is a second's worth; see
:mod:`quota_rates`). Other client ids stay unthrottled."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from broker_harness import PROPERTIES, create_topic, one_broker_cluster
from quota_rates import WINDOWS, consume_rate, produce_rate, set_client_quota

from pykraft.tools.local_cluster import LocalCluster

QUOTA = 200_000  # bytes a second
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
