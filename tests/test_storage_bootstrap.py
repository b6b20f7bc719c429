"""bootstrap.checkpoint: pykraft writes Kafka's bytes for Kafka's content."""

from pathlib import Path

from pykraft.records.metadata import FeatureLevelRecord
from pykraft.storage.bootstrap import read_bootstrap_checkpoint, write_bootstrap_checkpoint


def test_written_bootstrap_checkpoint_is_byte_identical_to_kafkas(
    kafka37_dir: Path, tmp_path: Path
) -> None:
    stamps = iter([1769791430952, 1769791430996, 1769791430997])  # the fixture's batch times
    path = write_bootstrap_checkpoint(
        tmp_path,
        [FeatureLevelRecord(name="metadata.version", feature_level=19)],
        clock=lambda: next(stamps),
    )
    assert path.read_bytes() == (kafka37_dir / "bootstrap.checkpoint").read_bytes()


def test_reads_kafkas_bootstrap_checkpoint(kafka37_dir: Path) -> None:
    (record,) = read_bootstrap_checkpoint(kafka37_dir)
    assert (record.api_key, record.version) == (12, 0)
    assert record.message == FeatureLevelRecord(name="metadata.version", feature_level=19)
