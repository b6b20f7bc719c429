"""``pykraft configs`` for client quotas: users, clients (alone or as a user's client) and ips.

As Kafka 4.4's ConfigCommand: ``--describe`` asks DescribeClientQuotas with a strict filter
of the given entity types (a name, the default entity, or every name of the type) and prints
``Quota configs for user-principal 'alice', client-id 'c1' are producer_byte_rate=1024.0``
per entity; ``--alter`` checks the keys (quota keys only, except a user's SCRAM
credentials), reads the entity's quotas to refuse deleting a key it does not have, then
sends one AlterClientQuotas. Kafka's admin client and tool keep these in hash maps and sets:
entities, keys and refused names come in Java's ``HashMap`` order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pykraft.image.client_quotas import (
    CLIENT_ID,
    IP,
    IP_QUOTAS,
    USER,
    USER_CLIENT_QUOTAS,
    entity_hash,
)
from pykraft.java import java_double_text, java_hash_order, java_string_hash
from pykraft.messages.kafka import alter_client_quotas_request as alter_req
from pykraft.messages.kafka.alter_client_quotas_response import AlterClientQuotasResponse
from pykraft.messages.kafka.describe_client_quotas_request import (
    ComponentData,
    DescribeClientQuotasRequest,
)
from pykraft.messages.kafka.describe_client_quotas_response import (
    DescribeClientQuotasResponse,
)
from pykraft.tools.admin_client import AdminError, raise_for
from pykraft.tools.broker_clients import BrokerClients
from pykraft.tools.configs_args import (
    CLIENTS,
    IPS,
    SCRAM_KEYS,
    USERS,
    ConfigsArgumentError,
    ConfigsCommand,
    Entity,
)

#: The tool's entity types -> the quota entity types.
QUOTA_TYPES = {USERS: USER, CLIENTS: CLIENT_ID, IPS: IP}
_LABELS = ((USER, "user-principal"), (CLIENT_ID, "client-id"), (IP, "ip"))
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class QuotaReport:
    """One entity's quotas, entity and values in the order Kafka's tool prints them."""

    entity: tuple[tuple[str, str | None], ...]
    values: tuple[tuple[str, float], ...]

    def line(self) -> str:
        names = dict(self.entity)
        described = ", ".join(
            (f"the default {label}" if not names[kind] else f"{label} '{names[kind]}'")
            for kind, label in _LABELS if kind in names)
        values = ", ".join(f"{key}={java_double_text(value)}" for key, value in self.values)
        return f"Quota configs for {described} are {values}"


def _component(entity: Entity) -> ComponentData:
    kind = QUOTA_TYPES[entity.type]
    if entity.name is None:
        return ComponentData(entity_type=kind, match_type=SPECIFIED, match=None)
    if entity.name == "":
        return ComponentData(entity_type=kind, match_type=DEFAULT, match=None)
    return ComponentData(entity_type=kind, match_type=EXACT, match=entity.name)


async def describe_quotas(clients: BrokerClients,
                          entities: Sequence[Entity]) -> list[QuotaReport]:
    """Kafka's ``getAllClientQuotasConfigs``: the entities a strict filter of ``entities``
    matches, in the admin client's hash map order."""
    answer = await clients.bootstrap.request(DescribeClientQuotasRequest(
        components=tuple(_component(e) for e in entities), strict=True))
    assert isinstance(answer, DescribeClientQuotasResponse)
    raise_for(answer.error_code, answer.error_message)
    reports = []
    for entry in answer.entries or ():
        names = {e.entity_type: e.entity_name for e in entry.entity}
        kinds = java_hash_order(list(names), java_string_hash, initial_capacity=len(names))
        values = {v.key: v.value for v in entry.values}
        keys = java_hash_order(list(values), java_string_hash, initial_capacity=len(values))
        reports.append(QuotaReport(tuple((k, names[k]) for k in kinds),
                                   tuple((k, values[k]) for k in keys)))
    return java_hash_order(reports, lambda r: entity_hash(r.entity),
                           initial_capacity=len(reports))


