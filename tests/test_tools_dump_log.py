"""``pykraft dump-log`` against Kafka's own files and corrupt input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from pykraft.cli.main import app

runner = CliRunner()


def test_kafka_bootstrap_checkpoint_text(kafka37_dir: Path) -> None:
    path = kafka37_dir / "bootstrap.checkpoint"
    result = runner.invoke(
        app, ["dump-log", "--files", str(path), "--cluster-metadata-decoder"]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == "KRaft bootstrap snapshot"
    assert lines[2].startswith(
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: true "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1769791430952 size: 83 "
        "magic: 2 compresscodec: none crc: 1607355885 isvalid: true"
    )
    assert lines[3].endswith(
        'headerKeys: [] SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}'
    )
    assert lines[5].endswith(
        'payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version",'
        '"featureLevel":19}}'
    )
    assert lines[7].endswith('SnapshotFooter {"version":0}')
    assert len(lines) == 8


def test_json_output(kafka37_dir: Path) -> None:
    path = kafka37_dir / "bootstrap.checkpoint"
    result = runner.invoke(
        app, ["dump-log", "--files", str(path), "--cluster-metadata-decoder", "--json"]
    )
    assert result.exit_code == 0
    (doc,) = json.loads(result.output)["files"]
    assert [b["count"] for b in doc["batches"]] == [1, 1, 1]
    assert all(b["isvalid"] for b in doc["batches"])
    assert doc["batches"][1]["records"][0]["payload"]["data"]["featureLevel"] == 19


def test_corrupt_file_prints_prefix_and_fails(kafka37_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    shutil.copy(kafka37_dir / "bootstrap.checkpoint", path)
    data = bytearray(path.read_bytes())
    data[83 + 70] ^= 0xFF  # inside the second batch's records
    path.write_bytes(bytes(data[:-10]))  # and a torn tail
    result = runner.invoke(app, ["dump-log", "--files", str(path)])
    assert result.exit_code == 1
    assert "Log starting offset: 0" in result.output
    assert "isvalid: false" in result.output
    assert "Error: corrupt data at position 174" in result.output


def test_unknown_and_missing_files(tmp_path: Path, kafka37_dir: Path) -> None:
    result = runner.invoke(app, ["dump-log", "--files", str(kafka37_dir / "meta.properties")])
    assert result.exit_code == 1 and "Ignoring unknown file" in result.output
    result = runner.invoke(app, ["dump-log", "--files", str(tmp_path / "x.log")])
    assert result.exit_code == 1 and "does not exist" in result.output
