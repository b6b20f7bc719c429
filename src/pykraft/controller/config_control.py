"""Dynamic configs: validation, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
(Kafka's ConfigurationControlManager).

Topic and broker resources are stored; a broker resource is named by its id, or "" for the
cluster-wide default. Each resource is altered all-or-nothing: the first invalid key fails
the whole resource. Values are resolved like Kafka's DescribeConfigs: a topic's own value,
else the default; a broker's own value, else the cluster default, else the default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from kio.schema.alter_configs.v2.request import AlterConfigsRequest
from kio.schema.alter_configs.v2.response import (
    AlterConfigsResourceResponse as LegacyResourceResponse,
)
from kio.schema.alter_configs.v2.response import AlterConfigsResponse
from kio.schema.describe_configs.v4 import response as describe
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest
from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest
from kio.schema.incremental_alter_configs.v1.response import (
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)
from kio.static.primitive import i8

from pykraft.controller.config_defs import ConfigDef, ConfigType, definitions
from pykraft.controller.context import ControllerContext, ControllerResult
from pykraft.controller.responses import NO_THROTTLE
from pykraft.image.configs import ConfigResource, ConfigResourceType
from pykraft.image.image import MetadataImage
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ConfigRecord


class ConfigSource(IntEnum):
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    DEFAULT_CONFIG = 5


class AlterOp(IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class ConfigFailure:
    code: ErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class ConfigValue:
    definition: ConfigDef
    value: str
    source: ConfigSource
    synonyms: tuple[tuple[str, ConfigSource], ...]


def check_resource(image: MetadataImage, resource: ConfigResource) -> ConfigFailure | None:
    """Is the resource one the controller stores configs for, and does it exist?"""
    resource_type, name = resource
    if definitions(resource_type) is None:
        return ConfigFailure(ErrorCode.invalid_request,
                             f"Unsupported resource type {resource_type} for configs")
    if resource_type == ConfigResourceType.TOPIC:
        if name not in image.topics.by_name:
            return ConfigFailure(ErrorCode.unknown_topic_or_partition,
                                 f"Topic {name!r} does not exist")
    elif name and not (name.isascii() and name.isdigit()):
        return ConfigFailure(ErrorCode.invalid_request, f"Invalid broker name {name!r}")
    return None


def validate(resource_type: int, configs: Mapping[str, str | None]) -> ConfigFailure | None:
    """Unknown keys, null values and out-of-range values fail with INVALID_CONFIG."""
    defs = definitions(resource_type) or {}
    for key, value in configs.items():
        definition = defs.get(key)
        if definition is None:
            return ConfigFailure(ErrorCode.invalid_config, f"Unknown configuration '{key}'")
        if value is None:
            return ConfigFailure(ErrorCode.invalid_config,
                                 f"Null value not supported for configuration '{key}'")
        problem = definition.problem(value)
        if problem is not None:
            return ConfigFailure(ErrorCode.invalid_config, problem)
    return None


def effective(image: MetadataImage, resource: ConfigResource) -> list[ConfigValue]:
    """Every key of the resource's type with its resolved value, source and synonyms."""
    resource_type, name = resource
    defs = definitions(resource_type) or {}
    layers: list[tuple[Mapping[str, str], ConfigSource]] = []
    if resource_type == ConfigResourceType.TOPIC:
        layers.append((image.configs.get(resource), ConfigSource.TOPIC_CONFIG))
    else:
        if name:
            layers.append((image.configs.get(resource), ConfigSource.DYNAMIC_BROKER_CONFIG))
        layers.append((image.configs.get((resource_type, "")),
                       ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
    values: list[ConfigValue] = []
    for key in sorted(defs):
        chain = [(layer[key], source) for layer, source in layers if key in layer]
        chain.append((defs[key].default, ConfigSource.DEFAULT_CONFIG))
        values.append(ConfigValue(defs[key], chain[0][0], chain[0][1], tuple(chain)))
    return values


def describe_configs(image: MetadataImage, req: DescribeConfigsRequest) -> ControllerResult:
    results = []
    for res in req.resources:
        resource = (int(res.resource_type), res.resource_name)
        failure = check_resource(image, resource)
        entries: list[describe.DescribeConfigsResourceResult] = []
        if failure is None:
            wanted = None if res.configuration_keys is None else set(res.configuration_keys)
            entries = [
                describe.DescribeConfigsResourceResult(
                    name=v.definition.name, value=v.value, read_only=False,
                    config_source=i8(int(v.source)), is_sensitive=False,
                    synonyms=tuple(
                        describe.DescribeConfigsSynonym(name=v.definition.name, value=value,
                                                        source=i8(int(source)))
                        for value, source in v.synonyms
                    ) if req.include_synonyms else (),
                    config_type=i8(int(v.definition.type)),
                    documentation=v.definition.doc if req.include_documentation else None,
                )
                for v in effective(image, resource)
                if wanted is None or v.definition.name in wanted
            ]
        results.append(describe.DescribeConfigsResult(
            error_code=_code(failure), error_message=_message(failure),
            resource_type=res.resource_type, resource_name=res.resource_name,
            configs=tuple(entries),
        ))
    return ControllerResult((), describe.DescribeConfigsResponse(
        throttle_time=NO_THROTTLE, results=tuple(results)))


def _apply_op(definition: ConfigDef | None, op: int, current: str | None,
              value: str | None) -> tuple[str | None, ConfigFailure | None]:
    """The new value of one key after an incremental op (None = deleted)."""
    if op == AlterOp.SET:
        return value, None
    if op == AlterOp.DELETE:
        return None, None
    if op not in (AlterOp.APPEND, AlterOp.SUBTRACT):
        return None, ConfigFailure(ErrorCode.invalid_request, f"Unknown config operation {op}")
    if definition is None or definition.type is not ConfigType.LIST:
        return None, ConfigFailure(
            ErrorCode.invalid_config,
            "APPEND and SUBTRACT only apply to list-type configurations")
    if value is None:
        return None, ConfigFailure(ErrorCode.invalid_config, "Null value for APPEND/SUBTRACT")
    base = current if current is not None else definition.default
    items = [item.strip() for item in base.split(",") if item.strip()]
    given = [item.strip() for item in value.split(",") if item.strip()]
    if op == AlterOp.APPEND:
        items += [item for item in given if item not in items]
    else:
        items = [item for item in items if item not in given]
    return ",".join(items), None


def _records_for(resource: ConfigResource, old: Mapping[str, str],
                 new: Mapping[str, str | None]) -> list[object]:
    resource_type, name = resource
    return [
        ConfigRecord(resource_type=resource_type, resource_name=name, name=key, value=value)
        for key, value in sorted(new.items())
        if old.get(key) != value
    ]


def _duplicates(resources: Sequence[ConfigResource]) -> set[ConfigResource]:
    seen: set[ConfigResource] = set()
    dups: set[ConfigResource] = set()
    for resource in resources:
        (dups if resource in seen else seen).add(resource)
    return dups


def _alter(
    ctx: ControllerContext,
    resource: ConfigResource,
    changes: Sequence[tuple[str, int, str | None]],
    *,
    replace_all: bool,
) -> tuple[list[object], ConfigFailure | None]:
    """Records for one resource's changes (key, op, value), validated as a whole."""
    failure = check_resource(ctx.image, resource)
    if failure is not None:
        return [], failure
    keys = [key for key, _, _ in changes]
    if len(set(keys)) != len(keys):
        return [], ConfigFailure(ErrorCode.invalid_request, "Duplicate configuration keys")
    defs = definitions(resource[0]) or {}
    old = ctx.image.configs.get(resource)
    new: dict[str, str | None] = {key: None for key in old} if replace_all else {}
    for key, op, value in changes:
        if key not in defs:
            return [], ConfigFailure(ErrorCode.invalid_config, f"Unknown configuration '{key}'")
        if op == AlterOp.SET and value is None:
            return [], ConfigFailure(ErrorCode.invalid_config,
                                     f"Null value not supported for configuration '{key}'")
        new[key], failure = _apply_op(defs[key], op, old.get(key), value)
        if failure is not None:
            return [], failure
    failure = validate(resource[0], {k: v for k, v in new.items() if v is not None})
    if failure is not None:
        return [], failure
    return _records_for(resource, old, new), None


def _alter_all(
    ctx: ControllerContext,
    items: Sequence[tuple[ConfigResource, Sequence[tuple[str, int, str | None]]]],
    *,
    replace_all: bool,
) -> tuple[list[object], list[ConfigFailure | None]]:
    """Records and per-resource outcome; a resource named twice fails both times."""
    dups = _duplicates([resource for resource, _ in items])
    records: list[object] = []
    outcomes: list[ConfigFailure | None] = []
    for resource, changes in items:
        if resource in dups:
            outcomes.append(ConfigFailure(ErrorCode.invalid_request,
                                          "Duplicate resource in request"))
            continue
        changed, failure = _alter(ctx, resource, changes, replace_all=replace_all)
        records += changed
        outcomes.append(failure)
    return records, outcomes


def _code(failure: ConfigFailure | None) -> ErrorCode:
    return ErrorCode.none if failure is None else failure.code


def _message(failure: ConfigFailure | None) -> str | None:
    return None if failure is None else failure.message


def incremental_alter_configs(ctx: ControllerContext,
                              req: IncrementalAlterConfigsRequest) -> ControllerResult:
    records, outcomes = _alter_all(ctx, [
        ((int(r.resource_type), r.resource_name),
         [(c.name, int(c.config_operation), c.value) for c in r.configs])
        for r in req.resources
    ], replace_all=False)
    answers = tuple(
        AlterConfigsResourceResponse(error_code=_code(f), error_message=_message(f),
                                     resource_type=r.resource_type,
                                     resource_name=r.resource_name)
        for r, f in zip(req.resources, outcomes, strict=True)
    )
    return ControllerResult(() if req.validate_only else tuple(records),
                            IncrementalAlterConfigsResponse(throttle_time=NO_THROTTLE,
                                                            responses=answers))


def alter_configs(ctx: ControllerContext, req: AlterConfigsRequest) -> ControllerResult:
    """Legacy AlterConfigs: the given keys become the resource's whole config."""
    records, outcomes = _alter_all(ctx, [
        ((int(r.resource_type), r.resource_name),
         [(c.name, int(AlterOp.SET), c.value) for c in r.configs])
        for r in req.resources
    ], replace_all=True)
    answers = tuple(
        LegacyResourceResponse(error_code=_code(f), error_message=_message(f),
                               resource_type=r.resource_type, resource_name=r.resource_name)
        for r, f in zip(req.resources, outcomes, strict=True)
    )
    return ControllerResult(() if req.validate_only else tuple(records),
                            AlterConfigsResponse(throttle_time=NO_THROTTLE, responses=answers))
