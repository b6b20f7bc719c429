"""Kafka 4.4's group coordinator, transaction coordinator and client quota metrics of a
broker, computed when scraped (on the event loop), under the names of
:mod:`pykraft.runtime.jmx_names` and, for the quota sensors, of the JMX exporter's Kafka
rule (``kafka.server<type=(.+), user=(.+), client-id=(.+)><>([a-z-]+)`` ->
``kafka_server_quota_$4`` with labels ``resource``, ``user``, ``clientId``).

- ``kafka.server:type=group-coordinator-metrics`` (Kafka metrics, each attribute a
  name): ``offset-count``, ``group-count`` by ``protocol``, ``classic-group-count`` and
  ``consumer-group-count`` by ``state``, ``partition-load-time-max`` and ``-avg`` (ms, over
  the last 30 s; NaN with no load in them), and the sensors' ``-count`` attributes
  (``offset-commit-count``, ``offset-expiration-count``, ``offset-deletion-count``,
  ``group-completed-rebalance-count``, ``consumer-group-rebalance-count``); their
  ``-rate`` attributes are PromQL's ``rate()`` of these.
- ``kafka.coordinator.group:type=GroupMetadataManager``: NumGroups, NumOffsets and
  NumGroups<State> (classic groups, as Kafka 4.4 counts them).
- ``kafka.server:type=transaction-coordinator-metrics``: ``partition-load-time-max`` and
  ``-avg``, as the group coordinator's.
- ``kafka.coordinator.transaction:type=TransactionMarkerChannelManager``:
  UnknownDestinationQueueSize.
- ``kafka.server:type=Produce|Fetch,user=,client-id=``: ``byte-rate`` and
  ``throttle-time`` per quota tags, while a quota of the kind is set (Kafka records nothing
  before).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from pykraft.broker.client_quotas import BrokerQuotas, ThrottleTimes
from pykraft.broker.group_coordinator import GroupCoordinatorService
from pykraft.broker.txn_coordinator import TxnCoordinatorService
from pykraft.group.classic import GROUP_TYPE as CLASSIC
from pykraft.group.consumer_group import CONSUMER_GROUP_TYPE as CONSUMER
from pykraft.quota.manager import ClientQuotaManager
from pykraft.runtime.jmx_names import prometheus_name
from pykraft.runtime.metrics import WindowedStat

GROUP_METRICS = "group-coordinator-metrics"
#: The states Kafka 4.4 registers a gauge for, by group type (its ``toString``).
STATES = {CLASSIC: ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"),
          CONSUMER: ("Empty", "Assigning", "Reconciling", "Stable", "Dead")}
_COUNTERS = (("offset-commit-count", "offset_commits", "Offsets committed"),
             ("offset-expiration-count", "offset_expirations", "Offsets expired"),
             ("offset-deletion-count", "offset_deletions", "Offsets deleted by OffsetDelete"),
             ("group-completed-rebalance-count", "completed_rebalances",
              "Classic group rebalances completed"),
             ("consumer-group-rebalance-count", "consumer_rebalances",
              "Consumer group epoch bumps"))


def _gauge(domain: str, mbean_type: str, name: str, doc: str,
           value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(prometheus_name(domain, mbean_type, name), doc, value=value)


def group_families(groups: GroupCoordinatorService) -> Iterator[Metric]:
    """The group coordinator's (see the module docstring)."""
    census = groups.census()
    yield _gauge("kafka.server", GROUP_METRICS, "offset-count", "Committed offsets held",
                 census.offsets)
    by_protocol = GaugeMetricFamily(prometheus_name("kafka.server", GROUP_METRICS,
                                                    "group-count"),
                                    "Groups by rebalance protocol", labels=["protocol"])
    for group_type, states in STATES.items():
        by_protocol.add_metric([group_type], sum(
            count for (kind, _), count in census.groups.items() if kind == group_type))
        by_state = GaugeMetricFamily(
            prometheus_name("kafka.server", GROUP_METRICS, f"{group_type}-group-count"),
            f"{group_type.capitalize()} groups by state", labels=["state"])
        for state in states:
            by_state.add_metric([state], census.groups[(group_type, state)])
        yield by_state
    yield by_protocol
    for name, attribute, doc in _COUNTERS:
        yield _gauge("kafka.server", GROUP_METRICS, name, doc,
                     getattr(groups.counters, attribute))
    yield from _load_times(GROUP_METRICS, "__consumer_offsets", groups.load_times_ms)
    manager = ("kafka.coordinator.group", "GroupMetadataManager")
    yield _gauge(*manager, "NumOffsets", "Committed offsets held", census.offsets)
    yield _gauge(*manager, "NumGroups", "Classic groups", sum(
        census.groups[(CLASSIC, state)] for state in STATES[CLASSIC]))
    for state in STATES[CLASSIC]:
        yield _gauge(*manager, f"NumGroups{state}", f"Classic groups {state}",
                     census.groups[(CLASSIC, state)])


def _load_times(mbean_type: str, topic: str, loads: WindowedStat) -> Iterator[Metric]:
    """A coordinator's partition-load-time-max and -avg (ms, over the last 30 s)."""
    yield _gauge("kafka.server", mbean_type, "partition-load-time-max",
                 f"Longest {topic} partition load (ms)", loads.max())
    yield _gauge("kafka.server", mbean_type, "partition-load-time-avg",
                 f"Average {topic} partition load (ms)", loads.avg())


def txn_families(transactions: TxnCoordinatorService) -> Iterator[Metric]:
    """The transaction coordinator's (see the module docstring)."""
    yield from _load_times("transaction-coordinator-metrics", "__transaction_state",
                           transactions.load_times_ms)
    yield _gauge("kafka.coordinator.transaction", "TransactionMarkerChannelManager",
                 "UnknownDestinationQueueSize",
                 "Transaction markers waiting for their partition's leader",
                 transactions.markers.unknown_destination_queue_size)


def quota_families(quotas: BrokerQuotas) -> Iterator[Metric]:
    """The client quota sensors' (see the module docstring)."""
    now = quotas.now_ms()
    byte_rate = GaugeMetricFamily("kafka_server_quota_byte_rate",
                                  "Bytes a second per quota user/client-id",
                                  labels=["resource", "user", "clientId"])
    throttle_time = GaugeMetricFamily("kafka_server_quota_throttle_time",
                                      "Average throttle time per quota user/client-id (ms)",
                                      labels=["resource", "user", "clientId"])
    sources: tuple[tuple[str, ClientQuotaManager, ThrottleTimes], ...] = (
        ("Produce", quotas.produce, quotas.produce_throttles),
        ("Fetch", quotas.fetch, quotas.fetch_throttles))
    for resource, manager, throttles in sources:
        averages = throttles.averages(now)
        for (user, client_id), rate in sorted(manager.meters().items()):
            byte_rate.add_metric([resource, user, client_id], rate.measure(now))
            throttle_time.add_metric([resource, user, client_id],
                                     averages.get((user, client_id), math.nan))
    yield byte_rate
    yield throttle_time


def coordinator_families(groups: GroupCoordinatorService | None,
                         transactions: TxnCoordinatorService | None,
                         quotas: BrokerQuotas | None) -> Iterator[Metric]:
    """Every family above, of the parts a bound broker has."""
    if groups is not None:
        yield from group_families(groups)
    if transactions is not None:
        yield from txn_families(transactions)
    if quotas is not None:
        yield from quota_families(quotas)
