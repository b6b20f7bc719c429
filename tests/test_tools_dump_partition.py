"""``pykraft dump-log`` on a user partition's files, against kafka-python's reading of them."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.log.producer_snapshot import encode_snapshot
from pykraft.log.producer_state import BatchMetadata, ProducerStateEntry
from pykraft.records.batch import iter_batches
from pykraft.storage.offset_index import OffsetIndex
from pykraft.storage.txn_index import AbortedTxn, TransactionIndex
from user_segments import EPOCH, LOG_APPEND_TIME_MS, kafka_python_batch, kafka_python_rows
from user_segments import write_partition as write_user_partition

runner = CliRunner()
_RECORD = re.compile(r"^\| offset: (\d+) (CreateTime|LogAppendTime): (-?\d+) keySize: (-?\d+) "
                     r"valueSize: (-?\d+) sequence: (-?\d+) headerKeys: \[([^\]]*)\]"
                     r"(?: key: (.*?))?(?: payload: (.*))?$")


@pytest.fixture(scope="module")
def partition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("logs") / "orders-0"
    write_user_partition(directory)
    return directory


def _dump(*args: str) -> tuple[int, list[str], list[str]]:
    result = runner.invoke(app, ["dump-log", *args])
    return result.exit_code, result.stdout.splitlines(), result.stderr.splitlines()


def _segments(partition: Path) -> list[Path]:
    return sorted(partition.glob("*.log"))


def test_print_data_log_shows_what_kafka_python_reads(partition: Path) -> None:
    """Every codec decoded: the record lines carry the offsets, timestamps, keys, values and
    header keys kafka-python reads from the same bytes."""
    for segment, rows in kafka_python_rows(partition):
        code, out, _ = _dump("--files", str(segment), "--print-data-log")
        assert code == 0, out
        assert out[:2] == [f"Dumping {segment}", f"Log starting offset: {int(segment.stem)}"]
        dumped = [m.groups() for line in out if (m := _RECORD.match(line))
                  and "endTxnMarker" not in line]
        expected = [(str(r.offset), "LogAppendTime" if r.timestamp_type else "CreateTime",
                     str(r.timestamp), str(-1 if r.key is None else len(r.key)),
                     str(-1 if r.value is None else len(r.value)),
                     ",".join(k for k, _ in r.headers),
                     None if r.key is None else r.key.decode(),
                     None if r.value is None else r.value.decode()) for r in rows]
        assert [(o, t, ts, ks, vs, h, k, p) for o, t, ts, ks, vs, _, h, k, p in dumped] \
            == expected
    code, out, _ = _dump("--files", ",".join(map(str, _segments(partition))))
    codecs = re.findall(r"compresscodec: (\w+)", "\n".join(out))
    assert {"none", "gzip", "snappy", "lz4", "zstd"} <= set(codecs)


def test_shallow_by_default_and_deep_iteration_without_contents(partition: Path) -> None:
    segment = str(_segments(partition)[0])
    code, shallow, _ = _dump("--files", segment)
    assert code == 0
    assert shallow[2].startswith("baseOffset: 0 lastOffset: 2 count: 3 ")
    assert not any(line.startswith("|") for line in shallow)
    _, deep, _ = _dump("--files", segment, "--deep-iteration")
    records = [line for line in deep if line.startswith("|")]
    assert records and not any(" key: " in r or " payload: " in r for r in records)
    assert [line for line in deep if not line.startswith("|")] == shallow


def test_batch_kinds_print_as_kafka_prints_them(partition: Path) -> None:
    files = ",".join(map(str, _segments(partition)))
    code, out, _ = _dump("--files", files, "--deep-iteration")
    assert code == 0
    text = "\n".join(out)
    # an idempotent batch whose sequences wrap past int32 max, as Kafka's incrementSequence
    assert "baseSequence: 2147483647 lastSequence: 0 producerId: 42 producerEpoch: 0 " \
        f"partitionLeaderEpoch: {EPOCH} " in text
    assert re.search(r"\| offset: \d+ CreateTime: 2000 .* sequence: 2147483647 ", text)
    assert re.search(r"\| offset: \d+ CreateTime: 2001 .* sequence: 0 ", text)
    # LogAppendTime: the batch's and every record's timestamp is the broker's
    assert re.search(rf"position: \d+ LogAppendTime: {LOG_APPEND_TIME_MS} size: \d+ magic: 2 "
                     r"compresscodec: gzip", text)
    assert len(re.findall(rf"\| offset: \d+ LogAppendTime: {LOG_APPEND_TIME_MS} ", text)) == 2
    assert re.search(r"isTransactional: true isControl: true .*\n\| offset: \d+ CreateTime: "
                     r"5000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: \[\] "
                     r"endTxnMarker: COMMIT coordinatorEpoch: 7$", text, re.MULTILINE)


def test_max_bytes_reads_whole_batches_only(partition: Path) -> None:
    segment = _segments(partition)[0]
    sizes = [b.header.size for b in iter_batches(segment.read_bytes())]
    code, out, _ = _dump("--files", str(segment), "--max-bytes", str(sizes[0] + sizes[1] - 1))
    assert code == 0
    assert [line.split(" lastOffset")[0] for line in out if line.startswith("baseOffset")] \
        == ["baseOffset: 0"]
    assert not any("invalid bytes" in line for line in out)


def test_partial_last_batch_and_damage(partition: Path, tmp_path: Path) -> None:
    """Kafka's file iterator: a partial batch ends the listing and is counted (exit 0); a
    CRC mismatch is shown per batch and the following batches are still listed (exit 1)."""
    source = _segments(partition)[0]
    data = source.read_bytes()
    positions = [b.position for b in iter_batches(data)]
    torn = tmp_path / "orders-0" / source.name
    torn.parent.mkdir()
    torn.write_bytes(data[:-7])
    code, out, _ = _dump("--files", str(torn))
    assert code == 0
    assert out[-1] == f"Found {len(data) - 7 - positions[-1]} invalid bytes at the end of " \
        f"{torn.name}"
    damaged = bytearray(data)
    damaged[positions[1] + 70] ^= 0xFF
    torn.write_bytes(bytes(damaged))
    code, out, _ = _dump("--files", str(torn), "--print-data-log")
    assert code == 1
    batches = [line for line in out if line.startswith("baseOffset")]
    assert len(batches) == len(positions)
    assert "isvalid: false" in batches[1] and "isvalid: true" in batches[2]


def test_compaction_gaps_are_reported_on_stderr(tmp_path: Path) -> None:
    segment = tmp_path / "compacted-3" / "00000000000000000000.log"
    segment.parent.mkdir()
    segment.write_bytes(kafka_python_batch(0, [(b"a", b"1")])
                        + kafka_python_batch(5, [(b"b", b"2")])
                        + kafka_python_batch(9, [(b"c", b"3")]))
    code, out, err = _dump("--files", str(segment), "--deep-iteration")
    assert code == 0
    assert len([line for line in out if line.startswith("|")]) == 3
    assert err == [f"Non-consecutive offsets in {segment.absolute()}", "  5 is followed by 9",
                   "  0 is followed by 5"]


def _index_entries(partition: Path, segment: Path) -> list[tuple[int, int]]:
    index_path = segment.with_suffix(".index")
    index = OffsetIndex(index_path, int(segment.stem), max(index_path.stat().st_size, 8))
    try:
        return [(e.offset, e.position) for e in map(index.entry, range(index.entries))]
    finally:
        index.close_handler()


def test_offset_index_entries_point_at_batches_ending_there(partition: Path) -> None:
    segment = _segments(partition)[0]
    index = segment.with_suffix(".index")
    entries = _index_entries(partition, segment)
    assert entries
    code, out, err = _dump("--files", str(index))
    assert (code, err) == (0, [])
    assert out == [f"Dumping {index}"] + [f"offset: {o} position: {p}" for o, p in entries]
    last_offsets = {b.position: b.last_offset for b in iter_batches(segment.read_bytes())}
    assert all(last_offsets[p] == o for o, p in entries)
    assert _dump("--files", str(index), "--verify-index-only")[:2] == (0, [f"Dumping {index}"])
    assert _dump("--files", str(index), "--index-sanity-check")[1] == [
        f"Dumping {index}", f"{index} passed sanity check."]


def test_offset_index_mismatches_and_corruption(partition: Path, tmp_path: Path) -> None:
    copy = tmp_path / "orders-0"
    copy.mkdir()
    segment = _segments(partition)[0]
    for suffix in (".log", ".index"):
        (copy / segment.with_suffix(suffix).name).write_bytes(
            segment.with_suffix(suffix).read_bytes())
    index = copy / segment.with_suffix(".index").name
    data = bytearray(index.read_bytes())
    first_offset, second_offset = (o for o, _ in _index_entries(partition, segment)[:2])
    struct.pack_into(">i", data, 0, first_offset - 1)  # relative offset (base 0)
    struct.pack_into(">i", data, 8, second_offset + 1)
    # a preallocated, untrimmed tail of zero slots ends the listing as in Kafka
    index.write_bytes(bytes(data) + bytes(8 * 4))
    code, out, err = _dump("--files", str(index), "--verify-index-only")
    assert code == 0 and out == [f"Dumping {index}"]  # Kafka reports, and exits 0
    assert err == [f"Mismatches in :{index.absolute()}",
                   f"  Index offset: {second_offset + 1}, log offset: {second_offset}",
                   f"  Index offset: {first_offset - 1}, log offset: {first_offset}"]
    code, out, _ = _dump("--files", str(index))
    assert len(out) == 1 + len(_index_entries(partition, segment))
    index.write_bytes(bytes(data) + b"\x00\x01")
    code, out, err = _dump("--files", str(index), "--index-sanity-check")
    assert code == 1
    assert err == [f"Index file {index} is corrupt, found {len(data) + 2} bytes which is "
                   "neither positive nor a multiple of 8"]
    index.write_bytes(b"")
    assert _dump("--files", str(index))[1] == [f"Dumping {index}", f"{index} is empty."]


def test_time_index_entries_and_reports(partition: Path, tmp_path: Path) -> None:
    segment = _segments(partition)[0]
    time_index = segment.with_suffix(".timeindex")
    code, out, err = _dump("--files", str(time_index))
    assert (code, err) == (0, [])
    entries = [tuple(map(int, re.findall(r"-?\d+", line))) for line in out[1:]]
    by_last_offset = {b.last_offset: b.header.max_timestamp
                      for b in iter_batches(segment.read_bytes())}
    assert entries and all(by_last_offset[o] == t for t, o in entries)
    assert out[1:] == [f"timestamp: {t} offset: {o}" for t, o in entries]
    assert _dump("--files", str(time_index), "--index-sanity-check")[1][1] == \
        f"{time_index} passed sanity check."

    copy = tmp_path / "orders-0"
    copy.mkdir()
    for suffix in (".log", ".index"):
        (copy / segment.with_suffix(suffix).name).write_bytes(
            segment.with_suffix(suffix).read_bytes())
    damaged = copy / time_index.name
    (t0, o0), (t1, o1) = entries[:2]
    damaged.write_bytes(struct.pack(">qi", t0 + 1, o0) + struct.pack(">qi", t0 + 1, o1)
                        + struct.pack(">qi", t1, o1 - 1))
    code, out, err = _dump("--files", str(damaged), "--verify-index-only")
    assert code == 0 and out == [f"Dumping {damaged}"]  # Kafka reports, and exits 0
    assert err == [f"Found timestamp mismatch in :{damaged.absolute()}",
                   f"  Index timestamp: {t0 + 1}, log timestamp: {t0}",
                   f"  Index timestamp: {t0 + 1}, log timestamp: {t1}",
                   f"Found out of order timestamp in :{damaged.absolute()}",
                   f"  Index timestamp: {t0 + 1}, Previously indexed timestamp: {t0 + 1}",
                   f"The following indexed offsets are not found in :{damaged.absolute()}",
                   f"Indexed offset: {o1 - 1}, found log offset: {o1}"]


def test_producer_snapshot(tmp_path: Path) -> None:
    idle = ProducerStateEntry(7, 2, 5, 1_000, None)
    active = ProducerStateEntry(42, 0, -1, 2_000, 30)
    active.batches.append(BatchMetadata(1, 31, 3, 2_000))
    snapshot = tmp_path / "00000000000000000040.snapshot"
    snapshot.write_bytes(encode_snapshot([idle, active]))
    code, out, _ = _dump("--files", str(snapshot))
    assert code == 0
    assert out == [
        f"Dumping {snapshot}",
        "producerId: 7 producerEpoch: 2 coordinatorEpoch: 5 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: 1000 ",
        "producerId: 42 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong[30] lastTimestamp: 2000 firstSequence: 2147483646 lastSequence: 1 "
        "lastOffset: 31 offsetDelta: 3 timestamp: 2000",
    ]
    data = bytearray(snapshot.read_bytes())
    data[-1] ^= 1
    snapshot.write_bytes(bytes(data))
    code, out, err = _dump("--files", str(snapshot))
    assert code == 1 and out == [f"Dumping {snapshot}"]
    assert err[0].startswith("Snapshot is corrupt (CRC is no longer valid). Stored crc: ")


def test_txn_index(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.txnindex"
    index = TransactionIndex(path, 100)
    index.append(AbortedTxn(producer_id=9, first_offset=100, last_offset=104,
                            last_stable_offset=103))
    index.append(AbortedTxn(producer_id=3, first_offset=103, last_offset=110,
                            last_stable_offset=111))
    index.close()
    code, out, _ = _dump("--files", str(path))
    assert code == 0
    assert out == [
        f"Dumping {path}",
        "version: 0 producerId: 9 firstOffset: 100 lastOffset: 104 lastStableOffset: 103",
        "version: 0 producerId: 3 firstOffset: 103 lastOffset: 110 lastStableOffset: 111",
    ]


def test_unknown_side_files(tmp_path: Path) -> None:
    """Kafka cannot dump leader-epoch-checkpoint (no suffix) nor other files: ignored."""
    other = tmp_path / "leader-epoch-checkpoint"
    other.write_text("0\n1\n0 0\n")
    code, out, err = _dump("--files", str(other))
    assert code == 1
    assert out == [f"Dumping {other}"] and err == [f"Ignoring unknown file {other}"]
