"""ListConfigResources (API 74; ListClientMetricsResources at v0, KIP-1142 from v1): the
resources that have configs, from the broker's image (Kafka's
``KafkaApis.handleListConfigResources``).

Interface::

    response = list_config_resources(image, body, version, listener="PLAINTEXT")

Kafka's rules, kept here:

- v0 lists client-metrics subscriptions only; v1 takes the types to list, every type when
  none is named. A named type outside TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS and
  GROUP (v0: CLIENT_METRICS alone) makes the whole answer UNSUPPORTED_VERSION, empty.
- The answer goes by type, in Kafka's order whatever the request's: groups with configs,
  client-metrics subscriptions, every registered broker with this listener as a
  BROKER_LOGGER and again as a BROKER (fenced ones too: ``getBrokerNodes``), then every
  topic. Kafka lists groups and topics in its hash maps' order; here, by name.
- DESCRIBE_CONFIGS on the cluster is checked first (CLUSTER_AUTHORIZATION_FAILED), by the
  dispatcher's rules.
"""

from __future__ import annotations

from pykraft.image.configs import ConfigResourceType
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.list_config_resources_request import ListConfigResourcesRequest
from pykraft.messages.kafka.list_config_resources_response import (
    ConfigResource,
    ListConfigResourcesResponse,
)
from pykraft.protocol.errors import ErrorCode

#: Types v1 lists, in the order Kafka answers them.
ANSWER_ORDER = (ConfigResourceType.GROUP, ConfigResourceType.CLIENT_METRICS,
                ConfigResourceType.BROKER_LOGGER, ConfigResourceType.BROKER,
                ConfigResourceType.TOPIC)
#: v0 (ListClientMetricsResources) knows one type.
V0_TYPES = (ConfigResourceType.CLIENT_METRICS,)


def list_config_resources(image: MetadataImage, request: ListConfigResourcesRequest,
                          version: int, *, listener: str) -> ListConfigResourcesResponse:
    supported = V0_TYPES if version == 0 else ANSWER_ORDER
    asked = set(request.resource_types) if version > 0 and request.resource_types else (
        set(supported))
    if not asked <= set(supported):
        return ListConfigResourcesResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
    resources = [ConfigResource(resource_name=name, resource_type=resource_type)
                 for resource_type in ANSWER_ORDER if resource_type in asked
                 for name in _names(image, resource_type, listener)]
    return ListConfigResourcesResponse(config_resources=tuple(resources))


def _names(image: MetadataImage, resource_type: ConfigResourceType,
           listener: str) -> list[str]:
    if resource_type in (ConfigResourceType.GROUP, ConfigResourceType.CLIENT_METRICS):
        return sorted(name for kind, name in image.configs.resources if kind == resource_type)
    if resource_type == ConfigResourceType.TOPIC:
        return sorted(image.topics.by_name)
    return [str(broker.broker_id) for broker in sorted(image.cluster.brokers.values(),
                                                       key=lambda b: b.broker_id)
            if any(endpoint.name == listener for endpoint in broker.listeners)]
