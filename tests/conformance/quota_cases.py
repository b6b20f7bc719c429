"""Conformance rows for client quotas (KIP-546): AlterClientQuotas on both listeners (a broker
forwards it), DescribeClientQuotas on the broker (Kafka's controller has no handler for it).
Every run names entities of its own; each answer names one entity, so Kafka's hash map order
never shows."""

from __future__ import annotations

from typing import Any

from conformance.cases import BOTH, Case, Meaning, code, settled
from conformance.harness import BROKER, Run
from pykraft.messages.kafka.alter_client_quotas_request import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from pykraft.messages.kafka.describe_client_quotas_request import (
    ComponentData,
    DescribeClientQuotasRequest,
)
from pykraft.protocol.apis import ApiKey

EXACT, DEFAULT, SPECIFIED = 0, 1, 2
Entity = tuple[tuple[str, str | None], ...]
Ops = tuple[tuple[str, float | None], ...]


def name_of(run: Run, suffix: str = "") -> str:
    return f"q-{run.api_name}-{run.case}-{run.listener}-v{run.version}{suffix}".lower()


def alter(run: Run, entity: Entity, ops: Ops, *, validate_only: bool = False) -> Any:
    return run.generated(ApiKey.ALTER_CLIENT_QUOTAS, AlterClientQuotasRequest(entries=(
        EntryData(entity=tuple(EntityData(entity_type=k, entity_name=n) for k, n in entity),
                  ops=tuple(OpData(key=key, value=value or 0.0, remove=value is None)
                            for key, value in ops)),), validate_only=validate_only))


def altered(body: Any, _run: Run) -> Meaning:
    return [(code(e.error_code), e.error_message) for e in body.entries]


def describe(run: Run, components: tuple[tuple[str, int, str | None], ...],
             strict: bool = True) -> Any:
    return run.generated(ApiKey.DESCRIBE_CLIENT_QUOTAS, DescribeClientQuotasRequest(
        components=tuple(ComponentData(entity_type=k, match_type=t, match=m)
                         for k, t, m in components), strict=strict))


def described(body: Any, _run: Run) -> Meaning:
    return (code(body.error_code), body.error_message, None if body.entries is None else [
        ([(e.entity_type, e.entity_name) for e in entry.entity],
         sorted((v.key, v.value) for v in entry.values)) for entry in body.entries])


def set_then_describe(entity: Entity, ops: Ops,
                      components: tuple[tuple[str, int, str | None], ...]) -> Any:
    """Set through the broker; described once the broker's image has it."""
    def send(run: Run) -> Any:
        first = alter(run, entity, ops)
        assert altered(first, run) == [("NONE", None)], first
        return settled(lambda: describe(run, components),
                       lambda body: bool(body.entries))
    return send


def user_entity(run: Run) -> Entity:
    return (("user", name_of(run)),)


def describe_user(run: Run) -> Any:
    name = name_of(run)
    return set_then_describe((("user", name),), (("producer_byte_rate", 1024.0),),
                             (("user", EXACT, name),))(run)


def describe_user_client(run: Run) -> Any:
    user, client = name_of(run), name_of(run, "-client")
    return set_then_describe((("user", user), ("client-id", client)),
                             (("consumer_byte_rate", 2048.0), ("request_percentage", 25.5)),
                             (("user", EXACT, user), ("client-id", EXACT, client)))(run)


def describe_ip(run: Run) -> Any:
    ip = f"10.48.{run.version}.{len(run.case)}"
    return set_then_describe((("ip", ip),), (("connection_creation_rate", 7.0),),
                             (("ip", EXACT, ip),))(run)


def describe_default_client_of_user(run: Run) -> Any:
    user = name_of(run)
    return set_then_describe((("user", user), ("client-id", None)),
                             (("producer_byte_rate", 64.0),),
                             (("user", EXACT, user), ("client-id", DEFAULT, None)))(run)


def set_then_remove(run: Run) -> Any:
    entity = user_entity(run)
    first = alter(run, entity, (("producer_byte_rate", 10.0),))
    assert altered(first, run) == [("NONE", None)], first
    return alter(run, entity, (("producer_byte_rate", None),))


def removed_then_described(run: Run) -> Any:
    """Set, removed, then described: the entity is gone once its last key is."""
    set_then_remove(run)
    return settled(lambda: describe(run, (("user", EXACT, name_of(run)),)),
                   lambda body: body.entries == ())


def validate_only_then_described(run: Run) -> Any:
    """Validated on the run's listener, described on the broker (the controller does not
    serve DescribeClientQuotas): nothing was set."""
    entity = user_entity(run)
    checked = alter(run, entity, (("producer_byte_rate", 10.0),), validate_only=True)
    assert altered(checked, run) == [("NONE", None)], checked
    on_broker = Run(run.cluster, run.api_name, run.case, BROKER, run.version)
    return describe(on_broker, (("user", EXACT, name_of(run)),))


def refused(entity: Entity, ops: Ops, message: str) -> tuple[Any, Any, Any]:
    """(send, meaning, expect) of an alteration refused with INVALID_REQUEST."""
    return (lambda r: alter(r, entity, ops), altered,
            lambda _r: [("INVALID_REQUEST", message)])


