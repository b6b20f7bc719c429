"""``pykraft configs``: Kafka's ``kafka-configs.sh`` over the admin client.

Topic and broker configs are read with DescribeConfigs (synonyms included) and changed with
IncrementalAlterConfigs (deletions first, then SETs), a broker's own resource at that broker
(or, with ``--bootstrap-controller``, that controller) as Kafka's admin routes it; the
cluster-wide broker default anywhere. ``--describe`` lists the dynamic configs only (the
source the entity's own layer has), ``--all`` every config. Client quotas (users, clients,
ips) are :mod:`pykraft.tools.configs_quotas`'. A user's SCRAM credentials go
through AlterUserScramCredentials: the tool draws a random salt and salts the password
itself (PBKDF2, as Kafka's admin client does), so the password never leaves the host; its
credentials are read back with DescribeUserScramCredentials. Output lines, refusals and
``Completed updating ...`` are ConfigCommand's; :func:`as_json` is pykraft's addition.

    async with ConfigsClients(admin_settings(...), controllers=False) as clients:
        reports = await describe(clients, command)       # lines(reports) / as_json(reports)
        message = await alter(clients, command, new_salt=secrets.token_bytes)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pykraft.config.definitions import ConfigSource
from pykraft.controller.config_control import AlterOp
from pykraft.controller.topic_names import topic_name_problem
from pykraft.image.configs import ConfigResourceType
from pykraft.image.scram import MIN_ITERATIONS, ScramMechanism, salted_password
from pykraft.messages.kafka.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from pykraft.messages.kafka.alter_user_scram_credentials_response import (
    AlterUserScramCredentialsResponse,
)
from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.messages.kafka.describe_cluster_response import DescribeClusterResponse
from pykraft.messages.kafka.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from pykraft.messages.kafka.describe_configs_response import DescribeConfigsResponse
from pykraft.messages.kafka.describe_user_scram_credentials_request import (
    DescribeUserScramCredentialsRequest,
    UserName,
)
from pykraft.messages.kafka.describe_user_scram_credentials_response import (
    DescribeUserScramCredentialsResponse,
)
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.messages.kafka.incremental_alter_configs_response import (
    IncrementalAlterConfigsResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import AdminError, AdminSettings, raise_for
from pykraft.tools.broker_clients import BrokerClients, java_exception
from pykraft.tools.configs_args import (
    BROKERS,
    TOPICS,
    USERS,
    ConfigsArgumentError,
    ConfigsCommand,
    Entity,
)
from pykraft.tools.configs_quotas import (
    QUOTA_TYPES,
    QuotaReport,
    alter_quotas,
    describe_quotas,
    quota_keys,
)
from pykraft.tools.scram_args import DEFAULT_ITERATIONS

SALT_BYTES = 32
#: Kafka's ``ConfigEntry.ConfigSource`` names by DescribeConfigs wire value.
SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG",
                5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
                7: "DYNAMIC_CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG"}
_BROKER_ENDPOINTS, _CONTROLLER_ENDPOINTS = 1, 2
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)")
_JAVA_INT = re.compile(r"[+-]?\d{1,10}")


class ConfigsClients(BrokerClients):
    """The bootstrap client plus one per node asked; the nodes are the brokers, or with
    ``--bootstrap-controller`` the controllers, as DescribeCluster lists them."""

    def __init__(self, settings: AdminSettings, *, controllers: bool) -> None:
        super().__init__(settings)
        self.controllers = controllers

    async def node_ids(self) -> list[str]:
        """The live nodes' ids (Kafka's ``describeCluster().nodes()``); learns addresses."""
        answer = await self.bootstrap.request(DescribeClusterRequest(
            endpoint_type=_CONTROLLER_ENDPOINTS if self.controllers else _BROKER_ENDPOINTS))
        assert isinstance(answer, DescribeClusterResponse)
        raise_for(answer.error_code, answer.error_message)
        self._addresses.update({b.broker_id: (b.host, b.port) for b in answer.brokers})
        return [str(b.broker_id) for b in answer.brokers]

    def brokers_only(self, api: str) -> None:
        """Controllers serve neither Metadata nor DescribeUserScramCredentials: say so
        instead of failing on the version negotiation."""
        if self.controllers:
            raise AdminError(f"The controllers do not serve {api}: use --bootstrap-server")

    async def topic_names(self) -> list[str]:
        """Every topic, internal ones included, sorted."""
        self.brokers_only("Metadata (the topic list)")
        return sorted((await self.metadata(None)).topics)

    async def ask(self, entity: Entity, body: Any) -> Any:
        """``body`` sent where Kafka's admin sends a request about ``entity``: a broker's
        own resource to that node, anything else to the bootstrap node."""
        if entity.type == BROKERS and entity.name:
            if int(entity.name) not in self._addresses:
                await self.node_ids()
            return await self.request_to(int(entity.name), body)
        return await self.bootstrap.request(body)


# -- describe ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ConfigLine:
    """One described config (Kafka's ``ConfigEntry``); synonyms as (source, name, value)."""

    name: str
    value: str | None
    source: int
    sensitive: bool
    synonyms: tuple[tuple[int, str, str | None], ...]


@dataclass(frozen=True, slots=True)
class ResourceReport:
    """One topic's or broker's configs; ``name`` "" is the cluster-wide broker default."""

    entity_type: str
    name: str
    describe_all: bool
    configs: tuple[ConfigLine, ...]


@dataclass(frozen=True, slots=True)
class MissingReport:
    """A named topic or broker that is not there."""

    entity: Entity


@dataclass(frozen=True, slots=True)
class UserReport:
    """A user's SCRAM credentials as (mechanism, iterations), or why they could not be read
    (Kafka's exception class and message)."""

    user: str
    credentials: tuple[tuple[str, int], ...]
    error: tuple[str, str] | None = None


Report = ResourceReport | MissingReport | UserReport | QuotaReport


def _dynamic_source(entity_type: str, name: str) -> int:
    if entity_type == TOPICS:
        return ConfigSource.TOPIC_CONFIG
    return ConfigSource.DYNAMIC_BROKER_CONFIG if name else \
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


def _resource_type(entity_type: str, name: str) -> ConfigResourceType:
    if entity_type == TOPICS:
        problem = topic_name_problem(name) if name else None
        if problem is not None:
            raise AdminError(problem)
        return ConfigResourceType.TOPIC
    if name and not _JAVA_INT.fullmatch(name):
        raise ConfigsArgumentError(f"The entity name for {entity_type} must be a valid "
                                   f"integer broker id, found: {name}")
    return ConfigResourceType.BROKER


async def resource_configs(clients: ConfigsClients, entity: Entity, *, synonyms: bool,
                           describe_all: bool) -> tuple[ConfigLine, ...]:
    """Kafka's ``getResourceConfig``: the entity's configs sorted by name, only those of
    its dynamic source unless ``describe_all``."""
    name = entity.name or ""
    answer = await clients.ask(entity, DescribeConfigsRequest(
        resources=(DescribeConfigsResource(
            resource_type=_resource_type(entity.type, name), resource_name=name,
            configuration_keys=None),),
        include_synonyms=synonyms, include_documentation=False))
    assert isinstance(answer, DescribeConfigsResponse)
    result = answer.results[0]
    raise_for(result.error_code, result.error_message)
    wanted = None if describe_all else _dynamic_source(entity.type, name)
    return tuple(sorted((
        ConfigLine(c.name, c.value, c.config_source, c.is_sensitive,
                   tuple((s.source, s.name, s.value) for s in c.synonyms))
        for c in result.configs if wanted is None or c.config_source == wanted),
        key=lambda line: line.name))


async def _describe_resources(clients: ConfigsClients, command: ConfigsCommand
                              ) -> list[Report]:
    entity = command.entity
    if entity.name is not None and not command.describe_all:
        _resource_type(entity.type, entity.name)
        known = (await clients.topic_names() if entity.type == TOPICS
                 else [*await clients.node_ids(), ""])
        if entity.name not in known:
            return [MissingReport(entity)]
    if entity.name is not None:
        names = [entity.name]
    elif entity.type == TOPICS:
        names = await clients.topic_names()
    else:
        names = [*await clients.node_ids(), ""]
    reports: list[Report] = []
    for name in names:
        configs = await resource_configs(clients, Entity(entity.type, name), synonyms=True,
                                         describe_all=command.describe_all)
        reports.append(ResourceReport(entity.type, name, command.describe_all, configs))
    return reports


async def _describe_users(clients: ConfigsClients, entity: Entity) -> list[Report]:
    """SCRAM credentials of the user, or of every user."""
    if entity.name == "":
        return []
    clients.brokers_only("DescribeUserScramCredentials")
    answer = await clients.bootstrap.request(DescribeUserScramCredentialsRequest(
        users=(UserName(name=entity.name),) if entity.name is not None else ()))
    assert isinstance(answer, DescribeUserScramCredentialsResponse)
    raise_for(answer.error_code, answer.error_message)
    reports: list[Report] = []
    for result in answer.results:
        error = None
        if result.error_code != ErrorCode.NONE:
            code = ErrorCode(result.error_code)
            error = (java_exception(code).rsplit(".", 1)[1],
                     result.error_message or code.name)
        reports.append(UserReport(result.user, tuple(
            (ScramMechanism.of(info.mechanism).mechanism_name, info.iterations)
            for info in result.credential_infos), error))
    return reports


async def describe(clients: ConfigsClients, command: ConfigsCommand) -> list[Report]:
    """What ``--describe`` shows for the command's entity: a user's, client's or ip's
    quotas, then a user's SCRAM credentials (not for a client or the default user)."""
    if command.entity.type not in QUOTA_TYPES:
        return await _describe_resources(clients, command)
    clients.brokers_only("DescribeClientQuotas")
    reports: list[Report] = [*await describe_quotas(clients, command.entities)]
    if command.entity.type == USERS and len(command.entities) == 1:
        reports += await _describe_users(clients, command.entity)
    return reports


def _value(value: str | None) -> str:
    return "null" if value is None else value


def lines(reports: Sequence[Report]) -> list[str]:
    """ConfigCommand's output for the reports."""
    out: list[str] = []
    for report in reports:
        if isinstance(report, QuotaReport):
            out.append(report.line())
        elif isinstance(report, MissingReport):
            entity = report.entity
            out.append(f"The {entity.singular} '{entity.name}' doesn't exist and doesn't have "
                       "dynamic config.")
        elif isinstance(report, UserReport):
            if report.error is not None:
                out.append(f"Error retrieving SCRAM credential configs for user-principal "
                           f"'{report.user}': {report.error[0]}: {report.error[1]}")
            else:
                described = ", ".join(f"{mechanism}=iterations={iterations}"
                                      for mechanism, iterations in report.credentials)
                out.append(f"SCRAM credential configs for user-principal '{report.user}' are "
                           f"{described}")
        else:
            out.extend(_resource_lines(report))
    return out


def _resource_lines(report: ResourceReport) -> list[str]:
    if report.name:
        which = "All" if report.describe_all else "Dynamic"
        out = [f"{which} configs for {report.entity_type[:-1]} {report.name} are:"]
    else:
        out = [f"Default configs for {report.entity_type} in the cluster are:"]
    for line in report.configs:
        synonyms = ", ".join(f"{SOURCE_NAMES.get(source, 'UNKNOWN')}:{name}={_value(value)}"
                             for source, name, value in line.synonyms)
        out.append(f"  {line.name}={_value(line.value)} sensitive={str(line.sensitive).lower()}"
                   f" synonyms={{{synonyms}}}")
    return out


def as_json(reports: Sequence[Report]) -> list[dict[str, object]]:
    """The reports for machines: one object per entity."""
    out: list[dict[str, object]] = []
    for report in reports:
        if isinstance(report, QuotaReport):
            out.append({"quotaEntity": dict(report.entity), "quotas": dict(report.values)})
        elif isinstance(report, MissingReport):
            out.append({"entityType": report.entity.type, "entityName": report.entity.name,
                        "exists": False})
        elif isinstance(report, UserReport):
            out.append({"entityType": USERS, "entityName": report.user,
                        "credentials": [{"mechanism": m, "iterations": i}
                                        for m, i in report.credentials],
                        **({"error": {"exception": report.error[0],
                                      "message": report.error[1]}} if report.error else {})})
        else:
            out.append({"entityType": report.entity_type, "entityName": report.name,
                        "configs": [{"name": c.name, "value": c.value,
                                     "source": SOURCE_NAMES.get(c.source, "UNKNOWN"),
                                     "sensitive": c.sensitive,
                                     "synonyms": [{"source": SOURCE_NAMES.get(s, "UNKNOWN"),
                                                   "name": n, "value": v}
                                                  for s, n, v in c.synonyms]}
                                    for c in report.configs]})
    return out


# -- alter ------------------------------------------------------------------------------

async def _alter_resource(clients: ConfigsClients, command: ConfigsCommand) -> None:
    """Kafka's ``alterResourceConfig``: a key to delete must be set on the entity itself."""
    entity = command.entity
    current = {line.name for line in await resource_configs(
        clients, entity, synonyms=False, describe_all=False)}
    invalid = [key for key in command.to_delete if key not in current]
    if invalid:
        raise AdminError(f"Invalid config(s): {','.join(invalid)}")
    name = entity.name or ""
    answer = await clients.ask(entity, IncrementalAlterConfigsRequest(
        resources=(AlterConfigsResource(
            resource_type=_resource_type(entity.type, name), resource_name=name,
            configs=tuple(
                [AlterableConfig(name=key, config_operation=AlterOp.DELETE, value="")
                 for key in command.to_delete]
                + [AlterableConfig(name=key, config_operation=AlterOp.SET, value=value)
                   for key, value in command.to_add.items()])),),
        validate_only=False))
    assert isinstance(answer, IncrementalAlterConfigsResponse)
    for response in answer.responses:
        raise_for(response.error_code, response.error_message)


def parse_credential(mechanism: str, text: str) -> tuple[int, str]:
    """``[iterations=N,]password=P`` as (iterations, password); -1 or none is 4096."""
    match = _CREDENTIAL.fullmatch(text)
    if match is None:
        raise ConfigsArgumentError(f"Invalid credential property {mechanism}={text}")
    iterations_text, password = match.groups()
    if iterations_text is None or iterations_text == "-1":
        iterations = DEFAULT_ITERATIONS
    elif _JAVA_INT.fullmatch(iterations_text) and -(2**31) <= int(iterations_text) < 2**31:
        iterations = int(iterations_text)
    else:
        raise ConfigsArgumentError(f"For input string: \"{iterations_text}\"")
    if iterations < MIN_ITERATIONS:
        raise ConfigsArgumentError(f"Iterations {iterations} is less than the minimum "
                                   f"{MIN_ITERATIONS} required for {mechanism}")
    return iterations, password


async def _alter_user(clients: ConfigsClients, command: ConfigsCommand,
                      new_salt: Callable[[], bytes]) -> None:
    user = command.entity.name or ""
    upsertions = []
    for key, text in command.to_add.items():
        iterations, password = parse_credential(key, text)
        mechanism = ScramMechanism.named(key)
        salt = new_salt()
        upsertions.append(ScramCredentialUpsertion(
            name=user, mechanism=mechanism, iterations=iterations, salt=salt,
            salted_password=salted_password(mechanism, password, salt, iterations)))
    answer = await clients.bootstrap.request(AlterUserScramCredentialsRequest(
        deletions=tuple(ScramCredentialDeletion(name=user, mechanism=ScramMechanism.named(key))
                        for key in command.to_delete),
        upsertions=tuple(upsertions)))
    assert isinstance(answer, AlterUserScramCredentialsResponse)
    for result in answer.results:
        raise_for(result.error_code, result.error_message)


async def alter(clients: ConfigsClients, command: ConfigsCommand, *,
                new_salt: Callable[[], bytes]) -> str:
    """Apply ``--alter``; ConfigCommand's completion message."""
    entity = command.entity
    if entity.type in QUOTA_TYPES:
        if quota_keys(command):
            await alter_quotas(clients, command)
        else:
            await _alter_user(clients, command, new_salt)
    else:
        await _alter_resource(clients, command)
    if entity.name:
        return f"Completed updating config for {entity.singular} {entity.name}."
    return f"Completed updating default config for {entity.type} in the cluster."
