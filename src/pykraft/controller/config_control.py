"""Dynamic configs: validation, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
(Kafka's ConfigurationControlManager and ConfigHelper).

Topic and broker resources are stored; a broker resource is named by its id, or "" for the
cluster-wide default. Each resource is altered all-or-nothing: the first invalid key fails
the whole resource. DescribeConfigs resolves a topic's own value, else the default; a node
describes only itself (BROKER "<its id>") or the cluster defaults (BROKER ""), with its
static properties as a layer (:mod:`pykraft.config.broker_configs`), as Kafka does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar

from pykraft.config.broker_configs import (
    BrokerConfigLayers,
    DescribedConfig,
    describe_broker,
    describe_key,
    is_known,
)
from pykraft.config.broker_configs import (
    definition as broker_definition,
)
from pykraft.config.definitions import ConfigSource
from pykraft.config.topic_keys import (
    BROKER_SYNONYMS,
    INTERNAL_TOPIC_CONFIGS,
    remote_storage_problem,
    topic_value,
)
from pykraft.controller.config_defs import TOPIC_CONFIGS, ConfigDef, ConfigType, definitions
from pykraft.controller.context import (
    MAX_RECORDS_PER_USER_OP,
    TOO_LARGE_MESSAGE,
    ControllerContext,
    ControllerResult,
)
from pykraft.controller.topic_names import topic_name_problem
from pykraft.features import ELIGIBLE_LEADER_REPLICAS_FEATURE
from pykraft.image.configs import ConfigResource, ConfigResourceType
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka import describe_configs_response as describe
from pykraft.messages.kafka.alter_configs_request import AlterConfigsRequest
from pykraft.messages.kafka.alter_configs_response import (
    AlterConfigsResourceResponse as LegacyResourceResponse,
)
from pykraft.messages.kafka.alter_configs_response import AlterConfigsResponse
from pykraft.messages.kafka.describe_configs_request import DescribeConfigsRequest
from pykraft.messages.kafka.incremental_alter_configs_request import (
    IncrementalAlterConfigsRequest,
)
from pykraft.messages.kafka.incremental_alter_configs_response import (
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ClearElrRecord, ConfigRecord

__all__ = ["AlterOp", "ConfigFailure", "ConfigSource", "alter_configs", "check_resource",
           "clear_elr_records", "describe_configs", "elr_enabled", "incremental_alter_configs",
           "min_insync_replicas", "topic_entries", "unclean_election_enabled", "validate"]
UNCLEAN_ELECTION = "unclean.leader.election.enable"
MIN_INSYNC_REPLICAS = "min.insync.replicas"


class AlterOp(IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class ConfigFailure:
    code: ErrorCode
    message: str


Changes = Sequence[tuple[str, int, str | None]]
"""One resource's changes: (key, AlterOp, value)."""
W = TypeVar("W")
_TOO_LARGE = ConfigFailure(ErrorCode.POLICY_VIOLATION, TOO_LARGE_MESSAGE)


