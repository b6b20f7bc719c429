"""Conformance rows for the controller mutation quota (KIP-599, ``controller_mutation_rate``):
CreateTopics, CreatePartitions and DeleteTopics from a client allowed 1 partition a second,
on both listeners (the broker forwards them; the controller's own listener applies the
quota of the client that sent it), strict from CreateTopics v6, CreatePartitions v3 and
DeleteTopics v5 (THROTTLING_QUOTA_EXCEEDED), permissive before (through, then throttled).

Each run sets the quota on the PLAINTEXT user (``ANONYMOUS``) with a client id of its own,
so the run's token bucket is its own and no other row's client is throttled, and waits
until the controller applies it (:func:`limited_client`). With
Kafka's default ``controller.quota.window.num`` of 11 one-second windows the bucket holds
11 tokens: a first mutation of 20 partitions goes through and leaves the bucket 9 below
zero, 9 s of throttle; the second mutations take it to a multiple of 3 s too. Throttle times
are compared in steps of 3 s, rounded up (:func:`in_steps`): each side reads them when its
answer goes out, a little after the charge, and one read up to 3 s late is still in its
step. A refused topic carries no message: Kafka's ``ApiError.fromThrowable`` drops an
exception's message that is its error's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.cases import (
    BOTH,
    Case,
    Meaning,
    code,
    create_partitions,
    create_topics,
    delete_topics,
    settled,
)
from conformance.harness import BROKER, Run
from conformance.quota_cases import alter, altered
from pykraft.protocol.apis import ApiKey

USER = "ANONYMOUS"
BIG = 20
THROTTLED = "THROTTLING_QUOTA_EXCEEDED"


def limited_client(run: Run) -> str:
    """A client id of the run's own, allowed 1 partition a second once the controller
    applies it.

    Kafka's controller applies quotas when its metadata publisher runs, which on a loaded
    machine can come after the broker's image (what DescribeClientQuotas reads) has them:
    a second entity (a probe client) is limited after the run's, and the run starts once the
    controller throttles the probe's validate-only CreateTopics (charged, creates nothing),
    so the run's own quota, committed first, is applied too."""
    client = f"mq-{run.api_name}-{run.case}-{run.listener}-v{run.version}".lower()
    probe = f"{client}-probe"
    setup = Run(run.cluster, "setup", run.case, BROKER, 1)
    for limited in (client, probe):
        entity = (("user", USER), ("client-id", limited))
        done = alter(setup, entity, (("controller_mutation_rate", 1.0),))
        assert altered(done, setup) == [("NONE", None)], done
    probing = Run(run.cluster, "setup", run.case, BROKER, 5)  # permissive: throttled, through
    settled(lambda: create_topics(probing, f"{run.fresh_topic}-probe", BIG, 1,
                                  validate_only=True, client_id=probe),
            lambda body: body.throttle_time_ms > 0)
    return client


STEP_MS = 3000


