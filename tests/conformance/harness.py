"""What a conformance row runs against: the cluster's addresses, one (case, listener,
version) run, and builders for the two independent encoders.

kio's entities are one class per version, so :func:`kio_entity` builds one from a
version-independent dict: fields the version lacks are left out, fields it has and the dict
does not name get their schema default (or the zero of their type).
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema, load_response_schema

from conformance.wire import Answer, generated_call, kafka_python_call, kio_call
from pykraft.protocol.convert import entity_in

BROKER = "broker"
CONTROLLER = "controller"
#: The broker's SASL_PLAINTEXT listener (PLAIN, users of sasl_cases.py).
SASL = "sasl"
_ZEROS: dict[str, object] = {"bool": False, "string": "", "bytes": b"", "uuid": None,
                             "timedelta_i32": datetime.timedelta(0),
                             "timedelta_i64": datetime.timedelta(0)}


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
                     unknown_tag: bool = False, **fields: Any) -> Any:
        """The response body to ``request_class[version](**fields)``, both by kafka-python."""
        request = request_class[self.version](**fields)
        return kafka_python_call(self.address, request, response_class,
                                 unknown_tag=unknown_tag).body

    def generated(self, api_key: int, request: Any) -> Any:
        """The response body to a generated request (:mod:`pykraft.messages.kafka`) at
        this version."""
        return generated_call(self.address, api_key, self.version, request).body

    def kio(self, api_key: int, fields: Mapping[str, Any]) -> Any:
        """The response body to the kio request at this version built from ``fields``."""
        answer: Answer = kio_call(self.address, kio_entity(
            load_request_schema(api_key, self.version), fields),
            load_response_schema(api_key, self.version))
        return answer.body


def kio_entity(cls: type, values: Mapping[str, Any]) -> Any:
    """``cls`` (a kio entity of some version) from a version-independent dict."""
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name in values:
            kwargs[field.name] = _value(values[field.name], field.type)
        elif (field.default is dataclasses.MISSING
              and field.default_factory is dataclasses.MISSING):
            kwargs[field.name] = _zero(field)
    return cls(**kwargs)


def _value(value: Any, annotation: Any) -> Any:
    nested = entity_in(annotation)
    if nested is None or value is None:
        return tuple(value) if isinstance(value, list) else value
    if isinstance(value, list):
        return tuple(kio_entity(nested, item) for item in value)
    return kio_entity(nested, value)


def _zero(field: dataclasses.Field[Any]) -> Any:
    if typing.get_origin(field.type) is tuple:
        return ()
    nested = entity_in(field.type)
    if nested is not None:
        return kio_entity(nested, {})
    kafka_type = field.metadata.get("kafka_type", "")
    return _ZEROS.get(kafka_type, 0)