def check_resource(image: MetadataImage, resource: ConfigResource) -> ConfigFailure | None:
    """Is the resource one the controller stores configs for, and does it exist?"""
    resource_type, name = resource
    if definitions(resource_type) is None:
        return ConfigFailure(ErrorCode.INVALID_REQUEST,
                             f"Unsupported resource type {resource_type} for configs")
    if resource_type == ConfigResourceType.TOPIC:
        problem = topic_name_problem(name)
        if problem is not None:  # Kafka validates the name before looking the topic up
            return ConfigFailure(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if name not in image.topics.by_name:
            return ConfigFailure(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 f"The topic '{name}' does not exist.")
    elif name and not (name.isascii() and name.isdigit()):
        return ConfigFailure(ErrorCode.INVALID_REQUEST, f"Invalid broker name {name!r}")
    return None


def validate(resource_type: int, configs: Mapping[str, str | None]) -> ConfigFailure | None:
    """Unknown topic keys, null values and out-of-range values fail with INVALID_CONFIG; a
    broker key nobody knows is not checked (Kafka stores it for whoever reads it)."""
    defs = definitions(resource_type) or {}
    for key, value in configs.items():
        definition = defs.get(key)
        if definition is None and resource_type == ConfigResourceType.BROKER:
            continue
        if definition is None:
            return ConfigFailure(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        if value is None:
            return ConfigFailure(ErrorCode.INVALID_CONFIG,
                                 f"Null value not supported for configuration '{key}'")
        problem = definition.problem(value)
        if problem is not None:
            return ConfigFailure(ErrorCode.INVALID_CONFIG, problem)
    if resource_type == ConfigResourceType.TOPIC:
        problem = remote_storage_problem({k: v for k, v in configs.items() if v is not None})
        if problem is not None:
            return ConfigFailure(ErrorCode.INVALID_CONFIG, problem)
    return None


def topic_entries(own: Mapping[str, str], layers: BrokerConfigLayers) -> list[DescribedConfig]:
    """Every key of a topic whose own configs are ``own``, as Kafka's ConfigHelper gives it
    on a node of config ``layers``: the value in force, and as synonyms the topic's own value
    then those of its broker synonym as this node describes that."""
    broker = layers.applied()
    described = []
    # an internal key is listed only when the topic sets it, as Kafka's ConfigHelper does
    internal = {key: d for key, d in INTERNAL_TOPIC_CONFIGS.items() if key in own}
    for key, definition in sorted({**TOPIC_CONFIGS, **internal}.items()):
        chain: list[tuple[str, str | None, ConfigSource]] = (
            [(key, own[key], ConfigSource.TOPIC_CONFIG)] if key in own else [])
        chain += _broker_synonyms(key, layers)
        described.append(DescribedConfig(
            name=key, value=topic_value(key, own, broker),
            source=chain[0][2] if chain else ConfigSource.DEFAULT_CONFIG, read_only=False,
            sensitive=False, config_type=definition.type, synonyms=tuple(chain),
            documentation=definition.doc))
    return described


def _broker_synonyms(key: str, layers: BrokerConfigLayers
                     ) -> list[tuple[str, str | None, ConfigSource]]:
    """The synonyms of the topic key's first broker synonym."""
    server = BROKER_SYNONYMS.get(key)
    if server is None:
        return []
    return list(describe_key(layers, server[0]).synonyms)


def _topic_setting(ctx: ControllerContext, topic: str, key: str) -> str | None:
    """A topic config as Kafka's controller resolves it (``getTopicConfig``): the topic's
    own value, else this controller's dynamic config, the cluster default, then its
    properties file; None if none sets it."""
    broker = ConfigResourceType.BROKER
    for layer in (ctx.image.configs.get((ConfigResourceType.TOPIC, topic)),
                  ctx.image.configs.get((broker, str(ctx.config.node_id))),
                  ctx.image.configs.get((broker, "")), ctx.config.properties):
        if key in layer:
            return layer[key]
    return None


def unclean_election_enabled(ctx: ControllerContext, topic: str) -> bool:
    """The topic's ``unclean.leader.election.enable`` (default false)."""
    value = _topic_setting(ctx, topic, UNCLEAN_ELECTION)
    return value is not None and value.strip().lower() == "true"


def min_insync_replicas(ctx: ControllerContext, topic: str) -> int:
    """The topic's ``min.insync.replicas`` (default 1), which the eligible leader replicas
    are kept against."""
    value = _topic_setting(ctx, topic, MIN_INSYNC_REPLICAS)
    try:
        return 1 if value is None else int(value.strip())
    except ValueError:
        return 1  # validated when set; a hand-edited properties file is not


def elr_enabled(image: MetadataImage) -> bool:
    """Kafka's ``isElrFeatureEnabled``: eligible.leader.replicas.version finalized at 1+."""
    return image.features.finalized.get(ELIGIBLE_LEADER_REPLICAS_FEATURE, 0) >= 1


def clear_elr_records(image: MetadataImage, records: Sequence[object]) -> list[object]:
    """Kafka's ``createClearElrRecordsAsNeeded``: with ELR on, each change of
    ``min.insync.replicas`` empties the ELRs it may make wrong, a topic's own (a TOPIC
    config) or every topic's (a broker or cluster default)."""
    if not elr_enabled(image):
        return []
    return [ClearElrRecord(topic_name=r.resource_name
                           if r.resource_type == ConfigResourceType.TOPIC else "")
            for r in records
            if isinstance(r, ConfigRecord) and r.name == MIN_INSYNC_REPLICAS]


def _min_isr_refusal(image: MetadataImage, records: Sequence[object]) -> ConfigFailure | None:
    """Kafka's ``isDisallowedBrokerMinIsrTransition`` and ``...ClusterMinIsrTransition``:
    with ELR on, a single broker's ``min.insync.replicas`` may not change (every controller
    must read one value) and the cluster default may not be removed."""
    if not elr_enabled(image):
        return None
    for r in records:
        if not (isinstance(r, ConfigRecord) and r.name == MIN_INSYNC_REPLICAS
                and r.resource_type == ConfigResourceType.BROKER):
            continue
        if r.resource_name:
            return ConfigFailure(ErrorCode.INVALID_CONFIG, "Broker-level min.insync.replicas "
                                 "cannot be altered while ELR is enabled.")
        if r.value is None:
            return ConfigFailure(ErrorCode.INVALID_CONFIG, "Cluster-level min.insync.replicas "
                                 "cannot be removed while ELR is enabled.")
    return None


def _broker_configs(image: MetadataImage, name: str, node_id: int,
                    static: Mapping[str, str]) -> list[DescribedConfig] | ConfigFailure:
    """This node's configs (BROKER "<node_id>") or the cluster defaults (BROKER "")."""
    if name and name != str(node_id):
        if not name.lstrip("-").isdigit():
            return ConfigFailure(ErrorCode.INVALID_REQUEST,
                                 f"Broker id must be an integer, but it is: {name}")
        return ConfigFailure(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected "
                             f"{node_id} or empty string, but received {name}")
    return describe_broker(BrokerConfigLayers.of(image.configs.broker, node_id, static),
                           per_broker=bool(name))


def _wire_entry(config: DescribedConfig, req: DescribeConfigsRequest
                ) -> describe.DescribeConfigsResourceResult:
    return describe.DescribeConfigsResourceResult(
        name=config.name, value=config.value, read_only=config.read_only,
        config_source=config.source, is_sensitive=config.sensitive,
        synonyms=tuple(
            describe.DescribeConfigsSynonym(name=name, value=value, source=source)
            for name, value, source in config.synonyms) if req.include_synonyms else (),
        config_type=config.config_type,
        documentation=config.documentation if req.include_documentation else None)


def describe_configs(image: MetadataImage, req: DescribeConfigsRequest, *, node_id: int,
                     static: Mapping[str, str]) -> describe.DescribeConfigsResponse:
    """Kafka's ConfigHelper as node ``node_id`` started from the properties ``static`` (a
    read: no records)."""
    results = []
    for res in req.resources:
        resource = (res.resource_type, res.resource_name)
        outcome: list[DescribedConfig] | ConfigFailure | None = check_resource(image, resource)
        if outcome is None:
            outcome = (topic_entries(image.configs.get(resource), BrokerConfigLayers.of(
                           image.configs.broker, node_id, static))
                       if resource[0] == ConfigResourceType.TOPIC
                       else _broker_configs(image, res.resource_name, node_id, static))
        failure = outcome if isinstance(outcome, ConfigFailure) else None
        # an empty key list asks for every key, as a null one does
        wanted = set(res.configuration_keys or ())
        entries = () if isinstance(outcome, ConfigFailure) else tuple(
            _wire_entry(config, req) for config in outcome
            if not wanted or config.name in wanted)
        results.append(describe.DescribeConfigsResult(
            error_code=_code(failure), error_message=_described_message(failure),
            resource_type=res.resource_type, resource_name=res.resource_name,
            configs=entries,
        ))
    return describe.DescribeConfigsResponse(results=tuple(results))


def _apply_op(definition: ConfigDef | None, op: int, current: str | None,
              value: str | None) -> tuple[str | None, ConfigFailure | None]:
    """The new value of one key after an incremental op (None = deleted)."""
    if op == AlterOp.SET:
        return value, None
    if op == AlterOp.DELETE:
        return None, None
    if op not in (AlterOp.APPEND, AlterOp.SUBTRACT):
        return None, ConfigFailure(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
    if definition is None or definition.type is not ConfigType.LIST:
        return None, ConfigFailure(
            ErrorCode.INVALID_CONFIG,
            "APPEND and SUBTRACT only apply to list-type configurations")
    if value is None:
        return None, ConfigFailure(ErrorCode.INVALID_CONFIG, "Null value for APPEND/SUBTRACT")
    base = current if current is not None else definition.default or ""
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


#: Kafka's ``DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS``: changed per listener only.
_SECURITY_KEYS = frozenset({
    "ssl.key.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type",
    "ssl.truststore.certificates", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.type"})


def _refusal(resource: ConfigResource, key: str) -> ConfigFailure | None:
    """Why a key may not be changed, in Kafka's words and order (DynamicBrokerConfig
    .validateConfigs: INVALID_REQUEST): a security key without a listener prefix, a per-broker
    key (or listener override) as a cluster default, then any key pykraft cannot change at
    run time, as for a read-only key (KAFKA-13609). A broker key nobody knows is stored, as
    Kafka stores it; an unknown topic key is INVALID_CONFIG (LogConfig.validateNames)."""
    resource_type, name = resource
    if resource_type != ConfigResourceType.BROKER:
        return ConfigFailure(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
    found = broker_definition(key)
    if key in _SECURITY_KEYS:
        reason = ("These security configs can be dynamically updated only per-listener using "
                  "the listener prefix")
    elif not name and found is not None and found.update_mode == "per-broker":
        reason = "Cannot update these configs at default cluster level, broker id must be " \
                 "specified"
    elif is_known(key):
        reason = "Cannot update these configs dynamically"
    else:
        return None
    return ConfigFailure(ErrorCode.INVALID_REQUEST, f"{reason}: [{key}]")


def _alter(
    ctx: ControllerContext,
    resource: ConfigResource,
    changes: Changes,
    *,
    replace_all: bool,
) -> tuple[list[object], ConfigFailure | None]:
    """Records for one resource's changes (key, op, value), validated as a whole."""
    failure = check_resource(ctx.image, resource)
    if failure is not None:
        return [], failure
    keys = [key for key, _, _ in changes]
    if len(set(keys)) != len(keys):
        return [], ConfigFailure(ErrorCode.INVALID_REQUEST, "Duplicate configuration keys")
    defs = definitions(resource[0]) or {}
    old = ctx.image.configs.get(resource)
    new: dict[str, str | None] = {key: None for key in old} if replace_all else {}
    for key, op, value in changes:
        definition = defs.get(key)
        if definition is None and (failure := _refusal(resource, key)) is not None:
            return [], failure
        if op == AlterOp.SET and value is None:
            return [], ConfigFailure(ErrorCode.INVALID_CONFIG,
                                     f"Null value not supported for configuration '{key}'")
        new[key], failure = _apply_op(definition, op, old.get(key), value)
        if failure is not None:
            return [], failure
    failure = validate(resource[0], {k: v for k, v in new.items() if v is not None})
    if failure is not None:
        return [], failure
    records = _records_for(resource, old, new)
    failure = _min_isr_refusal(ctx.image, records)
    return ([], failure) if failure is not None else (records, None)


def _alter_all(
    ctx: ControllerContext,
    items: Sequence[tuple[ConfigResource, W]],
    changes_of: Callable[[W], Changes],
    *,
    replace_all: bool,
) -> tuple[list[object], list[ConfigFailure | None]]:
    """Records and per-resource outcome; a resource named twice fails both times (its
    changes, ``changes_of`` its wire entry, are not even read). Records past
    MAX_RECORDS_PER_USER_OP fail every resource, as Kafka's bounded record list does."""
    dups = _duplicates([resource for resource, _ in items])
    records: list[object] = []
    outcomes: list[ConfigFailure | None] = []
    for resource, wire in items:
        if resource in dups:
            outcomes.append(ConfigFailure(ErrorCode.INVALID_REQUEST,
                                          "Duplicate resource in request"))
            continue
        changed, failure = _alter(ctx, resource, changes_of(wire), replace_all=replace_all)
        records += changed
        if len(records) > MAX_RECORDS_PER_USER_OP:
            return [], [_TOO_LARGE] * len(items)
        outcomes.append(failure)
    return records + clear_elr_records(ctx.image, records), outcomes


def _code(failure: ConfigFailure | None) -> ErrorCode:
    return ErrorCode.NONE if failure is None else failure.code


def _message(failure: ConfigFailure | None) -> str | None:
    return None if failure is None else failure.message


def _described_message(failure: ConfigFailure | None) -> str:
    """Kafka's ConfigHelper sets no message on a described resource nor on an unknown
    topic (the schema's default: empty), only on a failure it caught."""
    if failure is None or failure.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return ""
    return failure.message


def incremental_alter_configs(ctx: ControllerContext,
                              req: IncrementalAlterConfigsRequest) -> ControllerResult:
    records, outcomes = _alter_all(
        ctx, [((r.resource_type, r.resource_name), r) for r in req.resources],
        lambda r: [(c.name, c.config_operation, c.value) for c in r.configs],
        replace_all=False)
    answers = tuple(
        AlterConfigsResourceResponse(error_code=_code(f), error_message=_message(f),
                                     resource_type=r.resource_type,
                                     resource_name=r.resource_name)
        for r, f in zip(req.resources, outcomes, strict=True)
    )
    return ControllerResult(() if req.validate_only else tuple(records),
                            IncrementalAlterConfigsResponse(responses=answers))


def alter_configs(ctx: ControllerContext, req: AlterConfigsRequest) -> ControllerResult:
    """Legacy AlterConfigs: the given keys become the resource's whole config."""
    records, outcomes = _alter_all(
        ctx, [((r.resource_type, r.resource_name), r) for r in req.resources],
        lambda r: [(c.name, int(AlterOp.SET), c.value) for c in r.configs],
        replace_all=True)
    answers = tuple(
        LegacyResourceResponse(error_code=_code(f), error_message=_message(f),
                               resource_type=r.resource_type, resource_name=r.resource_name)
        for r, f in zip(req.resources, outcomes, strict=True)
    )
    return ControllerResult(() if req.validate_only else tuple(records),
                            AlterConfigsResponse(responses=answers))
