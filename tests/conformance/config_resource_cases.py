"""Conformance rows for ListConfigResources (API 74; ListClientMetricsResources at v0): the
types each version lists, Kafka's order by type, a type it does not list, and a session
without DESCRIBE_CONFIGS on the cluster. Rows keep, of every topic, the suite's own topic
(the others depend on which rows ran before)."""

from __future__ import annotations

import dataclasses
from typing import Any

from conformance.cases import Case, Meaning, code
from conformance.harness import SASL, Run
from conformance.sasl_cases import as_alice
from pykraft.image.configs import ConfigResourceType as T
from pykraft.messages.kafka.list_config_resources_request import ListConfigResourcesRequest
from pykraft.protocol.apis import ApiKey

_LCR = ApiKey.LIST_CONFIG_RESOURCES
#: The first version naming the types to list (KIP-1142)
TYPES_SINCE = 1


def listed(*types: int) -> Any:
    def send(run: Run) -> Any:
        body = run.generated(_LCR, ListConfigResourcesRequest(resource_types=types))
        return dataclasses.replace(body, config_resources=tuple(
            r for r in body.config_resources
            if r.resource_type != T.TOPIC or r.resource_name == run.cluster.topic))
    return send


def resources(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), [(T(r.resource_type).name, r.resource_name)
                                   for r in body.config_resources]


def brokers(run: Run, *types: T) -> list[tuple[str, str]]:
    return [(t.name, str(run.cluster.broker_id)) for t in types]


CONFIG_RESOURCES = [
    Case("ListConfigResources", _LCR, "client_metrics_subscriptions", listed(), resources,
         lambda _r: ("NONE", []), until=TYPES_SINCE),
    Case("ListConfigResources", _LCR, "every_type", listed(), resources,
         lambda r: ("NONE", [*brokers(r, T.BROKER_LOGGER, T.BROKER),
                             ("TOPIC", r.cluster.topic)]), since=TYPES_SINCE),
    Case("ListConfigResources", _LCR, "named_types_in_kafka_s_order",
         listed(T.TOPIC, T.BROKER, T.TOPIC), resources,
         lambda r: ("NONE", [*brokers(r, T.BROKER), ("TOPIC", r.cluster.topic)]),
         since=TYPES_SINCE),
    Case("ListConfigResources", _LCR, "brokers_as_loggers", listed(T.BROKER_LOGGER), resources,
         lambda r: ("NONE", brokers(r, T.BROKER_LOGGER)), since=TYPES_SINCE),
    Case("ListConfigResources", _LCR, "no_group_or_subscription_configs",
         listed(T.GROUP, T.CLIENT_METRICS), resources, lambda _r: ("NONE", []),
         since=TYPES_SINCE),
    Case("ListConfigResources", _LCR, "a_type_not_listed", listed(T.TOPIC, T.UNKNOWN),
         resources, lambda _r: ("UNSUPPORTED_VERSION", []), since=TYPES_SINCE),
    Case("ListConfigResources", _LCR, "without_describe_configs_on_the_cluster",
         lambda r: as_alice(r, ListConfigResourcesRequest()), resources,
         lambda _r: ("CLUSTER_AUTHORIZATION_FAILED", []), listeners=(SASL,)),
]
