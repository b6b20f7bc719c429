"""Broker and controller registrations, as the log describes them.

A broker's registration is created by RegisterBrokerRecord and changed by fencing records
(FenceBrokerRecord/UnfenceBrokerRecord before metadata.version 3.3-IV2,
BrokerRegistrationChangeRecord after); UnregisterBrokerRecord removes it. A controller's
is created by RegisterControllerRecord and removed by UnregisterControllerRecord.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pykraft.errors import MetadataImageError
from pykraft.image.versions import MV_3_7_IV0, record_version
from pykraft.records.metadata import (
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ControllerEndpoint,
    ControllerFeature,
    FenceBrokerRecord,
    RegisterBrokerRecord,
    RegisterControllerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UnregisterControllerRecord,
)

FENCE = 1
UNFENCE = -1
IN_CONTROLLED_SHUTDOWN = 1
"""BrokerRegistrationChangeRecord values (Kafka's BrokerRegistrationFencingChange and
BrokerRegistrationInControlledShutdownChange; 0 means "no change")."""


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: tuple[BrokerEndpoint, ...]
    features: tuple[BrokerFeature, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool = False
    log_dirs: tuple[uuid.UUID, ...] = ()
    cordoned_log_dirs: tuple[uuid.UUID, ...] | None = None

    @classmethod
    def from_record(cls, record: RegisterBrokerRecord) -> BrokerRegistration:
        return cls(record.broker_id, record.broker_epoch, record.incarnation_id,
                   record.end_points, record.features, record.rack, record.fenced,
                   record.in_controlled_shutdown, record.is_migrating_zk_broker,
                   record.log_dirs, record.cordoned_log_dirs)

    def to_record(self) -> RegisterBrokerRecord:
        return RegisterBrokerRecord(
            broker_id=self.broker_id, is_migrating_zk_broker=self.is_migrating_zk_broker,
            incarnation_id=self.incarnation_id, broker_epoch=self.epoch,
            end_points=self.listeners, features=self.features, rack=self.rack,
            fenced=self.fenced, in_controlled_shutdown=self.in_controlled_shutdown,
            log_dirs=self.log_dirs, cordoned_log_dirs=self.cordoned_log_dirs,
        )

    def supported_range(self, feature: str) -> tuple[int, int] | None:
        """(min, max) levels the broker declared for ``feature``, or None if it did not."""
        for entry in self.features:
            if entry.name == feature:
                return entry.min_supported_version, entry.max_supported_version
        return None


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    controller_id: int
    incarnation_id: uuid.UUID
    zk_migration_ready: bool
    listeners: tuple[ControllerEndpoint, ...]
    features: tuple[ControllerFeature, ...]

    @classmethod
    def from_record(cls, record: RegisterControllerRecord) -> ControllerRegistration:
        return cls(record.controller_id, record.incarnation_id, record.zk_migration_ready,
                   record.end_points, record.features)

    def to_record(self) -> RegisterControllerRecord:
        return RegisterControllerRecord(
            controller_id=self.controller_id, incarnation_id=self.incarnation_id,
            zk_migration_ready=self.zk_migration_ready, end_points=self.listeners,
            features=self.features,
        )


@dataclass(frozen=True, slots=True)
class ClusterImage:
    brokers: Mapping[int, BrokerRegistration] = dataclasses.field(default_factory=dict)
    controllers: Mapping[int, ControllerRegistration] = dataclasses.field(default_factory=dict)

    def records(self, metadata_version: int) -> Iterator[tuple[object, int]]:
        """Brokers then controllers, by id, at the versions ``metadata_version`` allows."""
        version = record_version(RegisterBrokerRecord, metadata_version)
        for broker_id in sorted(self.brokers):
            yield self.brokers[broker_id].to_record(), version
        if metadata_version >= MV_3_7_IV0:
            for controller_id in sorted(self.controllers):
                yield self.controllers[controller_id].to_record(), 0


ClusterRecord = (
    RegisterBrokerRecord | UnregisterBrokerRecord | FenceBrokerRecord | UnfenceBrokerRecord
    | BrokerRegistrationChangeRecord | RegisterControllerRecord | UnregisterControllerRecord
)


class ClusterDelta:
    """Copy-on-write changes to a :class:`ClusterImage`."""

    def __init__(self, image: ClusterImage) -> None:
        self._brokers = dict(image.brokers)
        self._controllers = dict(image.controllers)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self._brokers.get(broker_id)

    def replay(self, record: ClusterRecord) -> None:
        if isinstance(record, RegisterBrokerRecord):
            self._brokers[record.broker_id] = BrokerRegistration.from_record(record)
        elif isinstance(record, UnregisterBrokerRecord):
            self._brokers.pop(record.broker_id, None)
        elif isinstance(record, FenceBrokerRecord | UnfenceBrokerRecord):
            fenced = isinstance(record, FenceBrokerRecord)
            self._change(record.id, record.epoch, fenced=fenced)
        elif isinstance(record, BrokerRegistrationChangeRecord):
            self._change(
                record.broker_id, record.broker_epoch,
                fenced={FENCE: True, UNFENCE: False}.get(record.fenced),
                in_controlled_shutdown=(
                    True if record.in_controlled_shutdown == IN_CONTROLLED_SHUTDOWN else None
                ),
                log_dirs=record.log_dirs or None,
                cordoned_log_dirs=record.cordoned_log_dirs,
            )
        elif isinstance(record, UnregisterControllerRecord):
            self._controllers.pop(record.controller_id, None)
        else:
            self._controllers[record.controller_id] = ControllerRegistration.from_record(record)

    def _change(
        self, broker_id: int, epoch: int, *, fenced: bool | None = None,
        in_controlled_shutdown: bool | None = None, log_dirs: tuple[uuid.UUID, ...] | None = None,
        cordoned_log_dirs: tuple[uuid.UUID, ...] | None = None,
    ) -> None:
        current = self._brokers.get(broker_id)
        if current is None or current.epoch != epoch:
            raise MetadataImageError(
                f"registration change for broker {broker_id} epoch {epoch}, but the broker "
                + ("is not registered" if current is None else f"has epoch {current.epoch}")
            )
        self._brokers[broker_id] = dataclasses.replace(
            current,
            fenced=current.fenced if fenced is None else fenced,
            in_controlled_shutdown=(
                current.in_controlled_shutdown if in_controlled_shutdown is None
                else in_controlled_shutdown
            ),
            log_dirs=current.log_dirs if log_dirs is None else log_dirs,
            cordoned_log_dirs=(
                current.cordoned_log_dirs if cordoned_log_dirs is None else cordoned_log_dirs
            ),
        )

    def apply(self) -> ClusterImage:
        return ClusterImage(dict(self._brokers), dict(self._controllers))
