"""DescribeClientQuotas from a broker's image, as Kafka's ClientQuotasImage.describe matches.

The filter's components name an entity type each (user, client-id or ip; never twice, and
ip not beside the others) and how its name must match: EXACT (a name), DEFAULT (the type's
default entity) or SPECIFIED (any entity of the type, the default included). An entity
matches when it has every component's type with a matching name; ``strict`` also refuses
entities with types no component names. A bad filter fails the whole request:
INVALID_REQUEST, or UNSUPPORTED_VERSION for an unknown entity type. The answer lists the
entities in Kafka's hash map order (as a fresh map of the image's entities holds them).
"""

from __future__ import annotations

from collections.abc import Mapping

from pykraft.image.client_quotas import (
    CLIENT_ID,
    IP,
    USER,
    ClientQuotasImage,
    QuotaEntity,
    entity_hash,
    entity_order,
)
from pykraft.java import java_hash_order, java_string_hash
from pykraft.messages.kafka.describe_client_quotas_request import (
    ComponentData,
    DescribeClientQuotasRequest,
)
from pykraft.messages.kafka.describe_client_quotas_response import (
    DescribeClientQuotasResponse,
    EntityData,
    EntryData,
    ValueData,
)
from pykraft.protocol.errors import ErrorCode

EXACT, DEFAULT, SPECIFIED = 0, 1, 2


class FilterError(Exception):
    """A filter Kafka refuses: its error code and message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _invalid(message: str) -> FilterError:
    return FilterError(ErrorCode.INVALID_REQUEST, message)


def _component(component: ComponentData, exact: dict[str, str | None],
               specified: set[str]) -> None:
    kind, match = component.entity_type, component.match
    if not kind:
        raise _invalid("Invalid empty entity type.")
    if kind in exact or kind in specified:
        raise _invalid(f"Entity type {kind} cannot appear more than once in the filter.")
    if kind not in (IP, USER, CLIENT_ID):
        raise FilterError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
    if component.match_type == EXACT:
        if match is None:
            raise _invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
        exact[kind] = match
    elif component.match_type == DEFAULT:
        if match is not None:
            raise _invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match "
                           "string.")
        exact[kind] = None
    elif component.match_type == SPECIFIED:
        if match is not None:
            raise _invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a "
                           "match string.")
        specified.add(kind)
    else:
        raise _invalid(f"Unknown match type {component.match_type}")


def _matches(entity: QuotaEntity, exact: Mapping[str, str | None], specified: set[str],
             strict: bool) -> bool:
    names = dict(entity)
    if strict and len(names) != len(exact) + len(specified):
        return False
    return (all(kind in names and names[kind] == name for kind, name in exact.items())
            and all(kind in names for kind in specified))


def matching(quotas: ClientQuotasImage,
             request: DescribeClientQuotasRequest) -> list[QuotaEntity]:
    """The entities of ``quotas`` the request's filter matches, in Kafka's order; raises
    :class:`FilterError` for a filter Kafka refuses."""
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for component in request.components:
        _component(component, exact, specified)
    if (IP in exact or IP in specified) and ({USER, CLIENT_ID} & {*exact, *specified}):
        raise _invalid("Invalid entity filter component combination. IP filter component "
                       "should not be used with user or clientId filter component.")
    entities = sorted(quotas.entities, key=entity_order)
    return [entity for entity in java_hash_order(entities, entity_hash,
                                                 initial_capacity=len(entities))
            if _matches(entity, exact, specified, request.strict)]


def describe_client_quotas(quotas: ClientQuotasImage,
                           request: DescribeClientQuotasRequest
                           ) -> DescribeClientQuotasResponse:
    """The response: the matching entities with their quotas, or the filter's error (and
    no entries, as Kafka's getErrorResponse)."""
    try:
        entities = matching(quotas, request)
    except FilterError as exc:
        return DescribeClientQuotasResponse(error_code=exc.code, error_message=str(exc),
                                            entries=None)
    # Kafka's answer keeps the schema's default message, "", not null
    return DescribeClientQuotasResponse(error_code=ErrorCode.NONE, error_message="",
                                        entries=tuple(_entry(entity, quotas.entities[entity])
                                                      for entity in entities))


def _entry(entity: QuotaEntity, values: Mapping[str, float]) -> EntryData:
    keys = java_hash_order(sorted(values), java_string_hash, initial_capacity=len(values))
    return EntryData(entity=tuple(EntityData(entity_type=kind, entity_name=name)
                                  for kind, name in entity),
                     values=tuple(ValueData(key=key, value=values[key]) for key in keys))
