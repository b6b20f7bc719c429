"""A KRaft -> ZooKeeper write of the migration as a value (migration-plan §7): one of Kafka's
operations (``KRaftMigrationZkWriter``'s types, the ``Zk*MigrationClient`` write it runs), and
the running of it.

A :class:`ZkWrite` holds its requests, each run as its own fenced multi
(:mod:`pykraft.migration.fencing`), and how their results decide (:meth:`ZkWrite.verdict`):
written (the ``/migration`` zkVersion moves on, then the unfenced change notification),
unchanged (Kafka's "already done" results: the topic znode exists, the config to delete is
gone), failed (:class:`MigrationClientError`, retried by the driver), or **create instead**:
Kafka's set-then-create — a set answered NONODE is followed by :attr:`ZkWrite.create_instead`,
a write whose :attr:`ZkWrite.parents` are created first (unfenced, recursively) and whose
requests create the znode. :func:`apply_write` runs that on a :class:`ZkClient`; a runtime
with its own scheduling can do the same from :meth:`ZkWrite.verdict`.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pykraft.errors import PyKraftError
from pykraft.migration.fencing import (
    MigrationClientError,
    ZkMigrationLeadershipState,
    create_recursive_with,
    fenced_with,
)
from pykraft.migration.zk_ops import CreateOp, ZkClient, ZkError, ZkOp

# Kafka's operation types: the names in the driver's "Made the following ZK writes" counts.
CREATE_TOPIC = "CreateTopic"
UPDATE_TOPIC = "UpdateTopic"
DELETE_TOPIC = "DeleteTopic"
DELETE_PENDING_TOPIC_DELETION = "DeletePendingTopicDeletion"
UPDATE_PARTITION = "UpdatePartition"
DELETE_PARTITION = "DeletePartition"
UPDATE_CONFIG = "UpdateConfig"
DELETE_CONFIG = "DeleteConfig"
UPDATE_BROKER_CONFIG = "UpdateBrokerConfig"
DELETE_BROKER_CONFIG = "DeleteBrokerConfig"
UPDATE_TOPIC_CONFIG = "UpdateTopicConfig"
DELETE_TOPIC_CONFIG = "DeleteTopicConfig"
UPDATE_CLIENT_QUOTA = "UpdateClientQuota"
UPDATE_PRODUCER_ID = "UpdateProducerId"
UPDATE_ACL = "UpdateAcl"
DELETE_ACL = "DeleteAcl"
UPDATE_DELEGATION_TOKEN = "UpdateDelegationToken"
DELETE_DELEGATION_TOKEN = "DeleteDelegationToken"

OK = frozenset({ZkError.OK})
ANY_RESULT = frozenset(ZkError)


class ZkWriteError(PyKraftError, ValueError):
    """Metadata the writer cannot put in ZooKeeper as Kafka would (a password config without
    ``password.encoder.secret``, a quota key ZooKeeper does not know, a topic without id)."""


class Verdict(enum.Enum):
    """What a write's results mean (:meth:`ZkWrite.verdict`)."""

    WRITTEN = "written"
    UNCHANGED = "unchanged"
    CREATE_INSTEAD = "create instead"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Notification:
    """An unfenced sequential change node written once a write succeeded. Config changes
    make sure ``/config/changes`` exists and fail on an error; ACL changes do neither."""

    op: CreateOp
    ensure_parent: bool


@dataclass(frozen=True, slots=True)
class ZkWrite:
    """One of Kafka's migration operations (see the module's docstring)."""

    kind: str
    description: str
    requests: tuple[ZkOp, ...]
    ok: frozenset[ZkError] = OK
    """The results (of every request, or of the last with ``last_decides``) that count as
    written."""
    already_done: frozenset[ZkError] = frozenset()
    """The first request's results meaning there is nothing to write (state unchanged)."""
    last_decides: bool = False
    create_instead: ZkWrite | None = None
    """Run instead when the first request answered NONODE."""
    parents: tuple[str, ...] = ()
    notification: Notification | None = None

    def verdict(self, results: Sequence[ZkError]) -> Verdict:
        """How the requests' results decide, in Kafka's order of checks."""
        if results and self.create_instead is not None and results[0] is ZkError.NO_NODE:
            return Verdict.CREATE_INSTEAD
        if results and results[0] in self.already_done:
            return Verdict.UNCHANGED
        judged = results[-1:] if self.last_decides else results
        return Verdict.WRITTEN if all(r in self.ok for r in judged) else Verdict.FAILED


# --- running writes -------------------------------------------------------------------------

def apply_write(client: ZkClient, state: ZkMigrationLeadershipState,
                write: ZkWrite) -> ZkMigrationLeadershipState:
    """Run ``write`` fenced by ``state``; the state with the new ``/migration`` zkVersion."""
    for parent in write.parents:
        create_recursive_with(client, parent)
    results, version = fenced_with(client, write.requests, state)
    verdict = write.verdict([r.error for r in results])
    if verdict is Verdict.CREATE_INSTEAD:
        assert write.create_instead is not None
        return apply_write(client, state, write.create_instead)
    if verdict is Verdict.UNCHANGED:
        return state
    if verdict is Verdict.FAILED:
        codes = {op.path: r.error.value for op, r in zip(write.requests, results, strict=True)}
        raise MigrationClientError(f"{write.description} failed. ZK operations had results "
                                   f"{codes}")
    if write.notification is not None:
        _notify(client, write.notification)
    return state.with_migration_zk_version(version)


def apply_writes(client: ZkClient, state: ZkMigrationLeadershipState,
                 writes: Iterable[ZkWrite]) -> ZkMigrationLeadershipState:
    for write in writes:
        state = apply_write(client, state, write)
    return state


def _notify(client: ZkClient, notification: Notification) -> None:
    if notification.ensure_parent:
        create_recursive_with(client, notification.op.path.rpartition("/")[0])
    result = client.multi([notification.op])[0]
    if notification.ensure_parent and not result.ok:
        raise MigrationClientError(f"could not create the change notification "
                                   f"{notification.op.path}: {result.error.value}")


def write_counts(writes: Iterable[ZkWrite]) -> dict[str, int]:
    """Operations per kind, by name (the driver's ``TreeMap``)."""
    return dict(sorted(Counter(write.kind for write in writes).items()))


def counts_text(counts: Mapping[str, int]) -> str:
    """Java's ``Map.toString`` of the counts: "Made the following ZK writes when handling
    KRaft delta: {UpdatePartition=2}"."""
    return "{" + ", ".join(f"{kind}={count}" for kind, count in counts.items()) + "}"




def config_path(entity_type: str, name: str) -> str:
    """``/config/<type>/<name>`` (``ConfigEntityZNode.path``)."""
    return f"/config/{entity_type}/{name}"
