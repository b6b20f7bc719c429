"""Start-up gives a directory formatted before KIP-858 a ``directory.id``, as Kafka does."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pykraft.ids import uuid_from_str
from pykraft.storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    ensure_directory_ids,
    read_meta_properties,
    write_meta_properties,
)

FIXTURE_DATE = datetime(2026, 1, 30, 16, 43, 51, tzinfo=UTC)
KAFKA_ID = uuid_from_str("XHhkr4tkSsD900pOQ8pPfg")


def _uuids(*values: uuid.UUID) -> Iterator[uuid.UUID]:
    yield from values
    raise AssertionError("asked for more UUIDs than expected")


def test_missing_id_is_written_as_kafka_writes_it(kafka37_dir: Path, tmp_path: Path) -> None:
    kafka = (kafka37_dir / META_PROPERTIES).read_bytes()
    old = b"".join(line for line in kafka.splitlines(keepends=True)
                   if not line.startswith(b"directory.id="))
    (tmp_path / META_PROPERTIES).write_bytes(old)  # as an older release formatted it
    ids = iter([KAFKA_ID])
    found = ensure_directory_ids([tmp_path], new_uuid=lambda: next(ids),
                                 clock=lambda: FIXTURE_DATE)
    assert found[tmp_path].directory_id == KAFKA_ID
    assert (tmp_path / META_PROPERTIES).read_bytes() == kafka  # Kafka's order and bytes
    assert not (tmp_path / (META_PROPERTIES + ".tmp")).exists()


def test_existing_ids_are_kept_and_new_ones_avoid_reserved_and_taken(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    taken = uuid.UUID(int=1 << 100)
    for directory, directory_id in zip(dirs, [taken, None, None], strict=True):
        directory.mkdir()
        write_meta_properties(directory / META_PROPERTIES,
                              MetaProperties(1, 3, "cid", directory_id, {"x.y": "z"}))
    before = (dirs[0] / META_PROPERTIES).read_bytes()
    fresh_b, fresh_c = uuid.UUID(int=2 << 100), uuid.UUID(int=3 << 100)
    ids = _uuids(uuid.UUID(int=7), taken, fresh_b, fresh_b, fresh_c)
    found = ensure_directory_ids(dirs, new_uuid=lambda: next(ids))
    assert [found[d].directory_id for d in dirs] == [taken, fresh_b, fresh_c]
    assert (dirs[0] / META_PROPERTIES).read_bytes() == before  # unchanged: not rewritten
    assert read_meta_properties(dirs[1] / META_PROPERTIES) == found[dirs[1]]
    assert found[dirs[1]].extra == {"x.y": "z"}
    assert ensure_directory_ids(dirs) == found  # a restart keeps them
