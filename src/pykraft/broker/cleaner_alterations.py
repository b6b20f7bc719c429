"""The log cleaner's part of Kafka's broker-side check of a config change before it is
forwarded (``ConfigAdminManager.preprocess``, ``DynamicBrokerConfig.validate``): a change
of this broker's or the cluster default's ``log.cleaner.*`` that this broker's cleaner
would refuse is answered INVALID_REQUEST at once, with Kafka 4.4's message, and the other
resources of the request go on to the controller.

Kafka 4.4 refuses (read from its answers):

- 1 MiB or less of ``log.cleaner.dedupe.buffer.size`` a thread: "requirement failed:
  log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.";
- a thread count below 1, below half or above double the running one: "Invalid value
  org.apache.kafka.common.config.ConfigException: Log cleaner threads cannot be increased to
  more than double the current value 1 for configuration Invalid dynamic configuration".

A value that is no number is the controller's to refuse (as Kafka's, same message).

Interface::

    refused = cleaner_refusals(body, current=config, static=props, configs=image.configs,
                               node_id=1)                  # {resource index: message}
    answer = with_refusals(body, refused, forwarded_answer)  # the request's order kept
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pykraft.controller.config_control import AlterOp
from pykraft.errors import ConfigError
from pykraft.image.configs import ConfigResourceType, ConfigurationsImage
from pykraft.log.cleaner_config import (
    RECONFIGURABLE,
    CleanerConfig,
    DedupeBufferTooSmallError,
    check_reconfiguration,
)
from pykraft.messages.kafka import alter_configs_request as legacy
from pykraft.messages.kafka import alter_configs_response as legacy_answer
from pykraft.messages.kafka import incremental_alter_configs_request as incremental
from pykraft.messages.kafka import incremental_alter_configs_response as incremental_answer
from pykraft.protocol.errors import ErrorCode

AlterRequest = incremental.IncrementalAlterConfigsRequest | legacy.AlterConfigsRequest
Resource = incremental.AlterConfigsResource | legacy.AlterConfigsResource
T = TypeVar("T")
AlterResponse = (incremental_answer.IncrementalAlterConfigsResponse
                 | legacy_answer.AlterConfigsResponse)


def cleaner_refusals(body: AlterRequest, *, current: CleanerConfig, static: Mapping[str, str],
                     configs: ConfigurationsImage, node_id: int) -> dict[int, str]:
    """Each resource of ``body`` (by index) whose change of the cleaner's settings Kafka's
    broker refuses, with Kafka's message: a BROKER resource naming this node or the cluster
    default, the layers as they would be after it."""
    refused = {}
    resources: tuple[Resource, ...] = body.resources
    for index, resource in enumerate(resources):
        if (resource.resource_type != ConfigResourceType.BROKER
                or resource.resource_name not in ("", str(node_id))):
            continue
        replaces = isinstance(resource, legacy.AlterConfigsResource)
        if not replaces and not any(c.name in RECONFIGURABLE for c in resource.configs):
            continue
        default, own = dict(configs.broker("")), dict(configs.broker(str(node_id)))
        target = own if resource.resource_name else default
        if isinstance(resource, legacy.AlterConfigsResource):
            target.clear()  # AlterConfigs sets the resource's whole dynamic config
            target.update((c.name, c.value) for c in resource.configs if c.value is not None)
        else:
            for change in resource.configs:
                if change.config_operation == AlterOp.DELETE:
                    target.pop(change.name, None)
                elif change.config_operation == AlterOp.SET and change.value is not None:
                    target[change.name] = change.value
        message = _refusal(current, static, default, own)
        if message is not None:
            refused[index] = message
    return refused


def _refusal(current: CleanerConfig, static: Mapping[str, str], default: Mapping[str, str],
             own: Mapping[str, str]) -> str | None:
    try:
        new = CleanerConfig.from_layers(static, default, own)
    except DedupeBufferTooSmallError as exc:
        return str(exc)
    except ConfigError:
        return None  # not a number: the controller's answer
    if new == current:
        return None
    try:
        check_reconfiguration(current, new)
    except ConfigError as exc:
        return (f"Invalid value org.apache.kafka.common.config.ConfigException: {exc} for "
                f"configuration Invalid dynamic configuration")
    return None


def with_refusals(body: AlterRequest, refused: Mapping[int, str],
                  answer: AlterResponse | None) -> AlterResponse:
    """The answer to ``body``: its refused resources INVALID_REQUEST with their message, the
    others as ``answer`` (the controller's, to the rest in order; None when none was left)
    gave them, in the request's order (Kafka's ``reassembleIncrementalResponse``)."""
    entry = (incremental_answer.AlterConfigsResourceResponse
             if isinstance(body, incremental.IncrementalAlterConfigsRequest)
             else legacy_answer.AlterConfigsResourceResponse)
    rest = iter(() if answer is None else answer.responses)
    resources: tuple[Resource, ...] = body.resources
    entries = tuple(
        next(rest) if index not in refused
        else entry(error_code=ErrorCode.INVALID_REQUEST, error_message=refused[index],
                   resource_type=resource.resource_type, resource_name=resource.resource_name)
        for index, resource in enumerate(resources))
    if isinstance(body, incremental.IncrementalAlterConfigsRequest):
        return incremental_answer.IncrementalAlterConfigsResponse(
            throttle_time_ms=0 if answer is None else answer.throttle_time_ms,
            responses=_typed(entries, incremental_answer.AlterConfigsResourceResponse))
    return legacy_answer.AlterConfigsResponse(
        throttle_time_ms=0 if answer is None else answer.throttle_time_ms,
        responses=_typed(entries, legacy_answer.AlterConfigsResourceResponse))


def _typed(entries: tuple[object, ...], cls: type[T]) -> tuple[T, ...]:
    """``entries``, each checked to be a ``cls``."""
    assert all(isinstance(e, cls) for e in entries)
    return tuple(e for e in entries if isinstance(e, cls))