def in_steps(body: Any) -> Any:
    """``body`` with its throttle time in steps of 3 s, rounded up (see the module
    docstring)."""
    if hasattr(body, "throttle_time_ms"):
        body.throttle_time_ms = -(-body.throttle_time_ms // STEP_MS)
    return body


def twice(first: Callable[[Run, str], Any], second: Callable[[Run, str], Any],
          prepare: Callable[[Run], None] = lambda _r: None) -> Callable[[Run], Any]:
    """The run's two answers, as its limited client: ``first`` then ``second``."""
    def send(run: Run) -> list[Any]:
        prepare(run)
        client = limited_client(run)
        return [in_steps(first(run, client)), in_steps(second(run, client))]
    return send


def outcomes(parts: str) -> Callable[[Any, Run], Meaning]:
    """Each answer's one topic: its error and message, and the answer's throttle steps."""
    def meaning(bodies: list[Any], _run: Run) -> Meaning:
        return [[(code(p.error_code), getattr(p, "error_message", None),
                  getattr(body, "throttle_time_ms", 0)) for p in getattr(body, parts)]
                for body in bodies]
    return meaning


def expect(first: tuple[str, int], second: tuple[str, int], *,
           throttle_since: int) -> Callable[[Run], Meaning]:
    """(error, throttle in 3 s steps) of the two answers; no throttle field before
    ``throttle_since``."""
    def expected(run: Run) -> Meaning:
        return [[(error, None, steps if run.version >= throttle_since else 0)]
                for error, steps in (first, second)]
    return expected


def topic(run: Run, suffix: str) -> str:
    return f"{run.fresh_topic}-{suffix}"


def create(suffix: str, partitions: int, *, validate_only: bool = False
           ) -> Callable[[Run, str], Any]:
    return lambda run, client: create_topics(run, topic(run, suffix), partitions, 1,
                                             validate_only=validate_only, client_id=client)


def grow_to(count: int) -> Callable[[Run, str], Any]:
    return lambda run, client: create_partitions(run, topic(run, "grown"), count,
                                                 validate_only=False, client_id=client)


def delete(suffix: str) -> Callable[[Run, str], Any]:
    return lambda run, client: delete_topics(run, topic(run, suffix), client_id=client)


def unlimited(*topics: tuple[str, int]) -> Callable[[Run], None]:
    """Topics made first by the suite's own client (no quota: not charged to the run's)."""
    def prepare(run: Run) -> None:
        setup = Run(run.cluster, "setup", run.case, BROKER, 7)
        for suffix, partitions in topics:
            made = create_topics(setup, topic(run, suffix), partitions, 1)
            assert [code(t.error_code) for t in made.topics] == ["NONE"], made
    return prepare


THROUGH, REFUSED = ("NONE", 0), (THROTTLED, 3)  # refused: 9 below zero, 9 s
#: permissive: 9 below zero (9 s), then 3 more (12 s) or 21 more (30 s)
NINE, TWELVE, THIRTY = ("NONE", 3), ("NONE", 4), ("NONE", 10)

MUTATION_QUOTAS = [
    Case("CreateTopics", ApiKey.CREATE_TOPICS, "mutation_quota_strict",
         twice(create("big", BIG), create("small", 1)), outcomes("topics"),
         expect(THROUGH, REFUSED, throttle_since=2), listeners=BOTH, since=6),
    Case("CreateTopics", ApiKey.CREATE_TOPICS, "mutation_quota_validate_only_charged",
         twice(create("checked", BIG, validate_only=True), create("small", 1)),
         outcomes("topics"), expect(THROUGH, REFUSED, throttle_since=2), listeners=BOTH,
         since=6),
    Case("CreateTopics", ApiKey.CREATE_TOPICS, "mutation_quota_permissive",
         twice(create("big", BIG), create("more", 3)), outcomes("topics"),
         expect(NINE, TWELVE, throttle_since=2), listeners=BOTH, until=6),
    Case("CreatePartitions", ApiKey.CREATE_PARTITIONS, "mutation_quota_strict",
         twice(grow_to(1 + BIG), grow_to(2 + BIG), unlimited(("grown", 1))),
         outcomes("results"), expect(THROUGH, REFUSED, throttle_since=0), listeners=BOTH,
         since=3),
    Case("CreatePartitions", ApiKey.CREATE_PARTITIONS, "mutation_quota_permissive",
         twice(grow_to(1 + BIG), grow_to(4 + BIG), unlimited(("grown", 1))),
         outcomes("results"), expect(NINE, TWELVE, throttle_since=0), listeners=BOTH,
         until=3),
    Case("DeleteTopics", ApiKey.DELETE_TOPICS, "mutation_quota_strict",
         twice(delete("first"), delete("second"), unlimited(("first", BIG), ("second", 1))),
         outcomes("responses"), expect(THROUGH, REFUSED, throttle_since=1), listeners=BOTH,
         since=5),
    Case("DeleteTopics", ApiKey.DELETE_TOPICS, "mutation_quota_permissive",
         twice(delete("first"), delete("second"),
               unlimited(("first", BIG), ("second", BIG + 1))),
         outcomes("responses"), expect(NINE, THIRTY, throttle_since=1), listeners=BOTH,
         until=5),
]
