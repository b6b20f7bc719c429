"""The next producer id the controller will hand out (ProducerIdsRecord)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pykraft.records.metadata import ProducerIdsRecord

NO_PRODUCER_IDS = -1


@dataclass(frozen=True, slots=True)
class ProducerIdsImage:
    next_producer_id: int = NO_PRODUCER_IDS

    def records(self) -> Iterator[tuple[object, int]]:
        """Kafka writes the image's record with broker id and epoch -1."""
        if self.next_producer_id != NO_PRODUCER_IDS:
            yield ProducerIdsRecord(broker_id=-1, broker_epoch=-1,
                                    next_producer_id=self.next_producer_id), 0

    def replay(self, record: ProducerIdsRecord) -> ProducerIdsImage:
        return ProducerIdsImage(record.next_producer_id)
