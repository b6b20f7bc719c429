"""Client quotas in the image: set, changed and removed by Kafka's ClientQuotaRecords, written
into snapshots after the configs and before the producer ids (as Kafka's MetadataImage.write
does), shown by the metadata shell under /image/clientQuotas as Kafka's shell shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.image import (
    MetadataDelta,
    MetadataImage,
    Provenance,
    load_snapshot,
    write_image_snapshot,
)
from pykraft.java import java_double_text
from pykraft.records.metadata import (
    ClientQuotaRecord,
    ConfigRecord,
    EntityData,
    FeatureLevelRecord,
    ProducerIdsRecord,
)
from pykraft.shell import MetadataShell, image_tree

MV_3_9_IV0 = 21
ALICE = (("user", "alice"),)
ALICE_APP = (("client-id", "app"), ("user", "alice"))


def quota(key: str, value: float, *entity: tuple[str, str | None],
          remove: bool = False) -> ClientQuotaRecord:
    return ClientQuotaRecord(
        entity=tuple(EntityData(entity_type=kind, entity_name=name) for kind, name in entity),
        key=key, value=float(value), remove=remove)


def then(image: MetadataImage, *records: object) -> MetadataImage:
    """``image`` with ``records`` replayed on it."""
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(Provenance(10, 1, 0))


def image_of(*records: object) -> MetadataImage:
    return then(MetadataImage(),
                FeatureLevelRecord(name="metadata.version", feature_level=MV_3_9_IV0),
                *records)


def test_quotas_are_set_changed_and_removed_per_entity() -> None:
    # Kafka keys an entity by its type -> name map: the order of its parts does not matter.
    image = image_of(quota("producer_byte_rate", 1024, ("user", "alice"), ("client-id", "app")),
                     quota("consumer_byte_rate", 2048, ("client-id", "app"), ("user", "alice")),
                     quota("request_percentage", 50, ("user", "alice")))
    assert image.client_quotas.entities == {
        ALICE_APP: {"producer_byte_rate": 1024, "consumer_byte_rate": 2048},
        ALICE: {"request_percentage": 50}}
    changed = then(image, quota("producer_byte_rate", 4096, *ALICE_APP),
                   quota("consumer_byte_rate", 0, *ALICE_APP, remove=True))
    assert changed.client_quotas.entities[ALICE_APP] == {"producer_byte_rate": 4096}
    assert image.client_quotas.entities[ALICE_APP]["producer_byte_rate"] == 1024
    # Removing an entity's last key drops the entity; removing an unknown key is a no-op.
    emptied = then(changed, quota("producer_byte_rate", 0, *ALICE_APP, remove=True),
                   quota("request_percentage", 0, *ALICE, remove=True),
                   quota("producer_byte_rate", 0, ("ip", "10.0.0.1"), remove=True))
    assert emptied == image_of()


def test_quotas_are_written_after_configs_before_producer_ids(tmp_path: Path) -> None:
    config = ConfigRecord(resource_type=4, resource_name="", name="a", value="b")
    producer_ids = ProducerIdsRecord(broker_id=1, broker_epoch=5, next_producer_id=1000)
    default_user = quota("producer_byte_rate", 10, ("user", None))
    image = image_of(producer_ids, quota("b", 2, *ALICE), quota("a", 1, *ALICE),
                     quota("c", 3, ("client-id", "app"), ("user", "alice")), default_user,
                     config)
    written = [r for r, _ in image.records()]
    assert written[-6:-1] == [config, quota("c", 3, *ALICE_APP), default_user,
                              quota("a", 1, *ALICE), quota("b", 2, *ALICE)]
    assert isinstance(written[-1], ProducerIdsRecord)
    assert load_snapshot(write_image_snapshot(tmp_path, image, clock=lambda: 5)) == image


def test_metadata_shell_names_entities_as_kafkas_shell() -> None:
    image = image_of(quota("producer_byte_rate", 1.5e7, *ALICE_APP),
                     quota("consumer_byte_rate", 1024, ("user", "a(b)\\c")),
                     quota("connection_creation_rate", 5, ("ip", "10.0.0.1")))
    shell = MetadataShell(image_tree(image, source="test"))
    assert sorted(shell.execute("ls /image/clientQuotas").lines) == [
        "clientId(app)_user(alice)", "ip(10.0.0.1)", "user(a\\(b\\)\\\\c)"]
    assert shell.execute(
        "cat /image/clientQuotas/clientId(app)_user(alice)/producer_byte_rate").lines == [
        "1.5E7"]
    assert shell.execute(
        "cat /image/clientQuotas/ip(10.0.0.1)/connection_creation_rate").lines == ["5.0"]


@pytest.mark.parametrize(("value", "text"), [
    (1024.0, "1024.0"), (0.5, "0.5"), (0.001, "0.001"), (9999999.0, "9999999.0"),
    (1e7, "1.0E7"), (12345678.0, "1.2345678E7"), (1e-4, "1.0E-4"), (-2.5e20, "-2.5E20"),
    (0.0, "0.0"), (float("inf"), "Infinity")])
def test_java_double_text(value: float, text: str) -> None:
    assert java_double_text(value) == text
