"""Kafka's MBean names as Prometheus names, by one rule: the rule of the JMX exporter's
Kafka example (prometheus/jmx_exporter ``example_configs/kafka-2_0_0.yml``, with
``lowercaseOutputName``), so that dashboards and alerts written for a Kafka scraped through
that exporter find pykraft's metrics under the same names::

    kafka.<domain>:type=<Type>,name=<Name>[,<key>=<value>...]
        -> kafka_<domain>_<type>_<name>{<key>="<value>",...}

lowercased, every character outside ``[a-z0-9_]`` written ``_`` (``max-dirty-percent``:
``max_dirty_percent``). A meter (a name ending ``PerSec``: a count and its rates in Kafka)
drops ``PerSec`` and is the Prometheus counter of its count, ``..._total``
(``kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=T`` is
``kafka_server_brokertopicmetrics_messagesin_total{topic="T"}``): rates are PromQL's
``rate()``. A histogram (Kafka's ``TotalTimeMs`` and the other request times) is a
Prometheus histogram of its name (``..._bucket``, ``_sum``, ``_count``; the exporter's
``_count`` is the same series). A gauge is its value under its name. The key properties
other than ``type`` and ``name`` are labels named as Kafka names the key (``topic``,
``request``, ``version``, ``error``, ``delayedOperation``); Kafka's all-topics meters,
which have no ``topic`` key, are the same names without the label.
"""

from __future__ import annotations

import re

_OUTSIDE = re.compile(r"[^a-z0-9_]")


def prometheus_name(domain: str, mbean_type: str, name: str) -> str:
    """The Prometheus name of ``<domain>:type=<mbean_type>,name=<name>`` (``domain`` as
    ``kafka.server``); a meter's without its ``_total``, which the counter adds."""
    name = name.removesuffix("PerSec")
    return _OUTSIDE.sub("_", f"{domain}_{mbean_type}_{name}".replace(".", "_").lower())