QUOTAS = [
    Case("AlterClientQuotas", 49, "set_then_remove", set_then_remove, altered,
         lambda _r: [("NONE", None)], listeners=BOTH),
    Case("AlterClientQuotas", 49, "validate_only", validate_only_then_described, described,
         lambda _r: ("NONE", "", []), listeners=BOTH),
    Case("AlterClientQuotas", 49, "invalid_key", *refused(
        (("user", "someone"),), (("bogus_rate", 1.0),), "Invalid configuration key bogus_rate"),
        listeners=BOTH),
    Case("AlterClientQuotas", 49, "ip_key_on_a_user", *refused(
        (("user", "someone"),), (("connection_creation_rate", 1.0),),
        "Invalid configuration key connection_creation_rate"), listeners=BOTH),
    Case("AlterClientQuotas", 49, "invalid_ip", *refused(
        (("ip", "300.1.2.3"),), (("connection_creation_rate", 1.0),),
        "300.1.2.3 is not a valid IP or resolvable host."), listeners=BOTH),
    Case("AlterClientQuotas", 49, "fractional_integer_value", *refused(
        (("user", "someone"),), (("producer_byte_rate", 1.5),),
        "producer_byte_rate cannot be a fractional value."), listeners=BOTH),
    Case("AlterClientQuotas", 49, "not_positive", *refused(
        (("client-id", "c"),), (("request_percentage", -1.0),),
        "Quota request_percentage must be greater than 0"), listeners=BOTH),
    Case("AlterClientQuotas", 49, "unknown_entity_type", *refused(
        (("group", "g"),), (("producer_byte_rate", 1.0),),
        "Unhandled client quota entity type: group"), listeners=BOTH),
    Case("AlterClientQuotas", 49, "empty_name", *refused(
        (("user", ""),), (("producer_byte_rate", 1.0),), "Empty user not supported"),
        listeners=BOTH),
    Case("AlterClientQuotas", 49, "ip_with_user", *refused(
        (("ip", "1.2.3.4"), ("user", "u")), (("producer_byte_rate", 1.0),),
        "Invalid quota entity combination, IP entity shouldnot be combined with User or "
        "ClientId"), listeners=BOTH),
    Case("AlterClientQuotas", 49, "key_twice", *refused(
        (("user", "twice"),), (("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)),
        "Ignoring duplicate entity ClientQuotaEntity(entries={user=twice})"), listeners=BOTH),
    Case("DescribeClientQuotas", 48, "user", describe_user, described,
         lambda r: ("NONE", "", [([("user", name_of(r))], [("producer_byte_rate", 1024.0)])])),
    Case("DescribeClientQuotas", 48, "user_and_client", describe_user_client, described,
         lambda r: ("NONE", "", [([("client-id", name_of(r, "-client")),
                                     ("user", name_of(r))],
                                    [("consumer_byte_rate", 2048.0),
                                     ("request_percentage", 25.5)])])),
    Case("DescribeClientQuotas", 48, "default_client_of_a_user",
         describe_default_client_of_user, described,
         lambda r: ("NONE", "", [([("client-id", None), ("user", name_of(r))],
                                    [("producer_byte_rate", 64.0)])])),
    Case("DescribeClientQuotas", 48, "ip", describe_ip, described,
         lambda r: ("NONE", "", [([("ip", f"10.48.{r.version}.{len(r.case)}")],
                                    [("connection_creation_rate", 7.0)])])),
    Case("DescribeClientQuotas", 48, "removed", removed_then_described, described,
         lambda _r: ("NONE", "", [])),
    Case("DescribeClientQuotas", 48, "strict_unknown_user",
         lambda r: describe(r, (("user", EXACT, name_of(r)),)), described,
         lambda _r: ("NONE", "", [])),
    Case("DescribeClientQuotas", 48, "unknown_entity_type",
         lambda r: describe(r, (("group", EXACT, "g"),)), described,
         lambda _r: ("UNSUPPORTED_VERSION", "Unsupported entity type group", None)),
    Case("DescribeClientQuotas", 48, "entity_type_twice",
         lambda r: describe(r, (("user", EXACT, "a"), ("user", DEFAULT, None))), described,
         lambda _r: ("INVALID_REQUEST",
                     "Entity type user cannot appear more than once in the filter.", None)),
    Case("DescribeClientQuotas", 48, "exact_without_a_name",
         lambda r: describe(r, (("client-id", EXACT, None),)), described,
         lambda _r: ("INVALID_REQUEST",
                     "Request specified MATCH_TYPE_EXACT, but set match string to null.",
                     None)),
    Case("DescribeClientQuotas", 48, "ip_with_user",
         lambda r: describe(r, (("ip", SPECIFIED, None), ("user", SPECIFIED, None))),
         described,
         lambda _r: ("INVALID_REQUEST", "Invalid entity filter component combination. IP "
                     "filter component should not be used with user or clientId filter "
                     "component.", None)),
]
