"""The dump normaliser on the reference runs' captured logs (no process): two runs of the same
procedure give the same load once run-made ids are named, and a dump's lines parse as the
captured files were cut from them."""

from __future__ import annotations

import json
from pathlib import Path

from metadata_dump import (
    LogRecord,
    Names,
    changes_after_load,
    load_span,
    load_view,
    normalised,
    parse_dump,
    parse_records,
)

CAPTURED = Path(__file__).resolve().parents[2] / "docs/design/migration-reference/captured"
FINALISED = "metadata-D-finalised.records"
FAULT_RELOAD = "fault-load/metadata-B2-migrated.records"

#: Lines as Kafka 3.9.1's DumpLogSegments prints them (a control batch, a NoOp, a record).
DUMP = """\
Dumping /tmp/c3000/data/__cluster_metadata-0/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 \
producerEpoch: -1 partitionLeaderEpoch: 5 isTransactional: false isControl: true \
deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1796075334000 size: 80 magic: 2 \
compresscodec: none crc: 1234 isvalid: true
| offset: 0 CreateTime: 1796075334000 keySize: 4 valueSize: 19 sequence: -1 headerKeys: [] \
controlType: LEADER_CHANGE(2)
baseOffset: 1 lastOffset: 2 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 \
producerEpoch: -1 partitionLeaderEpoch: 5 isTransactional: false isControl: false \
deleteHorizonMs: OptionalLong.empty position: 80 CreateTime: 1796075334001 size: 150 magic: 2 \
compresscodec: none crc: 5678 isvalid: true
| offset: 1 CreateTime: 1796075334001 keySize: -1 valueSize: 4 sequence: -1 headerKeys: [] \
payload: {"type":"NO_OP_RECORD","version":0,"data":{}}
| offset: 2 CreateTime: 1796075334001 keySize: -1 valueSize: 40 sequence: -1 headerKeys: [] \
payload: {"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":1,\
"brokerEpoch":31,"fenced":-1}}
"""


def captured(name: str) -> list[LogRecord]:
    records: list[LogRecord] = parse_records((CAPTURED / name).read_text())
    return records


def test_a_dump_gives_its_data_records_without_noops() -> None:
    (record,) = parse_dump(DUMP)
    assert (record.offset, record.type, record.data["brokerEpoch"]) == (
        2, "BROKER_REGISTRATION_CHANGE_RECORD", 31)
    assert json.loads(normalised(record))["data"] == {
        "brokerId": 1, "brokerEpoch": "<epoch>", "fenced": -1}


def test_the_captured_load_is_the_30_records_of_offsets_73_to_102() -> None:
    load = load_span(captured(FINALISED))
    assert [r.offset for r in load] == list(range(73, 103))
    view = load_view(load)
    assert (len(view.topics), len(view.broker_configs), view.count) == (4, 2, 30)
    # user alice's SCRAM credential, 3 quotas, the producer id block, then 2 ACL resources
    assert [type(item).__name__ for item in view.rest] == ["str"] * 5 + ["frozenset"] * 2


def test_writer_made_values_are_dropped() -> None:
    records = captured(FINALISED)
    texts = [normalised(r) for r in records]
    assert not any('"incarnationId"' in t for t in texts)
    assert all('"brokerEpoch": "<epoch>"' in t or '"brokerEpoch": -1' in t
               for t in texts if '"brokerEpoch"' in t)
    acl = next(r for r in records if r.type == "ACCESS_CONTROL_ENTRY_RECORD")
    assert "id" in acl.data and '"id"' not in normalised(acl)


def test_two_runs_of_the_procedure_load_the_same() -> None:
    """The reference run and the fault run (another cluster, other ids and ports; its load
    redone after a failover with min.batch.size=1) made the same load, once topic and
    directory ids are named, SCRAM secrets masked and partition placement left aside (the
    assignments start at a random broker, the broker rolls moved leaders and ISRs)."""
    first, second = captured(FINALISED), captured(FAULT_RELOAD)
    views = [load_view(load_span(records), names=Names.of(records), partition_states=False,
                       assignments=False)
             for records in (first, second)]
    assert views[0] == views[1]
    # without names, the runs' topic ids differ
    assert load_view(load_span(first)) != load_view(load_span(second))


def test_names_show_topics_and_directories() -> None:
    records = captured(FINALISED)
    names = Names.of(records)
    change = next(r for r in records if r.type == "PARTITION_CHANGE_RECORD"
                  and "directories" in r.data)
    data = json.loads(normalised(change, names=names))["data"]
    assert data["topicId"] in {"<topic t-rf3>", "<topic t-compact>", "<topic __consumer_offsets>"}
    assert "<dir of broker 1>" in data["directories"]
    assert "AAAAAAAAAAAAAAAAAAAAAA" in data["directories"]
    broker = next(r for r in records if r.type == "REGISTER_BROKER_RECORD")
    assert {e["port"] for e in json.loads(normalised(broker, names=names))["data"]["endPoints"]
            } == {"<port>"}


def test_changes_after_the_load_are_the_operators_and_the_migrations() -> None:
    """The reference log's changes after its load: run.sh's B3 changes, C's topic config,
    POST_MIGRATION, D's config and topic, in order; the placements left aside."""
    changes = [json.loads(text) for text in changes_after_load(captured(FINALISED))]
    assert [change["type"].removesuffix("_RECORD") for change in changes] == [
        "TOPIC", "CONFIG", "PARTITION", "PARTITION", "CONFIG", "CONFIG",
        "USER_SCRAM_CREDENTIAL", "CLIENT_QUOTA", "ACCESS_CONTROL_ENTRY", "REMOVE_TOPIC",
        "PARTITION", "CONFIG", "ZK_MIGRATION_STATE", "CONFIG", "TOPIC", "PARTITION"]
    assert changes[9]["data"] == {"topicId": "<topic t-plain>"}
    assert changes[12]["data"] == {"zkMigrationState": 3}
    assert not any(key in change["data"] for change in changes
                   for key in ("replicas", "directories", "leader", "isr"))
