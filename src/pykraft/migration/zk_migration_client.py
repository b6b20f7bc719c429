"""The driver's ZooKeeper (Kafka's ``ZkMigrationClient``): reads, the claim, ``/migration``
and the KRaft -> ZooKeeper writes, each fenced, over a blocking :class:`ZkClient`.

It joins the pieces that decide what to do — :mod:`.zk_reads` (what is read),
:mod:`.fencing` (the claim, the fenced multis, ``/migration``), :mod:`.zk_writer` (the
writes of a sync or a delta) and :mod:`.zk_write` (running them) — behind the driver's
:class:`~pykraft.migration.driver.MigrationZk` port. Partition states are written with
the KRaft leader epoch the driver claimed under (Kafka's ``state.kraftControllerEpoch()``).
"""

from __future__ import annotations

from collections.abc import Callable

from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.migration import zk_writer
from pykraft.migration.fencing import (
    ZkMigrationLeadershipState,
    claim_with,
    get_or_create_migration_with,
    set_migration_with,
)
from pykraft.migration.zk_config_writes import Passwords
from pykraft.migration.zk_ops import ZkClient
from pykraft.migration.zk_reads import read_tree
from pykraft.migration.zk_tree import ZkTree
from pykraft.migration.zk_write import ZkWrite, apply_write

BROKER_IDS_PATH = "/brokers/ids"


class ZkMigrationClient:
    """Implements :class:`~pykraft.migration.driver.MigrationZk`. ``clock``: wall-clock
    milliseconds for the ``timestamp`` of the ``/controller`` it claims."""

    def __init__(self, client: ZkClient, *, clock: Callable[[], int],
                 passwords: Passwords | None = None) -> None:
        self._client = client
        self._clock = clock
        self._passwords = passwords

    def get_or_create_migration_state(
            self, initial: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        return get_or_create_migration_with(self._client, initial)

    def set_migration_state(self, state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        return set_migration_with(self._client, state)

    def claim_controller_leadership(
            self, state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        return claim_with(self._client, state, self._clock())

    def read_broker_ids(self) -> set[int]:
        """The registered ZooKeeper brokers (``/brokers/ids`` children; Kafka skips none:
        each child is a broker id)."""
        return {int(child) for child in self._client.children(BROKER_IDS_PATH) or ()
                if child.isdigit()}

    def read_tree(self) -> ZkTree:
        return read_tree(self._client)

    def sync_writes(self, image: MetadataImage,
                    state: ZkMigrationLeadershipState) -> list[ZkWrite]:
        return zk_writer.sync(image, self.read_tree(), state.kraft_controller_epoch,
                              self._passwords)

    def delta_writes(self, previous: MetadataImage, image: MetadataImage,
                     delta: MetadataDelta, state: ZkMigrationLeadershipState) -> list[ZkWrite]:
        return zk_writer.dual_write(previous, image, delta, state.kraft_controller_epoch,
                                    self._passwords)

    def apply(self, write: ZkWrite,
              state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        return apply_write(self._client, state, write)
