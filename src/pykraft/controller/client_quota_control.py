"""AlterClientQuotas (KIP-546), as Kafka's ClientQuotaControlManager decides it.

Each alteration names an entity (a map of entity type to name, a null name being the type's
default entity: the request's list is folded into a map, so a type named twice keeps its
last name) and its ops (a key with a value to set, or to remove). An entity must hold user
and/or client-id, or ip alone; an ip must parse or resolve; each key must be one its entity
type accepts, each value finite, positive and, for an integer key, whole. A refused entity
writes nothing; the others write one ClientQuotaRecord per changed key, all in one batch
(none with ``validate_only``). Kafka walks its hash maps, so where two problems compete the
first in Java's ``HashMap`` order wins, and the answers come in that order too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pykraft.controller.context import (
    MAX_RECORDS_PER_USER_OP,
    ControllerContext,
    ControllerResult,
)
from pykraft.controller.responses import error_response
from pykraft.image.client_quotas import (
    CLIENT_ID,
    IP,
    IP_QUOTAS,
    USER,
    USER_CLIENT_QUOTAS,
    QuotaEntity,
    QuotaType,
    entity_hash,
)
from pykraft.java import java_hash_order, java_string_hash
from pykraft.messages.kafka import alter_client_quotas_request as req
from pykraft.messages.kafka import alter_client_quotas_response as resp
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ClientQuotaRecord, EntityData

Failure = tuple[ErrorCode, str]
#: Kafka's answer when the records would pass MAX_RECORDS_PER_USER_OP: the request's
#: ``getErrorResponse``, which carries the error's default message.
TOO_MANY_RECORDS = "Request parameters do not satisfy the configured policy."
_LIMITS = {QuotaType.INT: 2**31 - 1, QuotaType.LONG: float(2**63 - 1)}
#: Kafka's validated entity map is ``new HashMap<>(3)``.
_VALIDATED_CAPACITY = 3


@dataclass(frozen=True, slots=True)
class JavaEntity:
    """A ``ClientQuotaEntity``: its entries in the iteration order of Kafka's map."""

    entries: tuple[tuple[str, str | None], ...]

    @property
    def key(self) -> QuotaEntity:
        return tuple(sorted(self.entries))

    def __str__(self) -> str:
        inner = ", ".join(f"{kind}={name}" for kind, name in self.entries)
        return f"ClientQuotaEntity(entries={{{inner}}})"


def java_entity(entity: Iterable[req.EntityData]) -> JavaEntity:
    """``AlterClientQuotasRequest.entries``' map of a request entity: sized to the list, a
    repeated type keeping its first place and its last name."""
    data = list(entity)
    names: dict[str, str | None] = {}
    for item in data:
        names[item.entity_type] = item.entity_name
    order = java_hash_order(list(names), java_string_hash, initial_capacity=len(data))
    return JavaEntity(tuple((kind, names[kind]) for kind in order))


def _entity_failure(entity: JavaEntity, resolves: Callable[[str], bool]) -> Failure | None:
    """``validateEntity`` then ``configKeysForEntityType``: the entity's types and names."""
    if not entity.entries:
        return ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity"
    for kind, name in entity.entries:
        if kind not in (USER, CLIENT_ID, IP):
            return ErrorCode.INVALID_REQUEST, f"Unhandled client quota entity type: {kind}"
        if name == "":
            return ErrorCode.INVALID_REQUEST, f"Empty {kind} not supported"
    names = dict(entity.entries)
    if IP in names and len(names) > 1:
        return (ErrorCode.INVALID_REQUEST, "Invalid quota entity combination, IP entity "
                "shouldnot be combined with User or ClientId")
    ip = names.get(IP)
    if ip is not None and not resolves(ip):
        return ErrorCode.INVALID_REQUEST, f"{ip} is not a valid IP or resolvable host."
    return None


