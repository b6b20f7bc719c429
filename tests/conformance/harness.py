"""What a conformance row runs against: the cluster's addresses, one (case, listener,
version) run, and senders for its two encoders (kafka-python's, independent of pykraft, and
pykraft's generated classes for what kafka-python lacks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.wire import CLIENT_ID, generated_call, kafka_python_call

BROKER = "broker"
CONTROLLER = "controller"
#: The broker's SASL_PLAINTEXT listener (PLAIN, users of sasl_cases.py).
SASL = "sasl"


@dataclass(frozen=True)
class ClusterInfo:
    """A running cluster of one controller and one broker, and what was set up in it."""

    cluster_id: str
    controller_id: int
    controller: tuple[str, int]
    broker_id: int
    broker: tuple[str, int]
    #: An existing topic with :attr:`partitions` partitions, for the read-only rows.
    topic: str
    partitions: int
    #: The metadata partition's leader epoch (one controller: it does not change).
    epoch: int
    sasl: tuple[str, int] = ("", 0)

    def address(self, listener: str) -> tuple[str, int]:
        return {BROKER: self.broker, SASL: self.sasl}.get(listener, self.controller)


@dataclass(frozen=True)
class Run:
    """One row of the table at one version on one listener."""

    cluster: ClusterInfo
    api_name: str
    case: str
    listener: str
    version: int

    @property
    def address(self) -> tuple[str, int]:
        return self.cluster.address(self.listener)

    @property
    def fresh_topic(self) -> str:
        """A topic name no other run uses (for rows that create or delete)."""
        return f"c-{self.api_name}-{self.case}-{self.listener}-v{self.version}".lower()

    def kafka_python(self, request_class: Any, response_class: Any, *,
                     unknown_tag: bool = False, client_id: str = CLIENT_ID,
                     **fields: Any) -> Any:
        """The response body to ``request_class[version](**fields)``, both by kafka-python
        (sent with ``client_id``: quotas tell clients apart by it)."""
        request = request_class[self.version](**fields)
        return kafka_python_call(self.address, request, response_class,
                                 unknown_tag=unknown_tag, client_id=client_id).body

    def generated(self, api_key: int, request: object) -> Any:
        """The response body to a generated request (:mod:`pykraft.messages.kafka`) at
        this version, decoded by the same classes."""
        return generated_call(self.address, api_key, self.version, request).body