def _joined(names: Sequence[str], separator: str = ",") -> str:
    """A Java ``HashSet`` of ``names`` joined, as Kafka's refusals list them."""
    return separator.join(java_hash_order(list(dict.fromkeys(names)), java_string_hash))


def quota_keys(command: ConfigsCommand) -> bool:
    """ConfigCommand's checks of the keys to alter for users, clients and ips; True when
    they are quotas (False: a user's SCRAM credentials)."""
    added, deleted = list(command.to_add), list(command.to_delete)
    types = [e.type for e in command.entities]
    if types[0] == IPS:
        unknown = [k for k in added + deleted if k not in IP_QUOTAS]
        if unknown:
            raise ConfigsArgumentError(
                f"Only connection quota configs can be added for '{IPS}' using "
                f"--bootstrap-server. Unexpected config names: {_joined(unknown, ', ')}")
        return True
    scram_added = [k for k in added if k in SCRAM_KEYS]
    scram_deleted = [k for k in deleted if k in SCRAM_KEYS]
    unknown_added = [k for k in added if k not in SCRAM_KEYS and k not in USER_CLIENT_QUOTAS]
    unknown_deleted = [k for k in deleted
                       if k not in SCRAM_KEYS and k not in USER_CLIENT_QUOTAS]
    quotas = any(k in USER_CLIENT_QUOTAS for k in added + deleted)
    if types[0] == CLIENTS or len(types) == 2:
        for verb, refused in (("added", unknown_added + scram_added),
                              ("deleted", unknown_deleted + scram_deleted)):
            if refused:
                raise ConfigsArgumentError(
                    f"Only quota configs can be {verb} for '{CLIENTS}' using "
                    f"--bootstrap-server. Unexpected config names: {_joined(refused)}")
        return True
    for verb, refused in (("added", unknown_added), ("deleted", unknown_deleted)):
        if refused:
            raise ConfigsArgumentError(
                f"Only quota and SCRAM credential configs can be {verb} for '{USERS}' using "
                f"--bootstrap-server. Unexpected config names: {_joined(refused)}")
    if scram_added or scram_deleted:
        if any(e.name == "" for e in command.entities):
            raise ConfigsArgumentError("The use of --entity-default or --user-defaults is not "
                                       "allowed with User SCRAM Credentials using "
                                       "--bootstrap-server.")
        if quotas:
            raise ConfigsArgumentError(f"Cannot alter both quota and SCRAM credential configs "
                                       f"simultaneously for '{USERS}' using "
                                       "--bootstrap-server.")
    return quotas


def _value(key: str, text: str) -> float:
    """Java's ``Double.parseDouble``, with ConfigCommand's refusal."""
    try:
        return float(text.strip())
    except ValueError:
        raise ConfigsArgumentError(
            f"Cannot parse quota configuration value for {key}: {text}") from None


async def alter_quotas(clients: BrokerClients, command: ConfigsCommand) -> None:
    """Kafka's ``alterQuotaConfigs``: a key to delete must be set on the entity."""
    if any(e.name is None for e in command.entities):
        raise ConfigsArgumentError("Exactly one entity name must be specified for every "
                                   "entity type")
    current = await describe_quotas(clients, command.entities)
    have = {key for key, _ in current[0].values} if current else set()
    invalid = [key for key in command.to_delete if key not in have]
    if invalid:
        raise AdminError(f"Invalid config(s): {','.join(invalid)}")
    added = {key: _value(key, text) for key, text in command.to_add.items()}
    ops = [alter_req.OpData(key=key, value=added[key], remove=False)
           for key in java_hash_order(list(added), java_string_hash)]
    ops += [alter_req.OpData(key=key, value=0.0, remove=True) for key in command.to_delete]
    answer = await clients.bootstrap.request(alter_req.AlterClientQuotasRequest(entries=(
        alter_req.EntryData(entity=tuple(
            alter_req.EntityData(entity_type=QUOTA_TYPES[e.type], entity_name=e.name or None)
            for e in command.entities), ops=tuple(ops)),), validate_only=False))
    assert isinstance(answer, AlterClientQuotasResponse)
    for entry in answer.entries:
        raise_for(entry.error_code, entry.error_message)