def value_failure(keys: Mapping[str, QuotaType], key: str, value: float) -> Failure | None:
    """``validateQuotaKeyValue``: a key the entity accepts, with a value its type allows."""
    kind = keys.get(key)
    if kind is None:
        return ErrorCode.INVALID_REQUEST, f"Invalid configuration key {key}"
    if not math.isfinite(value):
        return ErrorCode.INVALID_REQUEST, f"Quota {key} must be a finite number"
    if value <= 0.0:
        return ErrorCode.INVALID_REQUEST, f"Quota {key} must be greater than 0"
    if kind is QuotaType.DOUBLE:
        return None
    if value > _LIMITS[kind]:
        return (ErrorCode.INVALID_REQUEST,
                f"Proposed value for {key} is too large for {kind.value}.")
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return ErrorCode.INVALID_REQUEST, f"{key} cannot be a fractional value."
    return None


def _records(entity: JavaEntity, ops: Mapping[str, float | None],
             current: Mapping[str, float]) -> list[ClientQuotaRecord] | Failure:
    """The entity's records (a removal only of a key it has, a value only when it
    changes), or the first op's failure."""
    keys = IP_QUOTAS if IP in dict(entity.entries) else USER_CLIENT_QUOTAS
    names = dict(entity.entries)
    order = java_hash_order(list(names), java_string_hash,
                            initial_capacity=_VALIDATED_CAPACITY)
    data = tuple(EntityData(entity_type=kind, entity_name=names[kind]) for kind in order)
    records = []
    for key, value in ops.items():
        if value is None:
            if key in current:
                records.append(ClientQuotaRecord(entity=data, key=key, value=0.0,
                                                 remove=True))
            continue
        failure = value_failure(keys, key, value)
        if failure is not None:
            return failure
        if current.get(key) != value:
            records.append(ClientQuotaRecord(entity=data, key=key, value=value, remove=False))
    return records


def _ops(alteration: req.EntryData) -> tuple[dict[str, float | None], str | None]:
    """The ops as Kafka's map of them (sized to the list), and the first key named twice."""
    ops: dict[str, float | None] = {}
    twice = None
    for op in alteration.ops:
        if op.key in ops:
            twice = twice or op.key
        else:
            ops[op.key] = None if op.remove else op.value
    order = java_hash_order(list(ops), java_string_hash, initial_capacity=len(alteration.ops))
    return {key: ops[key] for key in order}, twice


def alter_client_quotas(ctx: ControllerContext,
                        request: req.AlterClientQuotasRequest) -> ControllerResult:
    """The records and answer of ``request``. An ip that is no literal is valid when
    ``ctx.ip_resolves`` says it resolves: Kafka's controller looks it up, and this
    module does no I/O."""
    quotas = ctx.image.client_quotas.entities
    results: dict[QuotaEntity, tuple[JavaEntity, Failure | None]] = {}
    records: list[ClientQuotaRecord] = []
    for alteration in request.entries:
        entity = java_entity(alteration.entity)
        ops, twice = _ops(alteration)
        if twice is not None or entity.key in results:
            # Kafka notes the repeated key, then finds the entity answered: it says so
            results[entity.key] = (entity, (ErrorCode.INVALID_REQUEST,
                                            f"Ignoring duplicate entity {entity}"))
            continue
        failure = _entity_failure(entity, ctx.ip_resolves)
        made = _records(entity, ops, quotas.get(entity.key, {})) if failure is None else []
        if isinstance(made, tuple):
            failure, made = made, []
        records += made
        results[entity.key] = (entity, failure)
    if len(records) > MAX_RECORDS_PER_USER_OP:
        return ControllerResult((), error_response(request, ErrorCode.POLICY_VIOLATION,
                                                   TOO_MANY_RECORDS))
    entries = java_hash_order([entity for entity, _ in results.values()],
                              lambda entity: entity_hash(entity.entries))
    return ControllerResult(() if request.validate_only else tuple(records),
                            resp.AlterClientQuotasResponse(entries=tuple(
                                _answer(entity, results[entity.key][1])
                                for entity in entries)))


def _answer(entity: JavaEntity, failure: Failure | None) -> resp.EntryData:
    code, message = failure if failure is not None else (ErrorCode.NONE, None)
    return resp.EntryData(error_code=code, error_message=message, entity=tuple(
        resp.EntityData(entity_type=kind, entity_name=name) for kind, name in entity.entries))

