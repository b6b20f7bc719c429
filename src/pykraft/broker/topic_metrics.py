"""Kafka's ``BrokerTopicMetrics`` meters, per topic and for all topics, as counts.

Counted where Kafka marks them, with numbers the path has already (no record is looked at):

- a leader's append of a Produce partition (``ReplicaManager.appendToLocalLog``): each one
  TotalProduceRequests; appended, BytesIn (the request's records bytes) and MessagesIn (the
  batch's offsets, last - first + 1, a duplicate's too, as Kafka's ``numMessages``); failed
  on a refused batch (validation) or an unexpected error, FailedProduceRequests, while the
  expected refusals (not the leader, unknown partition, too large, storage) are not, as in
  Kafka; a batch over ``max.message.bytes`` counts its bytes in BytesRejected;
- a Fetch's partitions (``ReplicaManager.fetchMessages``): each one TotalFetchRequests, an
  unexpected read error (a corrupt batch, UNKNOWN_SERVER_ERROR) FailedFetchRequests, and a
  consumer's answer its records bytes in BytesOut (a follower's are replication, not
  BytesOut, as Kafka's ``updateBytesOut``).

The coordinators' own appends to their internal topics do not pass here (Kafka counts them
in BytesIn too: they are small beside the clients'). A topic's counts go when the broker
no longer hosts it (:meth:`BrokerTopicStats.retain`), as Kafka removes its metrics.
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from dataclasses import dataclass, fields

from prometheus_client.core import CounterMetricFamily

from pykraft.runtime.jmx_names import prometheus_name

#: Kafka's meter name of each :class:`TopicCounts` field, in order.
METERS = ("MessagesInPerSec", "BytesInPerSec", "BytesOutPerSec", "BytesRejectedPerSec",
          "FailedProduceRequestsPerSec", "FailedFetchRequestsPerSec",
          "TotalProduceRequestsPerSec", "TotalFetchRequestsPerSec")


@dataclass(slots=True)
class TopicCounts:
    messages_in: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    bytes_rejected: int = 0
    failed_produce_requests: int = 0
    failed_fetch_requests: int = 0
    total_produce_requests: int = 0
    total_fetch_requests: int = 0


class BrokerTopicStats:
    """The counts of each topic and of all of them; every method counts in both."""

    def __init__(self) -> None:
        self.all_topics = TopicCounts()
        self.topics: dict[str, TopicCounts] = {}

    def _both(self, topic: str) -> tuple[TopicCounts, TopicCounts]:
        counts = self.topics.get(topic)
        if counts is None:
            counts = self.topics[topic] = TopicCounts()
        return counts, self.all_topics

    def produced(self, topic: str, size: int, messages: int) -> None:
        """One partition's append of ``messages`` records in ``size`` bytes."""
        for counts in self._both(topic):
            counts.total_produce_requests += 1
            counts.bytes_in += size
            counts.messages_in += messages

    def produce_failed(self, topic: str, *, unexpected: bool, rejected_bytes: int = 0) -> None:
        """One partition's append refused: ``unexpected`` (Kafka's failed produce), and
        ``rejected_bytes`` for a batch too large."""
        for counts in self._both(topic):
            counts.total_produce_requests += 1
            counts.failed_produce_requests += unexpected
            counts.bytes_rejected += rejected_bytes

    def fetched(self, topic: str, *, failed: bool) -> None:
        """One partition read by a Fetch; ``failed`` unexpectedly."""
        for counts in self._both(topic):
            counts.total_fetch_requests += 1
            counts.failed_fetch_requests += failed

    def sent(self, topic: str, size: int) -> None:
        """``size`` bytes of records answered to a consumer."""
        for counts in self._both(topic):
            counts.bytes_out += size

    def retain(self, hosted: Container[str]) -> None:
        """Forget the topics this broker no longer hosts."""
        for topic in [t for t in self.topics if t not in hosted]:
            del self.topics[topic]

    def families(self) -> Iterator[CounterMetricFamily]:
        """One counter per meter: all topics unlabelled, each topic under ``topic`` (a
        family's samples may differ in labels, as the exporter's do here)."""
        for meter, attr in zip(METERS, (f.name for f in fields(TopicCounts)), strict=True):
            family = CounterMetricFamily(
                prometheus_name("kafka.server", "BrokerTopicMetrics", meter),
                f"Kafka's {meter} count (all topics without a topic label)",
                value=getattr(self.all_topics, attr))
            for topic in sorted(self.topics):
                family.add_sample(family.name + "_total", {"topic": topic},
                                  float(getattr(self.topics[topic], attr)))
            yield family
