"""The HTML report and its SVG charts, from plain rows (no Spark)."""

from __future__ import annotations

from typing import Any

from pykraft.spark import report, svg

T0 = 1_767_225_600_000


def sample() -> dict[str, list[dict[str, Any]]]:
    c = {"cluster": "prod<1>"}
    return {
        "summary": [c | {"records": 10, "errors": 1, "log_dirs": 3, "first_ms": T0,
                         "last_ms": T0 + 60_000}],
        "log_replicas": [c | {"log_dir": "/n1", "log_start_offset": 0, "log_end_offset": 12,
                              "snapshot_end_offset": None, "first_ms": T0,
                              "last_ms": T0 + 60_000, "end_offset": 12, "used": True,
                              "offsets_behind": 0, "ms_behind": 0},
                         c | {"log_dir": "/n2", "log_start_offset": 0, "log_end_offset": 9,
                              "snapshot_end_offset": None, "first_ms": T0,
                              "last_ms": T0 - 60_000,
                              "end_offset": 9, "used": False, "offsets_behind": 3,
                              "ms_behind": 120_000}],
        "controller_leaders": [c | {"epoch": 1, "leader": 1, "offset": 0, "timestamp": T0,
                                    "voters": [1, 2, 3]},
                               c | {"epoch": 2, "leader": 2, "offset": 9,
                                    "timestamp": T0 + 30_000, "voters": [1, 2, 3]}],
        "fencing_periods": [c | {"broker_id": 101, "from_offset": 3, "since": T0 + 1000,
                                 "until_offset": None, "until": None, "cause": "fenced"}],
        "partition_changes": [c | {"topic_name": "orders", "topic_id": "x", "partition_id": 0,
                                   "leader_changed": True}] * 2,
        "topic_timeline": [c | {"offset": 4, "timestamp": T0 + 2000, "topics": 1,
                                "partitions": 3}],
        "topics": [c | {"topic_name": "orders", "topic_id": "x", "created_offset": 4,
                        "created_at": T0 + 2000, "removed_at": None}],
        "voter_changes": [c | {"offset": 2, "leader_epoch": 1, "voter_ids": [1, 2, 3],
                               "timestamp": T0, "voter_directory_ids": None, "changed": True,
                               "source": "KRaftVoters"}],
        "record_types": [c | {"record_type": "NO_OP_RECORD", "count": 7}],
    }


def test_report_has_every_section_and_escapes_names() -> None:
    html = report.render(sample())
    assert html.count("<svg") == 5
    assert "prod&lt;1&gt;" in html and "prod<1>" not in html
    assert "orders-0" in html and ">2</text>" in html  # two leader changes
    assert "epoch 2" in html and "broker 101" in html
    assert "01-01 00:00:30" in html  # epoch 2 start in the table, UTC


def test_a_replica_behind_is_named_and_warned_about() -> None:
    used, behind = report.replica_notes(sample()["log_replicas"])
    assert used == ["prod<1>: history read from /n1 (metadata log end offset 12)"]
    assert behind == ["prod<1>: /n2 is behind: metadata log end offset 9, 3 offsets, "
                      "2.0 min short of the furthest replica"]
    html = report.render(sample())
    assert '<p class="warn">Warning: prod&lt;1&gt;: /n2 is behind' in html


def test_lanes_place_spans_on_the_time_axis() -> None:
    chart = svg.lanes("t", [("a", [(T0, T0 + 500, "x")])], T0, T0 + 1000)
    assert f'x="{svg.LABEL_W:.1f}"' in chart
    width = (svg.WIDTH - svg.LABEL_W - 20) / 2
    assert f'width="{width:.1f}"' in chart


def test_long_labels_widen_the_label_column() -> None:
    label = "REGISTER_CONTROLLER_RECORD"
    chart = svg.bar_chart("t", [(label, 4), ("NO_OP_RECORD", 1)])
    column = svg.CHAR_W * len(label) + 12
    assert column > svg.LABEL_W
    assert f'<rect x="{column:.1f}"' in chart  # bars start right of the whole label
    assert f'width="{round(column + svg.WIDTH - svg.LABEL_W)}"' in chart


def test_last_time_label_ends_at_its_tick() -> None:
    chart = svg.lanes("t", [("a", [(T0, T0 + 500, "x")])], T0, T0 + 1000)
    assert chart.count('text-anchor="end"') == 2  # the lane label and the last time label


def test_a_caption_longer_than_its_span_is_only_a_tooltip() -> None:
    caption = "registration-change"
    short = svg.lanes("t", [("a", [(T0, T0 + 50, caption)])], T0, T0 + 1000)
    long = svg.lanes("t", [("a", [(T0, T0 + 900, caption)])], T0, T0 + 1000)
    assert short.count(caption) == 1 and f"<title>{caption}</title>" in short
    assert long.count(caption) == 2
